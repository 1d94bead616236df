"""``index.md`` and ``index.html`` of an audit: every step's figures and links to
each report.

Both are written from one list of blocks (:mod:`tiap.report.blocks`), so they
always say the same thing. Paragraphs and table cells quote data (paths, run,
panel, judge and rater names, messages), so they are data blocks, made inert and
escaped by the writers: with :func:`tiap.text.inert_md` in the Markdown, with
:func:`tiap.text.inert_html` in the HTML. The figures come from
the step records (:mod:`tiap.audit.steps`): for every step, those of the
invocation that did its work, with when it ran, and when a later invocation found
it already done.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from tiap.audit.outcome import AuditContext
from tiap.audit.settings import (
    FINAL_DIR,
    INDEX_HTML,
    INDEX_MD,
    PROBE_DIR,
    RESCORE_DIR,
    VALIDATION_DIR,
)
from tiap.audit.step_figures import (
    AgreementFigures,
    Estimate,
    ExtractFigures,
    HumanFigures,
    JudgeFigures,
    QrelsCasesFigures,
    QrelsVerdict,
    QrelsVerdicts,
    RescoreFigures,
    Shares,
)
from tiap.audit.steps import StepName, StepRecord, shown_time
from tiap.report.blocks import Block, Figures, Links, data, data_table, heading, para
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.numbers import bounds, num, pct, unreliable, yes_no
from tiap.report.page import page
from tiap.rescore.compare import fixed_label
from tiap.rescore.figures import key_figures_of
from tiap.stats import RELIABLE_PERCENTILE_N


def _heading(text: str) -> Block:
    """A step's heading (the index's own words)."""
    return heading(2, text)


def _para(text: str) -> Block:
    """A paragraph quoting data: all of it escaped."""
    return para(data(text))


F = TypeVar("F")
#: what a percentile interval on too few cases is shown with
UNRELIABLE = unreliable(RELIABLE_PERCENTILE_N)


def _ci(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else bounds(lo, hi)


def _estimate(e: Estimate) -> str:
    ci = _ci(e.ci[0], e.ci[1]) if e.ci else ""
    text = f"{num(e.value)} {ci}".rstrip()
    return text + (f" ({UNRELIABLE})" if e.ci_unreliable else "")


def _as_of(rec: StepRecord) -> str:
    latest = rec.latest
    return f"(figures from the run of {shown_time(latest.at)})" if latest else ""


def _rescore_blocks(rec: StepRecord, f: RescoreFigures) -> list[Block]:
    blocks: list[Block] = [
        _heading("1. Target sensitivity (rescore)"),
        _para(f"{f.n_queries} queries, {len(f.runs)} run(s) {_as_of(rec)}."),
    ]
    if f.n_pairs:
        blocks.append(
            _para(
                f"Raw vs Canonical: {f.measure} changes for {pct(f.changed_share)} of "
                f"{f.n_pairs} shared (query, run) pairs; by at least 0.1 for "
                f"{pct(f.large_share)}."
            )
        )
    rows = [[d.run, d.pair, str(d.n), num(d.mean), _ci(d.ci_low, d.ci_high)] for d in f.differences]
    if rows:
        header = ["run", "targets", "n shared", f"mean Δ {f.measure}", "95% CI"]
        blocks.append(data_table(header, rows))
    blocks.append(
        _para(
            f"Winner flips on {f.measure}: {f.winner_flips} run pair(s) "
            f"({f.winner_flips_all_measures} over all measures)."
        )
    )
    for d in f.design:
        winners = "; ".join(f"{t}: {', '.join(map(str, w))}" for t, w in d.winners.items())
        flip = " (the winner flips across targets)" if d.flips else ""
        group = f" ({fixed_label(d.fixed)})" if d.fixed else ""
        blocks.append(_para(f"Best {d.key}{group} on {f.measure}: {winners}{flip}."))
    return blocks


def _cases_blocks(rec: StepRecord, f: ExtractFigures) -> list[Block]:
    r = f.report
    rows = [
        [run, str(rc.contested), ", ".join(f"{b}: {n}" for b, n in rc.buckets.items())]
        for run, rc in sorted(r.runs.items())
    ]
    return [
        _heading("2. Contested credits"),
        _para(
            f"{r.contested} cases where Raw misses in the top {r.k} while Source and "
            f"Canonical give credit {_as_of(rec)}."
        ),
        data_table(["run", "cases", "rank buckets"], rows),
    ]


def _agreement_para(rec: StepRecord, f: AgreementFigures) -> str:
    return (
        f"{f.n_cases} cases, {f.n_complete} labelled validly by every judge; "
        f"Fleiss' kappa ({f.fleiss_scale}) {_estimate(f.fleiss)} {_as_of(rec)}."
    )


def _majority_table(d: Shares) -> Block:
    rows = [[label, str(d.counts[label]), pct(share)] for label, share in d.shares.items()]
    rows.append(
        ["ties / no majority / no quorum", f"{d.ties} / {d.no_majority} / {d.no_quorum}", ""]
    )
    return data_table(["majority label", "cases", "share of decided"], rows)


def _qrels_cases_blocks(rec: StepRecord, f: QrelsCasesFigures) -> list[Block]:
    r = f.report
    rows = [
        [
            name,
            c.memory_type or "",
            str(c.queries),
            str(c.qrels_lines),
            ", ".join(f"{s}: {c.allocation[s]}/{n}" for s, n in c.strata.items()),
            str(c.sampled),
            f"{c.negatives}/{c.negatives_pool}" if c.run else "",
        ]
        for name, c in r.datasets.items()
    ]
    text = (
        f"{r.cases} annotated (query, document) pairs drawn from {r.source} "
        f"({r.source_kind}), up to {r.per_dataset} per dataset, stratified by grade and "
        f"spread over queries, seed {r.seed}"
    )
    if r.run:
        text += f"; negatives: top-ranked documents of run {r.run} without a positive grade"
    header = ["dataset", "type", "queries", "qrels lines", "drawn/pool by grade", "pairs"]
    header.append("negatives drawn/pool")
    return [
        _heading("1. Relevance annotations: the pairs drawn"),
        _para(f"{text} {_as_of(rec)}."),
        data_table(header, rows),
    ]


def _share(e: Estimate | None) -> str:
    if e is None:
        return ""
    return _estimate(e) + f" (n={e.n})"


def _verdict_row(name: str, v: QrelsVerdict) -> list[str]:
    return [
        name,
        v.verdict,
        str(v.annotated_relevant),
        _share(v.confirmed),
        _share(v.confirmed_by_humans),
        str(v.negatives) if v.negatives else "",
        _share(v.negatives_found_relevant),
    ]


def _qrels_verdict_blocks(q: QrelsVerdicts) -> list[Block]:
    rows = [_verdict_row(name, v) for name, v in q.by_dataset.items()]
    rows.append(_verdict_row("all datasets", q.overall))
    header = ["dataset", "verdict", "annotated relevant", "confirmed (panel)"]
    header += ["confirmed (humans)", "negatives", "negatives found relevant (panel)"]
    return [
        data_table(header, rows),
        _para(
            f"'labels reliable': the confirmed share's 95% CI lower bound is at least "
            f"{q.min_confirmed:.2f} and the negatives found relevant stay at most "
            f"{q.max_missed:.2f}; 'labels unreliable': its upper bound is below "
            f"{q.min_confirmed:.2f}; 'missing labels': the negatives found relevant are "
            f"above {q.max_missed:.2f}"
            + (
                f"; a check with a decided majority on fewer than {q.min_decided:.2f} of its "
                "pairs is 'inconclusive'. Shares carry 95% Wilson intervals."
                if q.min_decided is not None
                else "."
            )
        ),
    ]


def _qrels_final_blocks(rec: StepRecord, f: AgreementFigures) -> list[Block]:
    blocks: list[Block] = [
        _heading("3. Every drawn pair: are the relevance labels right?"),
        _para(_agreement_para(rec, f)),
    ]
    if f.qrels is not None:
        blocks += _qrels_verdict_blocks(f.qrels)
    return blocks


def _validation_blocks(
    rec: StepRecord, f: AgreementFigures, records: dict[StepName, StepRecord], number: int = 3
) -> list[Block]:
    gate = f.gate
    blocks: list[Block] = [
        _heading(f"{number}. Validation subset: agreement and scale gate"),
        _para(_agreement_para(rec, f)),
        _para(
            f"Scale gate: {gate.status} (thresholds on the "
            + ("point estimates" if gate.gate_on == "point" else "interval lower bounds")
            + f"; conclusive: {yes_no(gate.conclusive)}; Fleiss' kappa over "
            + (
                "the judges and the human reference"
                if gate.gate_raters == "judges+reference"
                else "the judges"
            )
            + ")"
            + ("" if gate.passed else " — " + "; ".join(gate.failures))
            + "."
        ),
    ]
    humans = records.get(StepName.HUMANS)
    hf = humans.figures if humans is not None else None
    if f.vs_humans is not None:
        rows = [[r.rater, str(r.n), _estimate(r.kappa), pct(r.accuracy.value)] for r in f.vs_humans]
        scale = f.vs_humans[0].scale if f.vs_humans else "binary"
        blocks.append(data_table(["rater", "n", f"kappa vs humans ({scale})", "accuracy"], rows))
    elif isinstance(hf, HumanFigures) and not hf.required:
        text = "No human labels were required (--no-humans): the gate used judge agreement only."
        if hf.left_out:
            text += (
                f" Human labels in the workspace ({', '.join(hf.left_out)}) were left out of "
                "the agreement reports."
            )
        blocks.append(_para(text))
    judge_all = records.get(StepName.JUDGE_ALL)
    forced = judge_all is not None and any(
        isinstance(run.figures, JudgeFigures) and run.figures.forced for run in judge_all.runs
    )
    if forced:
        blocks.append(
            _para(
                "The gate did not pass; every case was judged anyway because of --force "
                "(recorded in the workspace as a gate_force event)."
            )
        )
    return blocks


def _final_blocks(rec: StepRecord, f: AgreementFigures) -> list[Block]:
    first = f.labels[0] if f.labels else "?"
    blocks: list[Block] = [
        _heading("4. Every contested credit: majority vote"),
        _para(_agreement_para(rec, f)),
        _majority_table(f.majority),
        _para(
            "Share of relaxed credit that is fully supported (majority "
            f"'{first}' among decided cases): {pct(f.supported_share)}."
        ),
        _para(_calibrated_para(f, first)),
    ]
    ppi = f.ppi_by_dataset
    rows = [
        [
            ds,
            str(d.n),
            *(pct(d.shares.get(lab)) for lab in f.labels),
            *([_estimate(ppi[ds]) if ds in ppi else "n/a"] if ppi else []),
        ]
        for ds, d in f.by_dataset.items()
    ]
    extra = [f"{first} (calibrated, PPI)"] if ppi else []
    blocks.append(data_table(["dataset", "cases", *f.labels, *extra], rows))
    return blocks


def _calibrated_para(f: AgreementFigures, first: str) -> str:
    """The calibrated share beside the panel's, or why there is none."""
    e = f.supported_ppi
    if e is None:
        return f"No calibrated share: {f.calibrated_reason or 'no human reference'}."
    return (
        f"Calibrated against the human reference (prediction-powered, stratified by the "
        f"sampling design, {e.n} labelled cases): '{first}' {_estimate(e)}; panel, humans "
        f"and per-judge corrections in {FINAL_DIR}/report.md (Calibrated prevalence)."
    )


