"""``report.md`` and ``report.html`` show rater names, labels and datasets inert and
literal; ``report.json`` keeps them as given."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

from tiap.agreement import compute_report, labels_from_file, write_report

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
RATER = "a|b [x](http://y) \x1b]0;PWNED\x07"
LABEL = "# y`e`s\x1b[31m"
DATASET = "- d\u202ea\n|ta"


def _report(tmp_path: Path) -> Path:
    rows = [
        {"case_id": f"c{i}", "rater": rater, "label": label, "dataset": DATASET}
        for i in range(6)
        for rater, label in ((RATER, LABEL if i % 2 else "no"), ("plain", "no"), ("h", "no"))
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    write_report(compute_report(labels_from_file(path), resamples=0), out)
    return out


def _cells(row: str) -> list[str]:
    """A Markdown table row split at its unescaped pipes."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_markdown_tables_keep_their_shape_and_show_placeholders(tmp_path: Path) -> None:
    md = (_report(tmp_path) / "report.md").read_text(encoding="utf-8")
    assert UNSAFE.search(md) is None
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| rater | kind"))
    end = lines.index("", start)
    header, rows = lines[start], lines[start + 2 : end]  # the raters table
    assert len(rows) == 3
    assert {len(_cells(r)) for r in rows} == {len(_cells(header))}
    assert _cells(rows[0])[0] == "a\\|b \\[x\\](http://y) ␛\\]0;PWNED␇"
    assert "\\# y\\`e\\`s␛\\[31m" in header  # a label is a column of the raters table
    # the dataset (with a newline) stays in its prevalence row
    assert any(line.startswith("| \\- d\\\\u202ea \\|ta |") for line in lines)


def test_html_and_svg_show_placeholders_json_keeps_the_text(tmp_path: Path) -> None:
    out = _report(tmp_path)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert UNSAFE.search(page) is None
    assert "a|b [x](http://y) ␛]0;PWNED␇" in page
    for fragment in re.findall(r"<svg .*?</svg>", page, flags=re.DOTALL):
        ElementTree.fromstring(fragment)  # well-formed XML: no control character
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert RATER in report["included_raters"]
    assert LABEL in report["labels"]
    assert DATASET in report["prevalence"]["by_dataset"]
