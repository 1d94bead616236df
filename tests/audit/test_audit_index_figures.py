"""The audit's index shows the key rescore figures (inline SVG) and names each design
group by the settings it holds fixed; in a real browser (headless Chromium) the page
loads cleanly, every figure has a box, no label is cut off and nothing is wider
than the page."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

from support.browser import assert_renders


def test_index_embeds_rescore_figures_and_names_design_groups(
    audit_complete, tmp_path: Path
) -> None:
    # the API's audit of the sample (n=6, overlap=2, humans skipped, forced, rescore
    # resamples 200, agreement resamples 50), once per session
    out = audit_complete.root / "audit"
    outcome = audit_complete.made.outcome
    assert outcome.status == "complete"
    assert (out / "rescore" / "report.html").is_file()
    page = (out / "index.html").read_text(encoding="utf-8")
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.DOTALL)
    labels = [ElementTree.fromstring(s).get("aria-label") or "" for s in svgs]
    assert any("shift canonical-raw" in label for label in labels)
    assert any("shift source-raw" in label for label in labels)
    assert any("Paired differences" in label for label in labels)
    assert 'href="rescore/report.html"' in page
    shown = assert_renders(out / "index.html", tmp_path / "index.png", min_figures=3)
    assert [box.label for box in shown.svgs] == labels
    index_md = (out / "index.md").read_text(encoding="utf-8")
    assert "<svg" not in index_md
    # the sample's parser_max_facts family holds the retriever fixed: the line says so
    assert "Best parser_max_facts (retriever=tfidf-cosine) on ndcg@10" in index_md