def _step_rows(records: Sequence[StepRecord]) -> list[list[str]]:
    """One row per run of each step: the runs that did its work, oldest first; the
    last one says when a later invocation found the step already done."""
    rows = []
    for rec in records:
        for i, run in enumerate(rec.runs):
            again = ""
            if i == len(rec.runs) - 1 and rec.found_done_at is not None:
                again = _one_line(shown_time(rec.found_done_at))
                if rec.found_done:
                    again += f": {rec.found_done}"
            # every row names its step: a later run of it says which run it is
            title = rec.title if i == 0 else f"{rec.title} (run {i + 1})"
            rows.append([title, run.status, run.detail, _one_line(shown_time(run.at)), again])
    return rows


def _one_line(text: str) -> str:
    """``text`` with no-break spaces: a time never wraps over lines in a table cell."""
    return text.replace(" ", "\u00a0")


def _blocks(
    context: AuditContext,
    records: Sequence[StepRecord],
    status: str,
    message: str,
    next_command: str | None,
    out: Path,
) -> list[Block]:
    c = context
    if c.mode == "qrels":
        what = f"Source {c.bundle} (datasets {c.dataset})"
    else:
        what = f"Bundle {c.bundle} (dataset {c.dataset})"
    blocks: list[Block] = [
        _para(
            f"{what}; panel {c.panel} "
            f"({', '.join(c.judges)}); rubric {c.rubric} ({c.rubric_hash[:12]}); "
            f"workspace {c.workspace}."
        ),
        _para(f"Status: {status} — {message}."),
    ]
    if next_command:
        blocks.append(_para(f"Next: {next_command}"))
    blocks.append(
        data_table(
            ["step", "status", "figures", "ran", "found already done"],
            _step_rows(records),
        )
    )
    links = []
    if c.mode != "qrels":
        links += [
            ("rescore report", f"{RESCORE_DIR}/report.md"),
            ("per-query scores", f"{RESCORE_DIR}/per_query.csv"),
        ]
        if (out / RESCORE_DIR / "report.html").exists():
            links.insert(1, ("rescore report (HTML, with figures)", f"{RESCORE_DIR}/report.html"))
    shown = (
        ("validation agreement", VALIDATION_DIR),
        ("judge probes", PROBE_DIR),
        ("final report", FINAL_DIR),
    )
    for name, sub in shown:
        if (out / sub / "report.html").exists():
            links.append((name, f"{sub}/report.html"))
            links.append((f"{name} (markdown)", f"{sub}/report.md"))
    blocks.append(Links(links))
    by_name = {r.step: r for r in records}
    if c.mode == "qrels":
        return blocks + _qrels_mode_blocks(by_name)
    if rescore := _latest(by_name, StepName.RESCORE, RescoreFigures):
        blocks += _rescore_blocks(*rescore)
        blocks.append(Figures(key_figures_of(out / RESCORE_DIR / "report.json")))
    if cases := _latest(by_name, StepName.EXTRACT, ExtractFigures):
        blocks += _cases_blocks(*cases)
    if valid := _latest(by_name, StepName.VALIDATION, AgreementFigures):
        blocks += _validation_blocks(*valid, by_name)
    if final := _latest(by_name, StepName.FINAL, AgreementFigures):
        blocks += _final_blocks(*final)
    return blocks


