"""``report.md`` section putting the matched and per-target views of the run comparisons
and design recommendations side by side (:mod:`tiap.rescore.subsets`), with n for each."""

from __future__ import annotations

from tiap.report.blocks import Block, Cell, Data, Fragment, data, heading, joined, para, table
from tiap.report.numbers import MISSING
from tiap.rescore.compare import fixed_label
from tiap.rescore.report_models import DesignFamily, RescoreReport, RunPair
from tiap.rescore.subsets import DESCRIPTION, LABEL, MATCHED, PER_TARGET


def view_label(report: RescoreReport) -> str:
    """What the report's run pairs and design families compare, for table headers."""
    return LABEL[report.parameters.subsets]


def view_description(report: RescoreReport) -> str:
    """``matched subset (the queries where ...)``: what the report's comparisons use."""
    view = report.parameters.subsets
    return f"{LABEL[view]} ({DESCRIPTION[view]})"


def _views(report: RescoreReport) -> dict[str, tuple[list[RunPair], list[DesignFamily]]] | None:
    other = report.other_subsets
    if other is None:
        return None
    return {
        report.parameters.subsets: (report.run_pairs, report.design),
        other.subsets: (other.run_pairs, other.design),
    }


def _winners(labels: list[str]) -> Cell:
    return joined(", ", (Data(w) for w in labels)) if labels else MISSING


def _family(fam: DesignFamily) -> tuple[Fragment, ...]:
    fixed = fixed_label(fam.fixed)
    return (Data(fam.key), " (fixed: ", Data(fixed) if fixed else "nothing else", ")")


def _subsets(report: RescoreReport) -> list[Block]:
    views = _views(report)
    if views is None or report.other_subsets is None:
        return []
    pm = report.parameters.primary_measure
    chosen = view_label(report)
    out: list[Block] = [
        heading(2, "Matched and per-target subsets"),
        para(
            f"The run comparisons and design recommendations above are on the {chosen} "
            f"(`--subsets {report.parameters.subsets}`). Matched: {DESCRIPTION[MATCHED]} "
            f"(the paper's). Per-target: {DESCRIPTION[PER_TARGET]}."
        ),
    ]
    if not report.other_subsets.differs:
        out.append(para("Here both give the same queries for every comparison."))
        return out
    (m_pairs, m_design), (p_pairs, p_design) = views[MATCHED], views[PER_TARGET]
    m_flips = sum(p.winner_flip[pm] for p in m_pairs)
    p_flips = sum(p.winner_flip[pm] for p in p_pairs)
    m_dflips = sum(f.winner_flip[pm] for f in m_design)
    p_dflips = sum(f.winner_flip[pm] for f in p_design)
    out.append(
        para(
            f"Winner flips on {pm}: {m_flips} of {len(m_pairs)} run pairs on the matched subset, "
            f"{p_flips} on the per-target subsets; design families whose best setting flips: "
            f"{m_dflips} of {len(m_design)} (matched), {p_dflips} (per-target)."
        )
    )
    pair_rows: list[list[Cell]] = []
    for mp, pp in zip(m_pairs, p_pairs, strict=True):
        for t, mt in mp.targets.items():
            pt = pp.targets[t]
            if mt.n_shared == pt.n_shared:
                continue
            pair_rows.append(
                [
                    data(mp.run_a),
                    data(mp.run_b),
                    t,
                    mt.n_shared,
                    pt.n_shared,
                    data(mp.winner[pm].get(t, MISSING)),
                    data(pp.winner[pm].get(t, MISSING)),
                ]
            )
    if pair_rows:
        out += [
            para("Run pairs whose compared queries differ:"),
            table(
                [
                    "run A",
                    "run B",
                    "target",
                    "n (matched)",
                    "n (per-target)",
                    f"winner on {pm} (matched)",
                    f"winner on {pm} (per-target)",
                ],
                pair_rows,
            ),
        ]
    design_rows: list[list[Cell]] = [
        [
            _family(mf),
            t,
            mf.n_shared[t],
            pf.n_shared[t],
            _winners(mf.winner[t][pm]),
            _winners(pf.winner[t][pm]),
        ]
        for mf, pf in zip(m_design, p_design, strict=True)
        for t in mf.n_shared
        if mf.n_shared[t] != pf.n_shared[t]
    ]
    if design_rows:
        out += [
            para("Design families whose compared queries differ:"),
            table(
                [
                    "family",
                    "target",
                    "n (matched)",
                    "n (per-target)",
                    f"best on {pm} (matched)",
                    f"best on {pm} (per-target)",
                ],
                design_rows,
            ),
        ]
    return out
