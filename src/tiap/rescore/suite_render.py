"""``suite.md`` and ``suite.html``: the suite report as blocks (:mod:`tiap.report.blocks`),
with grouped-bar figures of Mean(Dataset) and Mean(Type) in the HTML."""

from __future__ import annotations

from tiap.report.blocks import (
    Block,
    Bullets,
    Cell,
    Data,
    Figure,
    Figures,
    Fragment,
    Table,
    data,
    heading,
    para,
    table,
)
from tiap.report.charts import Bar, grouped_bars
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.numbers import MISSING, num, pct
from tiap.report.page import page
from tiap.rescore.suite_models import Means, SuiteReport

SCALED = " Scores are shown on LMEB's 0-100 scale (suite.json keeps 0-1)."


def score(r: SuiteReport, value: float | None) -> str:
    """A score on the report's scale (``num`` of the value times ``r.scale``)."""
    return num(None if value is None else value * r.scale)


def _title(r: SuiteReport) -> list[Block]:
    n_datasets, n_types = len(r.datasets), len(r.memory_types)
    return [
        heading(1, f"Suite: {len(r.tasks)} tasks, {n_datasets} datasets, {n_types} memory types"),
        para(
            f"Measure **{r.measure}**; targets {', '.join(r.targets)}. A task's score is a run's "
            "mean over the task's queries whose target is non-empty; a dataset's is the mean of "
            "its tasks'; Mean(Dataset) is the mean over datasets; a memory type's score is the "
            "mean of its datasets', and Mean(Type) the mean over memory types. A mean is "
            f"undefined ({MISSING}) when any part it averages is."
            + (
                " Scores are shown on LMEB's 0-100 scale (suite.json keeps 0-1)."
                if r.scale == 100
                else ""
            )
        ),
    ]


def _runs_table(means_a: Means, means_b: Means, r: SuiteReport) -> Table:
    header: list[Cell] = ["run"]
    for t in r.targets:
        header += [f"Mean(Dataset) {t}", f"Mean(Type) {t}"]
    rows: list[list[Cell]] = [
        [
            data(run),
            *(x for t in r.targets for x in (score(r, means_a[run][t]), score(r, means_b[run][t]))),
        ]
        for run in r.runs
    ]
    return table(header, rows)


def _winners(r: SuiteReport, key: str, label: str) -> Block:
    parts: list[Fragment] = [f"Best run on {label} per target: "]
    for i, t in enumerate(r.targets):
        names = r.winners[key].get(t, [])
        parts.append(("; " if i else "") + f"{t}: ")
        parts += [x for j, w in enumerate(names) for x in ((", " if j else ""), Data(w))]
        if not names:
            parts.append(MISSING)
    flip = " The best run changes with the target." if r.winner_flip[key] else ""
    return para(*parts, "." + flip)


def _overall(r: SuiteReport) -> list[Block]:
    return [
        heading(2, "Mean(Dataset) and Mean(Type)"),
        _runs_table(r.mean_dataset, r.mean_type, r),
        _winners(r, "mean_dataset", "Mean(Dataset)"),
        _winners(r, "mean_type", "Mean(Type)"),
    ]


def _groups(r: SuiteReport) -> list[Block]:
    type_rows: list[list[Cell]] = [
        [data(g.name), data(run), *(score(r, g.means[run][t]) for t in r.targets)]
        for g in r.memory_types
        for run in r.runs
    ]
    dataset_rows: list[list[Cell]] = []
    for g in r.datasets:
        for run in r.runs:
            cells: list[Cell] = [data(g.memory_type), data(g.name), len(g.members), data(run)]
            dataset_rows.append(cells + [score(r, g.means[run][t]) for t in r.targets])
    return [
        heading(2, "Memory types"),
        table(["memory type", "run", *r.targets], type_rows),
        heading(2, "Datasets"),
        table(["memory type", "dataset", "tasks", "run", *r.targets], dataset_rows),
    ]