def _qrels_mode_blocks(by_name: dict[StepName, StepRecord]) -> list[Block]:
    blocks: list[Block] = []
    if drawn := _latest(by_name, StepName.EXTRACT, QrelsCasesFigures):
        blocks += _qrels_cases_blocks(*drawn)
    if valid := _latest(by_name, StepName.VALIDATION, AgreementFigures):
        blocks += _validation_blocks(*valid, by_name, number=2)
        if valid[1].qrels is not None:
            blocks.append(_para("On the validation subset:"))
            blocks += _qrels_verdict_blocks(valid[1].qrels)
    if final := _latest(by_name, StepName.FINAL, AgreementFigures):
        blocks += _qrels_final_blocks(*final)
    return blocks


def _latest(
    by_name: dict[StepName, StepRecord], name: StepName, kind: type[F]
) -> tuple[StepRecord, F] | None:
    """A step's record and its latest figures, if it has figures of that kind."""
    rec = by_name.get(name)
    figures = rec.figures if rec is not None else None
    return (rec, figures) if rec is not None and isinstance(figures, kind) else None


def _md(blocks: Sequence[Block]) -> str:
    return to_markdown([heading(1, "tiap audit"), *blocks])


def _html(blocks: Sequence[Block]) -> str:
    return page("tiap audit", to_html([heading(1, "tiap audit"), *blocks]))


def write_index(
    out: Path,
    context: AuditContext,
    records: Sequence[StepRecord],
    status: str,
    message: str,
    next_command: str | None = None,
) -> tuple[Path, Path]:
    """Write ``index.md`` and ``index.html`` in ``out``; returns their paths."""
    blocks = _blocks(context, records, status, message, next_command, out)
    md, page = out / INDEX_MD, out / INDEX_HTML
    md.write_text(_md(blocks), encoding="utf-8", newline="\n")
    page.write_text(_html(blocks), encoding="utf-8", newline="\n")
    return md, page
