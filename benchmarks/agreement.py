"""Speed and memory of the agreement report: 2,000 cases x 7 raters (5 judges, 2
humans, all included in every figure; the humans' consensus is also the reference)
with some invalid and missing labels, the cases in four sampling strata. The full
report (every figure, 1,000 bootstrap resamples, report.json/md/html written) against
the same report with point estimates only (no resampling).

Memory: the peak resident set size (``ru_maxrss``, Linux) of a fresh process running
``tiap agreement report --labels FILE --resamples R`` on the same table written as a
labels file, at the most resamples the option allows (``tiap.limits.MAX_RESAMPLES``,
1,000,000; ``--peak-resamples`` to change; 0 skips it), and its seconds.

``calibrated_share``: the share of the full report's seconds spent on the calibrated
prevalence. ``new_parts_share``: the seconds of the figures beyond kappa (Gwet's AC1,
base rates, the constant-predictor baselines, error correlations, the majority against
its best judge, the sample-size plan: building them, resampling them and drawing them)
as a share of the full report's; their resampling is timed on the report's own draws
and stats.

Goals: the full report in under 2 seconds; the peak under 500 MB at any resamples.
Last line: {"report_seconds": s, "ratio_vs_point_estimates": r, "calibrated_share": c,
"new_parts_share": f, "peak_rss_mb": m, "peak_rss_resamples": R, "peak_rss_seconds": s}
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from peak_rss import run_measured
from tiap.agreement import (
    CaseMeta,
    LabelEntry,
    LabelTable,
    RaterInfo,
    baseline_tables,
    beyond,
    beyond_tables,
    case_plan,
    compute,
    compute_report,
    plan_tables,
    reference_baselines,
    write_report,
)
from tiap.agreement import compute as compute_module
from tiap.agreement.estimates import evaluate
from tiap.limits import MAX_RESAMPLES
from tiap.rubric import load_rubric

#: the sampling strata of the cases (rank buckets), for the calibrated prevalence
STRATA = ("1-5", "6-20", "21-60", "61+")


class _Timer:
    """Wraps a function and sums the seconds spent in it."""

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


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
            stratum=STRATA[i % len(STRATA)],
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


def timed(table: LabelTable, resamples: int, out: Path, repeats: int) -> tuple[float, float]:
    """The median seconds of the full report, and the median share of them spent on the
    calibrated prevalence (:mod:`tiap.agreement.calibrated`)."""
    rubric = load_rubric("contested-credit")
    times, shares = [], []
    timer = _Timer(compute.calibrated_prevalence)
    compute.calibrated_prevalence = timer  # type: ignore[assignment]
    try:
        for _ in range(repeats):
            timer.seconds = 0.0
            start = time.perf_counter()
            report = compute_report(
                table, rubric, raters=table.rater_names, resamples=resamples, seed=1337
            )
            write_report(report, out)
            times.append(time.perf_counter() - start)
            shares.append(timer.seconds / times[-1])
    finally:
        compute.calibrated_prevalence = timer.fn  # type: ignore[assignment]
    return statistics.median(times), statistics.median(shares)


#: the stats of the figures beyond kappa, by key prefix (:mod:`tiap.agreement.beyond`,
#: :mod:`tiap.agreement.reference_baselines`)
NEW_STATS = ("gwet.", "ref.ac1.", "ord.", "base.", "err.")
#: the functions that build and draw them: (module, name)
NEW_PARTS = (
    (beyond, "stats"),
    (beyond, "gwet_ac1"),
    (beyond, "ordinal_figures"),
    (beyond, "scale_base_rates"),
    (reference_baselines, "stats"),
    (reference_baselines, "judge_errors"),
    (reference_baselines, "baseline"),
    (case_plan, "plan_of"),
    (beyond_tables, "coefficient_figure"),
    (beyond_tables, "ordinal_blocks"),
    (baseline_tables, "blocks"),
    (plan_tables, "blocks"),
)


def new_parts_share(table: LabelTable, resamples: int, out: Path) -> float:
    """The share of the full report's seconds spent on the figures beyond kappa."""
    spent = [0.0]
    captured: dict[str, object] = {}
    saved = [(m, name, getattr(m, name)) for m, name in NEW_PARTS]
    saved_evaluate = compute_module.evaluate

    def timed_part(fn):  # type: ignore[no-untyped-def]
        def run(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return run

    def capture(stats, draws, *, progress=None):  # type: ignore[no-untyped-def]
        captured.update(stats=stats, draws=draws)
        return saved_evaluate(stats, draws, progress=progress)

    try:
        for m, name, fn in saved:
            setattr(m, name, timed_part(fn))
        compute_module.evaluate = capture  # type: ignore[assignment]
        full, _ = timed(table, resamples, out, 1)
    finally:
        for m, name, fn in saved:
            setattr(m, name, fn)
        compute_module.evaluate = saved_evaluate
    stats: dict = captured["stats"]  # type: ignore[assignment]
    new = {k: v for k, v in stats.items() if k.startswith(NEW_STATS)}
    start = time.perf_counter()
    evaluate(new, captured["draws"])  # type: ignore[arg-type]
    return (spent[0] + time.perf_counter() - start) / full


def write_labels(table: LabelTable, path: Path) -> None:
    """The table as a labels file (``agreement report --labels``)."""
    raters = {r.name: r for r in table.raters}
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["case_id", "rater", "rater_kind", "label", "rubric_id", "rubric_hash"])
        for entry in table.labels:
            r = raters[entry.rater]
            rubric = (r.rubric_ids[0], r.rubric_hashes[0]) if r.rubric_ids else ("", "")
            out.writerow([entry.case_id, r.name, r.kind, entry.label or "", *rubric])


