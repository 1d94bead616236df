"""The agreement report's section of figures counted as the paper counts them
(:mod:`tiap.agreement.paper_counts`), each labelled beside tiap's own."""

from __future__ import annotations

from tiap.agreement.models import AgreementReport
from tiap.agreement.report_text import figure, kappa_text
from tiap.report.blocks import Block, bullets, data, data_table, heading, para
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
    for scale, f in (p.fleiss_judges_and_reference or {}).items():
        lines.append(
            data(
                f"Fleiss' kappa over the judges and the human reference ({scale}; "
                f"{', '.join(f.raters)}; the paper's five-rater validation figure; n={f.n}): "
                f"{kappa_text(f.value, f.ci, f.reason)}; the gate's is over the judges alone"
            )
        )
    out.append(bullets(lines))
    return out
