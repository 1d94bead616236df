"""The agreement report's figures show rater names whole: the kappa heatmap is sized from
its longest name, and in a real browser no name is drawn outside its figure."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from support.browser import assert_renders
from tiap.agreement import compute_report, labels_from_file, write_report
from tiap.agreement.figures import heatmap
from tiap.rubric import load_rubric

LONG_NAMES = [
    "judge-anthropic-claude-sonnet-4-5-20250929-at-temperature-0",
    "openai/gpt-5.1-2025-11-13 (structured output, seed 1337)",
    "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
    "short",
]


def _width(svg: str) -> float:
    match = re.search(r'<svg [^>]*width="([0-9.]+)"', svg)
    assert match is not None
    return float(match.group(1))


def test_heatmap_shows_whole_names_and_grows_with_them() -> None:
    values = {(a, b): 0.5 for a in LONG_NAMES for b in LONG_NAMES if a < b}
    long_svg = heatmap(LONG_NAMES, values, "kappa")
    for name in LONG_NAMES:
        assert f">{name.replace('&', '&amp;')}<" in long_svg  # never trimmed
    assert "…" not in long_svg
    short = ["a", "b", "c", "d"]
    short_svg = heatmap(short, {(a, b): 0.5 for a in short for b in short if a < b}, "kappa")
    assert _width(long_svg) > _width(short_svg) + 200


def test_agreement_report_with_long_rater_names_renders(tmp_path: Path) -> None:
    labels = ["supports", "partial", "does_not_support"]
    path = tmp_path / "labels.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["case_id", "rater", "label"])
        for i in range(12):
            for j, rater in enumerate(LONG_NAMES):
                writer.writerow([f"c{i}", rater, labels[(i + (j if i % 3 else 0)) % 3]])
    rubric = load_rubric()
    report = compute_report(labels_from_file(path, rubric), rubric, resamples=0)
    write_report(report, tmp_path / "out")
    page = tmp_path / "out" / "report.html"
    # the whole page fits: wide tables scroll in their own box
    shown = assert_renders(page, tmp_path / "agreement.png", min_figures=2)
    assert any("kappa" in box.label.lower() for box in shown.svgs)