def peak_memory(table: LabelTable, resamples: int, tmp: Path) -> dict[str, float]:
    """Peak RSS (MB) and seconds of ``tiap agreement report`` in a fresh process."""
    labels = tmp / "labels.csv"
    write_labels(table, labels)
    args = ["agreement", "report", "--labels", str(labels), "--out", str(tmp / "peak")]
    args += ["--rubric", "contested-credit", "--raters", ",".join(table.rater_names)]
    args += ["--resamples", str(resamples), "--seed", "1337"]
    return run_measured(args, ok=(0, 3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peak-resamples", type=int, default=MAX_RESAMPLES)
    args = parser.parse_args()
    table = synthetic_table(args.cases, seed=7)
    peak = None
    with tempfile.TemporaryDirectory() as tmp:
        timed(table, args.resamples, Path(tmp), 1)  # warm up imports and caches
        full, calibrated = timed(table, args.resamples, Path(tmp) / "full", args.repeats)
        point, _ = timed(table, 0, Path(tmp) / "point", args.repeats)
        share = statistics.median(
            new_parts_share(table, args.resamples, Path(tmp) / "parts") for _ in range(args.repeats)
        )
        if args.peak_resamples:
            peak = peak_memory(table, args.peak_resamples, Path(tmp))
    print(f"cases: {args.cases}, raters: {len(table.raters)}, labels: {len(table.labels)}")
    print(f"full report ({args.resamples} resamples): {full:.3f} s (median of {args.repeats})")
    print(f"point estimates only: {point:.3f} s")
    print(f"calibrated prevalence: {calibrated:.1%} of the full report")
    print(f"figures beyond kappa: {100 * share:.1f}% of the full report")
    figures: dict[str, float | int | None] = {
        "report_seconds": round(full, 4),
        "ratio_vs_point_estimates": round(full / point, 2),
        "calibrated_share": round(calibrated, 3),
        "new_parts_share": round(share, 3),
        "peak_rss_mb": None,
        "peak_rss_resamples": args.peak_resamples,
        "peak_rss_seconds": None,
    }
    if peak is not None:
        print(
            f"agreement report, {args.peak_resamples} resamples, fresh process: peak RSS "
            f"{peak['peak_rss_mb']:.1f} MB, {peak['seconds']:.1f} s"
        )
        figures["peak_rss_mb"] = round(peak["peak_rss_mb"], 1)
        figures["peak_rss_seconds"] = round(peak["seconds"], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
