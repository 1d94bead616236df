"""The audit's index quotes names, paths and messages from data: inert and escaped
in ``index.md`` and ``index.html``."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

from support.markdown_render import md_tags
from tiap.audit.index_page import write_index
from tiap.audit.outcome import AuditContext
from tiap.audit.steps import StepName, StepRecord, StepRun, step_title

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SUBSET = "val|x\x1b[31m"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)


def _write(out: Path) -> tuple[str, str]:
    context = AuditContext(
        bundle="bundles/<script>alert(1)</script>",
        dataset="loco\x1b]0;PWNED\x07mo",
        panel="p*an*el",
        judges=["j[1](http://x)", "j`2`", "j_3_"],
        rubric="contested-credit",
        rubric_hash="0123456789abcdef",
        workspace="w\u202eorks.sqlite",
        subset=SUBSET,
        humans="required",
    )
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = StepRecord(
        step=StepName.JUDGE_SUBSET,
        title=step_title(StepName.JUDGE_SUBSET, SUBSET),
        runs=[StepRun(at=at, status="failed", detail="judge said | # no\n- list \x9b2J")],
    )
    out.mkdir()
    md_path, html_path = write_index(
        out, context, [record], "failed", "provider: \x1b[2J<b>&amp;</b>", "tiap x --db w"
    )
    return md_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")


def test_index_markdown_is_inert_and_literal(tmp_path: Path) -> None:
    md, _ = _write(tmp_path / "a")
    assert UNSAFE.search(md) is None
    assert not {"script", "b", "img"} & md_tags(md)  # links: its own
    assert "bundles/\\<script\\>alert(1)\\</script\\>" in md
    assert "dataset loco␛\\]0;PWNED␇mo" in md
    # inside a word, _ cannot start emphasis: only the last one is escaped
    assert "panel p\\*an\\*el (j\\[1\\](http://x), j\\`2\\`, j_3\\_)" in md
    assert "workspace w\\\\u202eorks.sqlite" in md  # renders as w\u202eorks
    assert "Status: failed — provider: ␛\\[2J\\<b\\>\\&amp;\\</b\\>." in md
    # the step row stays one row of five cells: no cell break, no line break
    row = next(line for line in md.splitlines() if line.startswith("| judge subset"))
    assert row == (
        "| judge subset 'val\\|x␛\\[31m' | failed | judge said \\| # no - list \\\\x9b2J "
        "| 2026-01-02 03:04:05 UTC |  |"
    )


def test_index_html_is_inert_and_escaped(tmp_path: Path) -> None:
    _, page = _write(tmp_path / "a")
    assert UNSAFE.search(page) is None
    tags = _Tags()
    tags.feed(page)
    assert tags.names.isdisjoint({"script", "b"})
    assert "bundles/&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "loco␛]0;PWNED␇mo" in page
    assert "judge said | # no\n- list \\x9b2J" in page