def _tasks(r: SuiteReport) -> list[Block]:
    rows: list[list[Cell]] = []
    for task in r.tasks:
        for run in r.runs:
            if run not in task.means:
                continue
            rows.append(
                [
                    data(task.task),
                    data(task.memory_type),
                    data(task.dataset),
                    data(run),
                    *(
                        f"{score(r, task.means[run].get(t))} (n={task.n_evaluated[run].get(t, 0)})"
                        for t in r.targets
                    ),
                ]
            )
    return [
        heading(2, "Tasks"),
        para("Each run's mean per target over the task's queries with a non-empty target (n)."),
        table(["task", "memory type", "dataset", "run", *r.targets], rows),
    ]


def _headlines(r: SuiteReport) -> list[Block]:
    pairs = list(dict.fromkeys(p for t in r.tasks for p in t.headline.instability))
    views = "/".join(dict.fromkeys(t.headline.subsets for t in r.tasks))
    rows: list[list[Cell]] = [
        [
            data(t.task),
            t.n_queries,
            *(
                pct(t.headline.instability[p].share_changed)
                if p in t.headline.instability
                else MISSING
                for p in pairs
            ),
            f"{t.headline.winner_flips} of {t.headline.n_run_pairs}",
            f"{t.headline.design_flips} of {t.headline.n_design_families}",
            f"{t.headline.n_not_monotone} of {t.headline.n_ordered_runs}",
            f"{t.headline.n_not_containment_consistent} of {t.headline.n_ordered_runs}",
        ]
        for t in r.tasks
    ]
    return [
        heading(2, "Target sensitivity per task"),
        para(
            f"Share of shared (query, run) pairs whose {r.measure} changes between the two "
            "targets (pooled over the task's runs, those on raw-only stores left out unless "
            f"--pool-raw-only); run pairs whose winner on {r.measure} flips between targets; "
            "design families whose best setting flips; runs whose target ordering is not monotone "
            "(the paper's Table 7: Source ≥ Canonical ≥ Raw) and not containment consistent "
            "(tiap: Source ≥ max(Raw, Canonical))."
        ),
        table(
            [
                "task",
                "queries",
                *(f"changed {p}" for p in pairs),
                f"winner flips ({views} subsets)",
                f"design flips ({views} subsets)",
                "nonmonotone runs (paper)",
                "not containment consistent",
            ],
            rows,
        ),
    ]


def _method(r: SuiteReport) -> list[Block]:
    return [
        heading(2, "Conventions"),
        Bullets([(f"**{k}**: {v}",) for k, v in r.method.items()]),
    ]


SECTIONS = (_title, _overall, _groups, _tasks, _headlines, _method)


def blocks(r: SuiteReport) -> list[Block]:
    return [b for section in SECTIONS for b in section(r)]


def markdown(r: SuiteReport) -> str:
    return to_markdown(blocks(r))


def _bars(r: SuiteReport, means: Means, key: str, label: str) -> Figure | None:
    bars = [
        [
            Bar(
                None if (value := means[run][t]) is None else value * r.scale,
                f"{run}, {t}: {score(r, means[run][t])}",
                run in r.winners[key].get(t, []),
            )
            for t in r.targets
        ]
        for run in r.runs
    ]
    title = f"{label} of {r.measure} per run and target"
    body = grouped_bars(r.runs, r.targets, bars, f"{label} of {r.measure} (★ best run)", title)
    return Figure(body, title) if body else None


def html(r: SuiteReport) -> str:
    figs = [
        f
        for f in (
            _bars(r, r.mean_dataset, "mean_dataset", "Mean(Dataset)"),
            _bars(r, r.mean_type, "mean_type", "Mean(Type)"),
        )
        if f is not None
    ]
    out: list[Block] = []
    for section in SECTIONS:
        out += section(r)
        if section is _overall:
            out.append(Figures(figs))
    return page(f"Suite: {len(r.tasks)} tasks on {r.measure}", to_html(out))
