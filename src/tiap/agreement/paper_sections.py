"""The agreement report's section of figures counted as the paper counts them
(:mod:`tiap.agreement.paper_counts`), each labelled beside tiap's own."""

from __future__ import annotations

from tiap.agreement.models import AgreementReport
from tiap.agreement.report_text import figure, kappa_text
from tiap.report.blocks import Block, Data, bullets, data, data_table, heading, para
from tiap.report.numbers import pct


def paper_section(r: AgreementReport) -> list[Block]:
    p = r.paper
    if p is None:
        return []
    out: list[Block] = [
        heading(2, "As the paper counts (Tables 6 and 14)"),
        para(
            "Plurality vote over all cases (the paper's majority shares, which add up to "
            "100%), beside tiap's strict majority among decided cases above."
        ),
    ]
    for scale, pv in p.plurality.items():
        rows = [[label, n, pct(pv.shares[label])] for label, n in pv.counts.items()]
        out += [
            bullets(
                [
                    data(
                        f"{scale}: {pv.policy}; ties: {pv.tie_rule} "
                        f"({pv.n_ties_broken} of {pv.n_cases} cases broken so)"
                    )
                ]
            ),
            data_table([f"plurality ({scale})", "cases", "share of all"], rows),
        ]
    lines = []
    for scale, c in p.complete_case_agreement.items():
        tiap_pa = figure(r.percent_agreement.get(scale))
        lines.append(
            data(
                f"Percent agreement on complete cases ({scale}; every included rater valid, "
                f"{c.n} of {c.n_cases} cases): {kappa_text(c.value, c.ci, c.reason)}; "
                f"pairwise deletion (tiap): {tiap_pa}"
            )
        )
    lines += validation_kappa_lines(r)
    out.append(bullets(lines))
    return out


def validation_kappa_lines(r: AgreementReport) -> list[Data]:
    """With human labels: per scale, Fleiss' kappa over the judges and the human
    reference (the paper's validation figure, over five raters) and over the judges
    alone, each with its raters, n and interval, and which one the gate used."""
    p = r.paper
    if p is None or not p.fleiss_judges_and_reference:
        return []
    gate = (
        "the judges and the human reference"
        if r.gate.gate_raters == "judges+reference"
        else "the judges alone"
    )
    lines: list[Data] = []
    for scale, f in p.fleiss_judges_and_reference.items():
        lines.append(
            data(
                f"Fleiss' kappa over the judges and the human reference ({scale}; "
                f"{', '.join(f.raters)}; the paper's {len(f.raters)}-rater validation "
                f"figure; n={f.n}): {kappa_text(f.value, f.ci, f.reason)}"
            )
        )
        alone = (p.fleiss_judges or {}).get(scale)
        if alone is not None:
            lines.append(
                data(
                    f"Fleiss' kappa over the judges alone ({scale}; {', '.join(alone.raters)}; "
                    f"n={alone.n}): {kappa_text(alone.value, alone.ci, alone.reason)}"
                )
            )
    lines.append(
        data(f"The gate's Fleiss' kappa is over {gate} (--gate-raters {r.gate.gate_raters})")
    )
    return lines
