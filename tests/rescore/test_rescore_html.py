"""``report.html`` in a real browser (headless Chromium over the DevTools protocol): the
page loads without console errors, every figure has a box, no label is cut off and
nothing overflows the page width; for the sample bundle, LoCoMo and a suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.browser import assert_renders, chromium_or_skip, render_page
from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.traces.bundle import read_bundle


def test_sample_report_html_renders(sample_bundle_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sample"
    write_outputs(rescore_bundle(read_bundle(sample_bundle_dir), resamples=300), out)
    report = assert_renders(out / "report.html", tmp_path / "sample.png", min_figures=9)
    labels = [box.label for box in report.svgs]
    assert any("shift canonical-raw" in label for label in labels)
    assert any("Paired differences" in label for label in labels)
    assert any("instability" in label for label in labels)
    assert any("Winner flips" in label for label in labels)
    assert any("Cut-off sensitivity" in label for label in labels)
    assert any(label.startswith("Best parser_max_facts") for label in labels)


@pytest.mark.shared_data
@pytest.mark.slow
def test_locomo_report_html_renders(tiap_cli, built, shared_data_dir: Path, tmp_path: Path) -> None:
    source = shared_data_dir / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo not found at {source} (shared data folder without it)")
    chromium_or_skip()
    bundle = built.copy("locomo", tmp_path / "locomo")
    out = tmp_path / "rescore"
    tiap_cli.ok("rescore", str(bundle), "--out", str(out), "--resamples", "200")
    report = assert_renders(out / "report.html", tmp_path / "locomo.png", min_figures=9)
    # six stores, one BM25 run each: every run is a row of the forest plot's figure
    assert len(read_bundle(bundle).config.runs) == 6
    assert any("shift source-raw" in box.label for box in report.svgs)


def test_suite_html_renders(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for name in ("Dialogue/sample/one", "Episodic/sample-copy/two"):
        shutil.copytree(sample_bundle_dir, tasks / name)
    out = tmp_path / "suite"
    tiap_cli.ok("rescore", str(tasks), "--out", str(out), "--resamples", "50")
    assert_renders(out / "suite.html", tmp_path / "suite.png", min_figures=2)
    assert_renders(out / "Dialogue/sample/one" / "report.html", tmp_path / "one.png", min_figures=9)


#: the table of contents: its links, whether each leads to a section (a ``<details>``
#: whose summary is the link's heading), and the scripts on the page
CONTENTS = """
(() => {
  const links = [...document.querySelectorAll('nav.toc a')];
  return {
    links: links.map((a) => {
      const target = document.getElementById(a.getAttribute('href').slice(1));
      const summary = target && target.querySelector(':scope > summary');
      return [a.textContent, target ? target.tagName.toLowerCase() : null,
              target ? target.open : null, summary ? summary.textContent : null];
    }),
    details: document.querySelectorAll('details').length,
    scripts: document.querySelectorAll('script').length,
    backticks: document.body.innerText.split('`').length - 1,
  };
})()
"""


def test_report_html_has_a_table_of_contents_and_collapsible_sections(
    sample_bundle_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sample"
    write_outputs(rescore_bundle(read_bundle(sample_bundle_dir), resamples=300), out)
    assert_renders(out / "report.html", tmp_path / "sample.png", min_figures=9)
    found = render_page(out / "report.html", extra=CONTENTS).extra
    assert found["scripts"] == 0
    assert found["backticks"] == 0  # code in the report's own text is shown as code
    names = [name for name, *_ in found["links"]]
    assert names[:2] == ["Means per run and target", "Paired differences on shared subsets"]
    assert "Conventions" in names
    assert found["details"] == len(names) >= 10
    for name, tag, is_open, summary in found["links"]:
        assert (tag, is_open, summary) == ("details", True, name)
