"""``report.html``: the rescoring report as one self-contained page (:mod:`tiap.report.page`),
from the same blocks as ``report.md`` (:mod:`tiap.rescore.sections`) with the figures of
:mod:`tiap.rescore.figures` after the sections they illustrate.

Every text from the data is escaped with control characters made visible
(:func:`tiap.text.inert_html`). Wide tables scroll inside their own box; figures
shrink to the page width, never past it.
"""

from __future__ import annotations

from tiap.report.blocks import Block, Figures
from tiap.report.html import sectioned_html, to_html
from tiap.report.page import page
from tiap.rescore import sections
from tiap.rescore.figures import section_figures
from tiap.rescore.report_models import RescoreReport


def render(report: RescoreReport) -> str:
    """``report.html``: every section of ``report.md``, each followed by its figures;
    after the title a table of contents, and each section collapsible."""
    figures = section_figures(report)
    title, *rest = sections.SECTIONS
    parts: list[list[Block]] = []
    for section in rest:
        blocks = section(report)
        if blocks:
            parts.append([*blocks, Figures(figures.get(section.__name__, []))])
    head = [*title(report), Figures(figures.get(title.__name__, []))]
    name = report.dataset + (f" ({report.bundle_name})" if report.bundle_name else "")
    return page(f"Target sensitivity: {name}", to_html(head) + "\n" + sectioned_html(parts))
