"""Suite-level scores over several bundles (LMEB's aggregation): every task's means per run
and target, Mean(Dataset) and Mean(Type), with each task's target-sensitivity headline.

A *task* is one bundle; its dataset and memory type come from ``bundle.toml``
(``dataset``, ``memory_type``; ``tiap traces build lmeb --tree-root`` sets both from
the task's place in LMEB's tree, e.g. ``Dialogue/LoCoMo/single_hop``). A bundle
without a memory type counts under ``(none)``. On the suite's measure (default
``ndcg@10``, as LMEB reports), per run and target:

- a task's score is the run's mean over the task's queries whose target is non-empty
  (the report's ``runs[run].targets[t].means``);
- a dataset's score is the mean over its tasks' scores (datasets are keyed by memory
  type and name);
- **Mean(Dataset)** is the mean over datasets of their scores;
- a memory type's score is the mean over its datasets' scores, and **Mean(Type)** the
  mean over memory types of those.

A mean is defined only when every part it averages is (a run missing from a task, or a
target empty for all of a task's queries, leaves that task's score ``null`` and with it
every mean above it), so the suite never averages over a different set of tasks for one
run than for another. From a notebook::

    suite = rescore_suite(["tasks/"], "out/")     # one subdirectory per bundle, suite.*
    suite.report.mean_type["bm25-raw"]["source"]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.errors import TiapError
from tiap.io import write_json
from tiap.rescore.common import rnd
from tiap.rescore.report_models import Float, RescoreReport
from tiap.rescore.suite_models import Means, SuiteGroup, SuiteReport, SuiteTask, TaskHeadline
from tiap.rescore.suite_render import html, markdown
from tiap.traces.bundle import BUILD_HINT

#: The measure a suite reports when none is given (LMEB's).
SUITE_MEASURE = "ndcg@10"
NO_TYPE = "(none)"
SUITE_JSON = "suite.json"
SUITE_MD = "suite.md"
SUITE_HTML = "suite.html"
BUNDLE_FILE = "bundle.toml"

METHOD = {
    "task": "a run's mean over the task's queries whose target is non-empty",
    "dataset": "mean over the dataset's tasks (datasets keyed by memory type and name)",
    "mean_dataset": "Mean(Dataset): mean over datasets of their means",
    "memory_type": "mean over the memory type's datasets of their means",
    "mean_type": "Mean(Type): mean over memory types of their means",
    "ordering": (
        "per task, the runs whose target ordering on the suite's measure is not monotone "
        "(the paper's Table 7: scores follow Raw, Canonical, Source) and not containment "
        "consistent (tiap: Source >= max(Raw, Canonical))"
    ),
    "undefined": (
        "a mean is null when any part it averages is (a run missing from a task, or a "
        "target empty for every query of a task)"
    ),
}


@dataclass(frozen=True)
class SuiteEntry:
    """One bundle of a suite: its directory and its name in the suite (its output folder)."""

    task: str
    bundle: Path


def _is_bundle(path: Path) -> bool:
    """A directory with a ``bundle.toml`` of any kind: one that is not a readable file
    (a directory, a broken link) is the bundle reader's error to name."""
    return os.path.lexists(path / BUNDLE_FILE)


def find_bundles(paths: Sequence[str | Path]) -> list[SuiteEntry]:
    """The bundles named by ``paths``: a bundle directory is one task (named after its
    folder); any other directory holds tasks at any depth (each named by its path below
    that directory, e.g. ``Dialogue/LoCoMo/single_hop``). Names must be unique."""
    entries: list[SuiteEntry] = []
    for raw in paths:
        path = Path(raw)
        if _is_bundle(path):
            entries.append(SuiteEntry(path.resolve().name or str(path), path))
            continue
        if not path.is_dir():
            raise TiapError(f"{path}: bundle directory not found")
        found = sorted(p.parent for p in path.rglob(BUNDLE_FILE) if p.is_file())
        if not found:
            raise TiapError(
                f"{path}: no bundle found (no {BUNDLE_FILE} in it or below it); {BUILD_HINT}"
            )
        entries += [SuiteEntry(d.relative_to(path).as_posix(), d) for d in found]
    seen: dict[str, Path] = {}
    for entry in entries:
        if entry.task in seen:
            raise TiapError(
                f"two bundles would be written to the same folder '{entry.task}': "
                f"{seen[entry.task]} and {entry.bundle}"
            )
        seen[entry.task] = entry.bundle
    return entries


