"""tiap.report: one number format, blocks written to Markdown and HTML with data made
inert and escaped, figures in HTML only, the page shell, colours and label sizing."""

from __future__ import annotations

import re

import pytest

from support.markdown_render import md_tags
from tiap.report import svg
from tiap.report.blocks import (
    Badge,
    Block,
    Data,
    Figure,
    Figures,
    Links,
    bullets,
    data,
    data_table,
    heading,
    para,
    table,
)
from tiap.report.charts import IntervalRow, interval_rows, stacked_bars
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.numbers import MISSING, bounds, level, num, pct, signed, tick, yes_no
from tiap.report.page import page
from tiap.report.palette import PALETTE, UNDEFINED, ramp, series_color
from tiap.report.sizing import max_width, rotated_extent, text_width

EVIL = "<script>alert(1)</script>|`x`\x1b[31m\u202e"


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        (num(0.83), "0.830"),
        (num(-0.125), "-0.125"),
        (num(None), "n/a"),
        (signed(0.0123), "+0.012"),
        (signed(-0.0123), "-0.012"),
        (signed(None), MISSING),
        (pct(0.2916), "29.2%"),
        (pct(None), "n/a"),
        (bounds(0.781, 0.872), "[0.781, 0.872]"),
        (bounds(-0.01, None, sign=True), "[-0.010, n/a]"),
        (level(0.95), "95%"),
        (yes_no(True), "yes"),
        (yes_no(None), "n/a"),
        (tick(-0.5), "-0.5"),
        (tick(0.25), "0.25"),
        (tick(-0.0), "0"),
        (tick(2.0), "2"),
    ],
)
def test_one_number_format(shown: str, expected: str) -> None:
    assert shown == expected


def _blocks() -> list[Block]:
    figure = Figure(svg.svg(10, 10, [svg.text(1, 5, EVIL)], EVIL), EVIL)
    return [
        heading(1, "Report on ", Data(EVIL)),
        para("The **method** says ", data(EVIL), "."),
        table(["run", "n", "mean"], [[Data(EVIL), 12, num(None)], [Data("b"), 3, num(0.5)]]),
        data_table(["name|x", "count"], [[EVIL, 7]]),
        bullets([data(EVIL), ("Status: ", Badge("pass", "pass"))]),
        Links([("the report", "sub/report.html")]),
        Figures([figure]),
        Figures([]),
    ]


def test_markdown_escapes_data_and_leaves_figures_out() -> None:
    md = to_markdown(_blocks())
    assert md.endswith("\n")
    assert not md.endswith("\n\n")
    assert not {"script", "img", "b"} & md_tags(md)  # the one link is the report's own
    assert "\x1b" not in md
    assert "\u202e" not in md
    assert "\\<script\\>alert(1)\\</script\\>\\|\\`x\\`␛\\[31m\\\\u202e" in md
    assert "The **method** says " in md  # the report's own text as written
    assert "| name\\|x | count |" in md  # a data header, escaped
    assert "| b | 3 | 0.500 |" in md
    assert "- Status: pass" in md
    assert "- [the report](sub/report.html)" in md
    assert "<svg" not in md


def test_html_escapes_data_and_draws_figures() -> None:
    html = to_html(_blocks())
    assert "<script>" not in html
    assert "\x1b" not in html
    assert "\u202e" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<strong>method</strong>" in html
    assert '<td class="num">12</td>' in html
    assert '<td class="num">n/a</td>' in html  # the missing value is a number's cell
    assert '<span class="pass">pass</span>' in html
    assert '<a href="sub/report.html">the report</a>' in html
    assert html.count("<figure") == 1  # an empty row of figures is left out
    assert '<div class="wide"><table>' in html
    whole = page(EVIL, html)
    assert whole.startswith("<!DOCTYPE html>\n")
    assert "<title>&lt;script&gt;" in whole
    assert len(re.findall(r"<script", whole)) == 0


def test_palette_and_ramps() -> None:
    assert series_color(0) == PALETTE[0]
    assert series_color(len(PALETTE) + 1) == PALETTE[1]
    stops = ((0.0, (255, 255, 255)), (1.0, (0, 0, 0)))
    assert ramp(None, stops) == UNDEFINED
    assert ramp(-3.0, stops) == "#ffffff"
    assert ramp(0.5, stops) == "#808080"
    assert ramp(7.0, stops) == "#000000"


def test_labels_are_sized_from_their_text() -> None:
    assert text_width("WWWW") > text_width("iiii") > 0
    assert text_width("\x1b") == text_width("␛")  # measured as shown
    assert max_width([]) == 0.0
    assert max_width(["a", "a longer label"]) == text_width("a longer label")
    h, v = rotated_extent(100.0)
    assert 70 < h < 80
    assert 70 < v < 80


def _width(svg_text: str) -> float:
    match = re.search(r'<svg [^>]*width="([0-9.]+)"', svg_text)
    assert match is not None
    return float(match.group(1))


def test_charts_fit_their_longest_label() -> None:
    row = IntervalRow("short", 0.1, -0.05, 0.2, PALETTE[0], EVIL)
    long_row = IntervalRow("W" * 60, 0.1, -0.05, 0.2, PALETTE[0], "tip")
    narrow, wide = interval_rows([row], "Δ", "t"), interval_rows([long_row], "Δ", "t")
    assert _width(wide) > _width(narrow) + 300
    assert "+0.100 [-0.050, +0.200]" in narrow
    assert "<script>" not in narrow
    assert interval_rows([], "Δ", "t") == ""
    bars = stacked_bars([(EVIL, [3, 1])], ["yes", "no"], PALETTE[:2], "labels")
    assert "n=4" in bars
    assert "<script>" not in bars
