"""Data text in the rescoring reports stays inert: report.md, report.html, the figures."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest

from bundle_support import make_bundle, mem
from support.markdown_render import md_tags
from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.text import inert as visible
from tiap.text import inert_html as html
from tiap.text import inert_md as md
from tiap.traces.models import StoreConfig

SCRIPT = "<script>alert(1)</script>"
HOSTILE_CATEGORY = f"{SCRIPT} | `x` [link](http://e.test) # \x1b[31mred\x1b[0m\nnext"
HOSTILE_RUN = "run|<b>`one`</b>"
HOSTILE_STORE = "st[1]<i>"
HOSTILE_DATASET = "# data<set>&\u202eevil"
HOSTILE_SETTING = "<img src=x onerror=alert(2)>|*bold*"


def test_visible_shows_control_characters() -> None:
    # the reports' text function is tiap.text's: newline and tab kept (Markdown cells
    # fold whitespace), C1 controls and bidi overrides as escapes
    assert visible("a\x1b[31mb\x07\n\t\x7f") == "a␛[31mb␇\n\t␡"
    assert visible("x\u202eyz\x9b") == "x\\u202eyz\\x9b"
    assert visible("plain ünïcode 名前") == "plain ünïcode 名前"


def test_md_escapes_markup_and_controls() -> None:
    assert md("a|b") == "a\\|b"
    assert md("`code`") == "\\`code\\`"
    assert md("<b>&") == "\\<b\\>\\&"
    assert md("[x](y)") == "\\[x\\](y)"
    assert md("# heading") == "\\# heading"
    assert md("mid # not") == "mid # not"
    assert md("two\nlines") == "two lines"
    assert md("back\\slash|") == "back\\\\slash\\|"
    assert md("*em* _em_ single_hop") == "\\*em\\* \\_em\\_ single_hop"
    assert md("\x1b[2J") == "␛\\[2J"


def test_html_escapes_and_shows_controls() -> None:
    assert html('<a href="x">&\x1b') == "&lt;a href=&quot;x&quot;&gt;&amp;␛"


def _hostile_report(tmp_path: Path) -> Path:
    memories = [mem("r1", "s1", "raw"), mem("f1", "s1", "fact"), mem("r2", "s2", "raw")]
    memories += [mem("f2", "s2", "fact"), mem("r3", "s3", "raw")]
    bundle = make_bundle(
        {"q1": ["s1"], "q2": ["s2"], "q3": ["s3"]},
        {HOSTILE_STORE: memories, "plain": memories},
        {
            HOSTILE_RUN: (HOSTILE_STORE, {"q1": ["f1", "r1"], "q2": ["r2"], "q3": ["r3"]}),
            "other": ("plain", {"q1": ["r1"], "q2": ["f2", "r2"], "q3": []}),
        },
        categories={"q1": HOSTILE_CATEGORY, "q2": "plain", "q3": HOSTILE_CATEGORY},
    )
    bundle.config.dataset = HOSTILE_DATASET
    bundle.config.name = SCRIPT
    bundle.config.stores = {
        HOSTILE_STORE: StoreConfig(config={"parser_max_facts": HOSTILE_SETTING}),
        "plain": StoreConfig(config={"parser_max_facts": 3}),
    }
    out = tmp_path / "out"
    write_outputs(rescore_bundle(bundle, ks=(3,), resamples=50), out)
    return out


def _table_widths(md_text: str) -> list[int]:
    """Cells per table line, counting only unescaped pipes."""
    return [
        len(re.findall(r"(?<!\\)\|", line)) - 1
        for line in md_text.splitlines()
        if line.startswith("|")
    ]


def test_hostile_names_in_report_md_are_escaped(tmp_path: Path) -> None:
    text = (_hostile_report(tmp_path) / "report.md").read_text(encoding="utf-8")
    assert SCRIPT not in text
    assert not {"script", "b", "img", "a"} & md_tags(text)
    assert "\\<script\\>alert(1)\\</script\\>" in text
    assert "\x1b" not in text
    assert "␛\\[31mred" in text
    assert "\u202e" not in text
    assert "\\\\u202e" in text  # the placeholder \u202e, its backslash escaped
    assert "run\\|\\<b\\>\\`one\\`\\</b\\>" in text
    assert "# Target sensitivity: \\# data\\<set\\>\\&\\\\u202eevil" in text
    # every table keeps its shape: the escaped pipes do not split cells
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines
    tables: list[list[str]] = []
    previous = False
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous:
                tables.append([])
            tables[-1].append(line)
        previous = line.startswith("|")
    for rows in tables:
        widths = _table_widths("\n".join(rows))
        assert len(set(widths)) == 1, rows[0]
    # the hostile category is one line (its newline shown, not kept)
    assert sum("red␛" in line for line in text.splitlines()) >= 1
    assert not any(line.startswith("next") for line in text.splitlines())


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        #: the links of the table of contents (the page's own, to its sections)
        self.contents: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") or ""
        if tag == "a" and attrs == [("href", href)] and re.fullmatch(r"#section-\d+", href):
            self.contents.append(href)
            return
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def test_hostile_names_in_report_html_are_escaped(tmp_path: Path) -> None:
    text = (_hostile_report(tmp_path) / "report.html").read_text(encoding="utf-8")
    assert "<script" not in text.lower()
    assert "\x1b" not in text
    assert "\u202e" not in text
    parser = _Tags()
    parser.feed(text)
    assert not {"script", "img", "b", "i", "a", "iframe"} & set(parser.tags)
    assert not [a for a in parser.attrs if a.startswith("on")]
    assert len(parser.contents) >= 10  # the only links: the table of contents'
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    svgs = re.findall(r"<svg .*?</svg>", text, flags=re.DOTALL)
    assert len(svgs) >= 5
    for fragment in svgs:  # every figure is well-formed XML, names included
        assert ElementTree.fromstring(fragment).tag == "{http://www.w3.org/2000/svg}svg"
    assert any("run|&lt;b&gt;`one`&lt;/b&gt;" in f for f in svgs)


@pytest.mark.parametrize("name", ["report.md", "report.html", "report.json"])
def test_reports_are_byte_identical_across_writes(tmp_path: Path, name: str) -> None:
    first = (_hostile_report(tmp_path / "a") / name).read_bytes()
    second = (_hostile_report(tmp_path / "b") / name).read_bytes()
    assert first == second