def is_suite(paths: Sequence[str | Path]) -> bool:
    """Several paths, or one directory that is not itself a bundle."""
    return len(paths) != 1 or (Path(paths[0]).is_dir() and not _is_bundle(Path(paths[0])))


def _mean(values: Iterable[Float]) -> Float:
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None
    return rnd(sum(v for v in vals if v is not None) / len(vals))


def _mean_of(groups: Sequence[Means], runs: list[str], targets: list[str]) -> Means:
    return {r: {t: _mean(g.get(r, {}).get(t) for g in groups) for t in targets} for r in runs}


def _ordering(report: RescoreReport, measure: str) -> dict[str, int]:
    """How many runs have a target ordering on ``measure``, and how many of them are not
    monotone (the paper's rule) or not containment consistent (tiap's)."""
    orders = [
        by_m[measure]
        for by_m in (report.target_order.runs.values() if report.target_order else [])
        if measure in by_m and by_m[measure].order is not None
    ]
    return {
        "n_ordered_runs": len(orders),
        "n_not_monotone": sum(o.monotone is False for o in orders),
        "n_not_containment_consistent": sum(o.containment_consistent is False for o in orders),
    }


def _task(task: str, memory_type: str | None, report: RescoreReport, measure: str) -> SuiteTask:
    head = report.headline
    return SuiteTask(
        task=task,
        dataset=report.dataset,
        memory_type=memory_type or NO_TYPE,
        bundle_name=report.bundle_name,
        n_queries=report.n_queries,
        means={
            run: {t: s.means.get(measure) for t, s in rr.targets.items()}
            for run, rr in report.runs.items()
        },
        n_evaluated={
            run: {t: s.n_evaluated for t, s in rr.targets.items()}
            for run, rr in report.runs.items()
        },
        headline=TaskHeadline(
            instability=dict(head.instability),
            n_run_pairs=len(report.run_pairs),
            winner_flips=len(head.winner_flips),
            n_design_families=len(head.design),
            design_flips=sum(d.winner_flip for d in head.design),
            subsets=head.subsets,
            **_ordering(report, measure),
        ),
    )


def _winners(means: Means, targets: list[str], tol: float = 1e-9) -> dict[str, list[str]]:
    out = {}
    for t in targets:
        scored = {r: by[t] for r, by in means.items() if by.get(t) is not None}
        best = max((v for v in scored.values() if v is not None), default=None)
        out[t] = (
            []
            if best is None
            else sorted(r for r, v in scored.items() if v is not None and v >= best - tol)
        )
    return out


#: the scales suite.md and suite.html can show scores on (``--scale``)
SCALES: tuple[int, ...] = (1, 100)


def check_scale(scale: int, option: str = "--scale") -> int:
    """``scale`` when it is one of :data:`SCALES`; otherwise a one-line error."""
    if isinstance(scale, bool) or scale not in SCALES:
        raise TiapError(f"{option} must be 1 or 100 (got {scale!r})")
    return scale


