"""``report.html`` in a real browser (headless Chromium over the DevTools protocol): the
page loads without console errors, every figure has a box, no label is cut off and
nothing overflows the page width; for the sample bundle, LoCoMo and a suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.browser import assert_renders, chromium_or_skip
from tiap.cli import main
from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.traces.bundle import read_bundle


def _run(args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code in (0, None)


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
def test_locomo_report_html_renders(shared_data_dir: Path, tmp_path: Path) -> None:
    source = shared_data_dir / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo not found at {source} (shared data folder without it)")
    chromium_or_skip()
    bundle = tmp_path / "locomo"
    _run(["traces", "build", "locomo", str(source), "--out", str(bundle), "-q"])
    out = tmp_path / "rescore"
    _run(["rescore", str(bundle), "--out", str(out), "--resamples", "200"])
    report = assert_renders(out / "report.html", tmp_path / "locomo.png", min_figures=9)
    # six stores, one BM25 run each: every run is a row of the forest plot's figure
    assert len(read_bundle(bundle).config.runs) == 6
    assert any("shift source-raw" in box.label for box in report.svgs)


def test_suite_html_renders(sample_bundle_dir: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for name in ("Dialogue/sample/one", "Episodic/sample-copy/two"):
        shutil.copytree(sample_bundle_dir, tasks / name)
    out = tmp_path / "suite"
    _run(["rescore", str(tasks), "--out", str(out), "--resamples", "50"])
    assert_renders(out / "suite.html", tmp_path / "suite.png", min_figures=2)
    assert_renders(out / "Dialogue/sample/one" / "report.html", tmp_path / "one.png", min_figures=9)
