"""Speed of the agreement report: 2,000 cases x 7 raters (5 judges, 2 humans, all
included in every figure; the humans' consensus is also the reference) with some
invalid and missing labels. The full report (every figure, 1,000 bootstrap
resamples, report.json/md/html written) against the same report with point
estimates only (no resampling).

Goal: the full report in under 2 seconds.
Last line: {"report_seconds": s, "ratio_vs_point_estimates": r}
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from tiap.agreement import (
    CaseMeta,
    LabelEntry,
    LabelTable,
    RaterInfo,
    compute_report,
    write_report,
)
from tiap.rubric import load_rubric


def synthetic_table(n_cases: int, seed: int) -> LabelTable:
    """Judges and humans who see a latent true label and err at their own rate;
    judges return an invalid label 3% of the time, humans skip 10% of cases."""
    rubric = load_rubric("contested-credit")
    rng = np.random.default_rng(seed)
    names = rubric.label_names
    truth = rng.choice(len(names), size=n_cases, p=[0.3, 0.4, 0.3])
    cases = [
        CaseMeta(
            case_id=f"case-{i:05d}",
            dataset=("locomo", "longmemeval")[i % 2],
            run=f"run-{i % 8}",
            category=str(1 + i % 4),
        )
        for i in range(n_cases)
    ]
    raters = [
        RaterInfo(
            name=f"judge-{j}",
            kind="judge",
            panels=["bench"],
            rubric_ids=[rubric.id],
            rubric_hashes=[rubric.content_hash],
        )
        for j in range(5)
    ] + [RaterInfo(name=f"human-{h}", kind="human") for h in range(2)]
    labels = []
    for r, rater in enumerate(raters):
        err = 0.08 + 0.03 * r
        wrong = rng.random(n_cases) < err
        noise = rng.integers(0, len(names), size=n_cases)
        given = np.where(wrong, noise, truth)
        gap = rng.random(n_cases)
        for i in range(n_cases):
            if rater.kind == "human" and gap[i] < 0.10:
                continue
            label = None if rater.kind == "judge" and gap[i] < 0.03 else names[given[i]]
            labels.append(LabelEntry(case_id=cases[i].case_id, rater=rater.name, label=label))
    return LabelTable(cases=cases, raters=raters, labels=labels)


def timed(table: LabelTable, resamples: int, out: Path, repeats: int) -> float:
    rubric = load_rubric("contested-credit")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        report = compute_report(
            table, rubric, raters=table.rater_names, resamples=resamples, seed=1337
        )
        write_report(report, out)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    table = synthetic_table(args.cases, seed=7)
    with tempfile.TemporaryDirectory() as tmp:
        timed(table, args.resamples, Path(tmp), 1)  # warm up imports and caches
        full = timed(table, args.resamples, Path(tmp) / "full", args.repeats)
        point = timed(table, 0, Path(tmp) / "point", args.repeats)
    print(f"cases: {args.cases}, raters: {len(table.raters)}, labels: {len(table.labels)}")
    print(f"full report ({args.resamples} resamples): {full:.3f} s (median of {args.repeats})")
    print(f"point estimates only: {point:.3f} s")
    print(
        json.dumps(
            {"report_seconds": round(full, 4), "ratio_vs_point_estimates": round(full / point, 2)}
        )
    )


if __name__ == "__main__":
    main()