def suite_report(
    tasks: Sequence[tuple[str, str | None, RescoreReport]], measure: str, *, scale: int = 1
) -> SuiteReport:
    """Aggregate ``(task, memory_type, report)`` triples on ``measure``; ``scale``: the
    scale suite.md and suite.html show scores on (1, or 100 as LMEB does)."""
    check_scale(scale)
    if not tasks:
        raise TiapError("a suite needs at least one bundle")
    rows = [_task(name, mtype, report, measure) for name, mtype, report in tasks]
    runs = sorted({r for t in rows for r in t.means})
    targets = list(dict.fromkeys(t for _, _, rep in tasks for t in rep.parameters.targets))
    by_dataset: dict[tuple[str, str], list[SuiteTask]] = {}
    for row in rows:
        by_dataset.setdefault((row.memory_type, row.dataset), []).append(row)
    datasets = [
        SuiteGroup(
            name=name,
            memory_type=mtype,
            members=[t.task for t in members],
            means=_mean_of([t.means for t in members], runs, targets),
        )
        for (mtype, name), members in sorted(by_dataset.items())
    ]
    by_type: dict[str, list[SuiteGroup]] = {}
    for d in datasets:
        by_type.setdefault(d.memory_type, []).append(d)
    types = [
        SuiteGroup(
            name=mtype,
            memory_type=mtype,
            members=[d.name for d in members],
            means=_mean_of([d.means for d in members], runs, targets),
        )
        for mtype, members in sorted(by_type.items())
    ]
    mean_dataset = _mean_of([d.means for d in datasets], runs, targets)
    mean_type = _mean_of([g.means for g in types], runs, targets)
    winners = {
        "mean_dataset": _winners(mean_dataset, targets),
        "mean_type": _winners(mean_type, targets),
    }
    return SuiteReport(
        measure=measure,
        targets=targets,
        runs=runs,
        method=METHOD,
        tasks=rows,
        datasets=datasets,
        memory_types=types,
        mean_dataset=mean_dataset,
        mean_type=mean_type,
        winners=winners,
        winner_flip={
            key: len({tuple(w) for w in by_t.values() if w}) > 1 for key, by_t in winners.items()
        },
        scale=scale,
    )


@dataclass
class SuiteResult:
    report: SuiteReport
    #: task -> the paths of its report files
    task_paths: dict[str, dict[str, Path]]
    paths: dict[str, Path]


def suite_primary(measures: Sequence[Any]) -> str:
    """``ndcg@10`` when computed, else the first nDCG measure, else the first measure."""
    names = [str(m) for m in measures]
    if SUITE_MEASURE in names:
        return SUITE_MEASURE
    return next((n for n in names if n.startswith("ndcg@")), names[0])


def rescore_suite(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    primary: str | None = None,
    scale: int = 1,
    on_task: Callable[[str, RescoreReport, dict[str, Path]], None] | None = None,
    **options: Any,
) -> SuiteResult:
    """Rescore every bundle of ``paths`` (:func:`find_bundles`) into ``out_dir/<task>/``
    and write ``suite.json``, ``suite.md`` and ``suite.html`` in ``out_dir``.

    ``options`` are :func:`~tiap.rescore.api.rescore_bundle`'s; ``primary`` is the
    suite's measure and every task's primary measure (default :func:`suite_primary`).
    Bundles are read, rescored and written one at a time; ``on_task(task, report,
    paths)`` is called after each. ``scale``: see :func:`suite_report`.
    """
    check_scale(scale)
    from tiap.rescore.api import _measures, rescore_bundle, write_outputs
    from tiap.rescore.metrics import DEFAULT_KS, parse_ks
    from tiap.traces.bundle import read_bundle

    entries = find_bundles(paths)
    out = Path(out_dir)
    if primary is None:
        cutoffs = parse_ks(options.get("ks", DEFAULT_KS))
        primary = suite_primary(_measures(options.get("metrics"), cutoffs))
    tasks: list[tuple[str, str | None, RescoreReport]] = []
    task_paths: dict[str, dict[str, Path]] = {}
    for entry in entries:
        bundle = read_bundle(entry.bundle)
        result = rescore_bundle(bundle, primary=primary, **options)
        task_paths[entry.task] = write_outputs(result, out / entry.task)
        tasks.append((entry.task, bundle.config.memory_type, result.report))
        if on_task is not None:
            on_task(entry.task, result.report, task_paths[entry.task])
    report = suite_report(tasks, primary, scale=scale)
    return SuiteResult(report, task_paths, write_suite(report, out))


def write_suite(report: SuiteReport, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "suite_json": out / SUITE_JSON,
        "suite_md": out / SUITE_MD,
        "suite_html": out / SUITE_HTML,
    }
    write_json(paths["suite_json"], report.model_dump(mode="json"))
    paths["suite_md"].write_text(markdown(report), encoding="utf-8", newline="\n")
    paths["suite_html"].write_text(html(report), encoding="utf-8", newline="\n")
    return paths
