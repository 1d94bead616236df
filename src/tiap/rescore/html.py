"""``report.html``: the rescoring report as one self-contained page (inline CSS and SVG,
no scripts, no external assets), from the same blocks as ``report.md`` with the
figures of :mod:`tiap.rescore.figures` after the sections they illustrate.

Every text from the data is escaped with control characters made visible
(:func:`tiap.text.inert_html`). Wide tables scroll inside their own box; figures
shrink to the page width, never past it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiap.rescore import doc, markdown
from tiap.rescore.figures import Figure, section_figures
from tiap.rescore.report_models import RescoreReport
from tiap.text import inert_html as e

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top;
white-space:nowrap}
td.long{white-space:normal;min-width:12em}
th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.wide{max-width:100%;overflow-x:auto;margin-bottom:1em}
""".strip()


def figures_html(figures: Sequence[Figure]) -> str:
    """Figures in a wrapping row, each with its caption (escaped); styled inline, so any
    page (the audit's index too) can hold them."""
    if not figures:
        return ""
    items = "".join(
        f'<figure style="margin:0;max-width:100%">{f.svg}'
        f'<figcaption style="font-size:.9em;color:#555;max-width:60em">{e(f.caption)}'
        "</figcaption></figure>"
        for f in figures
    )
    return (
        '<div class="figs" style="display:flex;flex-wrap:wrap;gap:1.5em;'
        f'align-items:flex-start;margin:1em 0">{items}</div>'
    )


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def render(report: RescoreReport) -> str:
    """``report.html``: every section of ``report.md``, each followed by its figures."""
    figures = section_figures(report)
    parts = []
    for section in markdown.SECTIONS:
        parts.append(doc.to_html(section(report)))
        parts.append(figures_html(figures.get(section.__name__, [])))
    name = report.dataset + (f" ({report.bundle_name})" if report.bundle_name else "")
    return page(f"Target sensitivity: {name}", "\n".join(p for p in parts if p))
