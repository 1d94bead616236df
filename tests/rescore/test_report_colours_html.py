"""In a real browser (headless Chromium): every figure of ``report.html`` and of the
audit's ``index.html`` that colours its marks with series colours has a legend, each
target pair has one colour, the same in both pages, in the fixed order, and no backtick
shows as text."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from support.browser import assert_renders, render_page
from tiap.audit.index_page import write_index
from tiap.audit.outcome import AuditContext
from tiap.audit.steps import StepName, StepRecord, StepRun, step_title
from tiap.report.palette import PALETTE
from tiap.rescore.pair_style import PAIR_ORDER, pair_color

#: per figure: its label, whether it has a legend, the legend's names, the series
#: colours its marks use, and the forest plot's (tip, colour) of every dot
FIGURES = """
(() => {
  const palette = new Set(PALETTE_JSON);
  return [...document.querySelectorAll('svg')].map((s) => {
    const legend = s.querySelector('g.legend');
    const marks = [...s.querySelectorAll('circle, rect, polyline')]
      .filter((m) => !m.closest('g.legend'));
    const used = new Set();
    for (const m of marks) {
      for (const a of ['fill', 'stroke']) {
        const c = (m.getAttribute(a) || '').toLowerCase();
        if (palette.has(c)) used.add(c);
      }
    }
    return {
      label: s.getAttribute('aria-label') || '',
      legend: legend ? [...legend.querySelectorAll('text')].map((t) => t.textContent) : null,
      used: [...used],
      dots: [...s.querySelectorAll('circle')].map((c) => [
        (c.querySelector('title') || {}).textContent || '', c.getAttribute('fill')]),
    };
  });
})()
""".replace("PALETTE_JSON", json.dumps(list(PALETTE)))


def _figures(page: Path, png: Path) -> list[dict]:
    assert_renders(page, png, min_figures=1)
    return render_page(page, extra=FIGURES).extra


def _forest_colours(figures: list[dict]) -> dict[str, set[str]]:
    forest = [f for f in figures if f["label"].startswith("Paired differences")]
    assert len(forest) == 1
    colours: dict[str, set[str]] = {}
    for tip, fill in forest[0]["dots"]:
        pair = tip.split(": ", 1)[0].rsplit(", ", 1)[1]
        colours.setdefault(pair, set()).add(fill)
    return colours


def test_every_coloured_figure_has_a_legend_and_a_pair_one_colour(
    audit_complete, tmp_path: Path
) -> None:
    audit = audit_complete.root / "audit"
    report = _figures(audit / "rescore" / "report.html", tmp_path / "report.png")
    index = _figures(audit / "index.html", tmp_path / "index.png")
    agreement = _figures(audit / "final" / "report.html", tmp_path / "agreement.png")
    assert any(f["label"] == "Label distribution per rater" for f in agreement)
    for fig in report + index + agreement:
        if fig["used"]:
            assert fig["legend"], fig["label"]  # colour that says something is explained
    for page in (audit / "rescore" / "report.html", audit / "index.html"):  # no literal `
        assert render_page(page, extra="document.body.innerText.includes('`')").extra is False
    in_report, in_index = _forest_colours(report), _forest_colours(index)
    assert in_report == in_index  # the same colour per pair in both pages
    assert set(in_report) == set(PAIR_ORDER)
    for pair, fills in in_report.items():
        assert fills == {pair_color(pair)}, pair
    assert len({pair_color(p) for p in PAIR_ORDER}) == len(PAIR_ORDER)
    forest = next(f for f in report if f["label"].startswith("Paired differences"))
    assert forest["legend"] == list(PAIR_ORDER)  # the fixed order
    # each run's rows in that order (a pair without a difference is left out)
    by_run: dict[str, list[str]] = {}
    for tip, _ in forest["dots"]:
        run, pair = tip.split(": ", 1)[0].rsplit(", ", 1)
        by_run.setdefault(run, []).append(pair)
    assert len(by_run) > 1
    for pairs in by_run.values():
        assert pairs == sorted(pairs, key=PAIR_ORDER.index)


#: the step table of index.html: per row, its cells' text and the line boxes of its
#: "ran" cell (a time on one line has one)
STEPS = """
(() => {
  const table = [...document.querySelectorAll('table')].find((t) =>
    [...t.querySelectorAll('th')].some((th) => th.textContent === 'found already done'));
  return [...table.querySelectorAll('tbody tr')].map((tr) => {
    const cells = [...tr.querySelectorAll('td')];
    const range = document.createRange();
    range.selectNodeContents(cells[3]);
    return [cells.map((c) => c.textContent), range.getClientRects().length];
  });
})()
"""


def test_the_step_table_names_every_row_and_keeps_times_on_one_line(tmp_path: Path) -> None:
    context = AuditContext(
        bundle="bundles/locomo", dataset="locomo", panel="offline", judges=["bm25"],
        rubric="contested-credit", rubric_hash="0123456789abcdef",
        workspace="audit/workspace.sqlite", subset="validation", humans="required",
    )  # fmt: skip
    at = [datetime(2026, 1, 2, 3, 4, s, tzinfo=UTC) for s in range(3)]
    detail = "115 cases x 5 judges: 555 calls, 0 cached, 571 valid, 4 invalid; " * 3
    record = StepRecord(
        step=StepName.JUDGE_SUBSET,
        title=step_title(StepName.JUDGE_SUBSET, "validation"),
        runs=[StepRun(at=at[0], status="stopped", detail=detail),
              StepRun(at=at[1], status="done", detail=detail)],
        found_done_at=at[2],
        found_done="every case already judged by every judge",
    )  # fmt: skip
    _, index = write_index(tmp_path, context, [record], "complete", "done", None)
    for width in (1280, 700):
        rows = render_page(index, width=width, extra=STEPS).extra
        assert [cells[0] for cells, _ in rows] == [  # every row names its step
            "judge subset 'validation'",
            "judge subset 'validation' (run 2)",
        ]
        for cells, lines in rows:
            assert cells[3].endswith("UTC"), cells
            assert lines == 1, (width, cells)  # the time is not squeezed over lines
