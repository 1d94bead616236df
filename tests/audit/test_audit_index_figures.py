"""The audit's index shows the key rescore figures (inline SVG) and names each design
group by the settings it holds fixed."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

from tiap.audit import AuditSettings, run_audit


def test_index_embeds_rescore_figures_and_names_design_groups(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = tmp_path / "audit"
    settings = AuditSettings(
        bundle=sample_bundle_dir,
        out=out,
        panel="offline",
        n=6,
        overlap=2,
        humans="skip",
        force=True,
        progress=False,
        rescore_resamples=200,
        agreement_resamples=50,
    )
    outcome = run_audit(settings, say=lambda line: None)
    assert outcome.status == "complete"
    assert (out / "rescore" / "report.html").is_file()
    page = (out / "index.html").read_text(encoding="utf-8")
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.DOTALL)
    labels = [ElementTree.fromstring(s).get("aria-label") or "" for s in svgs]
    assert any("shift canonical-raw" in label for label in labels)
    assert any("shift source-raw" in label for label in labels)
    assert any("Paired differences" in label for label in labels)
    assert 'href="rescore/report.html"' in page
    index_md = (out / "index.md").read_text(encoding="utf-8")
    assert "<svg" not in index_md
    # the sample's parser_max_facts family holds the retriever fixed: the line says so
    assert "Best parser_max_facts (retriever=tfidf-cosine) on ndcg@10" in index_md
