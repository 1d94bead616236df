"""``tiap.text``: text from data made inert for terminals, Markdown and HTML."""

from __future__ import annotations

import re
import unicodedata

import pytest

from support.markdown_render import md_tags, md_text
from tiap.text import inert, inert_html, inert_md

#: every character a terminal may act on, except newline and tab
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A)]
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

SEQUENCES = {
    "csi colour": ("\x1b[31mred\x1b[0m", "␛[31mred␛[0m"),
    "csi cursor": ("\x1b[3;2H\x1b[2Kover", "␛[3;2H␛[2Kover"),
    "osc title (bel)": ("\x1b]0;PWNED\x07", "␛]0;PWNED␇"),
    "osc title (st)": ("\x1b]2;PWNED\x1b\\", "␛]2;PWNED␛\\"),
    "osc clipboard": ("\x1b]52;c;aGk=\x07", "␛]52;c;aGk=␇"),
    "osc hyperlink": ("\x1b]8;;http://x\x1b\\a\x1b]8;;\x1b\\", "␛]8;;http://x␛\\a␛]8;;␛\\"),
    "dcs": ("\x1bP1$r0m\x1b\\", "␛P1$r0m␛\\"),
    "apc": ("\x1b_Gf=100;AAAA\x1b\\", "␛_Gf=100;AAAA␛\\"),
    "pm": ("\x1b^private\x1b\\", "␛^private␛\\"),
    "sos": ("\x1bXstring\x1b\\", "␛Xstring␛\\"),
    "lone esc": ("a\x1bb", "a␛b"),
    "esc at the end": ("a\x1b", "a␛"),
    "8-bit csi": ("\x9b31m", "\\x9b31m"),
    "8-bit osc and st": ("\x9d0;t\x9c", "\\x9d0;t\\x9c"),
    "bel backspace cr": ("ab\x08\x08cd\rX\x07", "ab␈␈cd␍X␇"),
    "del": ("a\x7fb", "a␡b"),
    "nul": ("a\x00b", "a␀b"),
    "bidi override": ("abc\u202edcba\u202c", "abc\\u202edcba\\u202c"),
    "bidi isolate": ("\u2067x\u2069", "\\u2067x\\u2069"),
    "lone surrogate": ("x\ud800y", "x\\ud800y"),
}


@pytest.mark.parametrize(("raw", "shown"), SEQUENCES.values(), ids=SEQUENCES.keys())
def test_every_class_of_sequence_is_shown_as_placeholders(raw: str, shown: str) -> None:
    assert inert(raw) == shown
    assert UNSAFE.search(inert(raw)) is None


@pytest.mark.parametrize("ch", CONTROLS + BIDI, ids=lambda c: f"U+{ord(c):04X}")
def test_each_control_alone_becomes_a_visible_placeholder(ch: str) -> None:
    out = inert(f"a{ch}b")
    assert out.startswith("a")
    assert out.endswith("b")
    middle = out[1:-1]
    assert middle
    assert ch not in middle
    assert UNSAFE.search(out) is None
    # the placeholder is printable: a Control Picture or an ASCII escape like \x9b
    assert all(unicodedata.category(c) in ("So", "Ll", "Nd", "Po") for c in middle), middle


def test_c0_controls_use_control_pictures() -> None:
    assert inert("\x1b") == "\u241b"  # ␛
    assert inert("\x07") == "\u2407"  # ␇
    assert inert("\x00\x1f\x7f") == "\u2400\u241f\u2421"


@pytest.mark.parametrize(
    "text",
    [*(raw for raw, _ in SEQUENCES.values()), "".join(CONTROLS + BIDI), "plain", ""],
)
def test_idempotent(text: str) -> None:
    once = inert(text)
    assert inert(once) == once
    assert inert_md(once) == inert_md(text)
    assert inert_html(once) == inert_html(text)


@pytest.mark.parametrize(
    "text",
    [
        "plain ASCII text, with punctuation: [a] (b) {c} <d> & 'e' \"f\" | `g` * _h_ # i",
        "line one\nline two\n\tindented\n",
        "wide: 漢字かな 한국어 😀👩‍👩‍👧 and combining: e\u0301 n\u0303 a\u0308\u0301",
        "right-to-left text as written: שלום עולם مرحبا",  # no override: untouched
        "backslash escapes stay literal: \\x1b \\u202e \\n",
        "\u2028\u00a0\u200b\ufeff",  # separators and invisible formatting are not controls
    ],
)
def test_plain_text_is_unchanged(text: str) -> None:
    out = inert(text)
    assert out == text
    assert out.encode("utf-8") == text.encode("utf-8")
    assert out is text  # nothing copied


def test_newline_and_tab_are_kept_around_controls() -> None:
    assert inert("a\tb\n\x1b[2Jc\r\n") == "a\tb\n␛[2Jc␍\n"


def test_other_objects_are_shown_as_their_str() -> None:
    assert inert(12) == "12"
    assert inert(None) == "None"


# ------------------------------------------------------------------ Markdown


@pytest.mark.parametrize(
    ("raw", "md"),
    [
        ("a|b", "a\\|b"),
        ("`code`", "\\`code\\`"),
        ("<script>alert(1)</script>", "\\<script\\>alert(1)\\</script\\>"),
        ("&amp; & x", "\\&amp; \\& x"),
        ("[link](http://x) ![img](y)", "\\[link\\](http://x) !\\[img\\](y)"),
        (
            "*bold* **b** _em_ ~~strike~~ $math$",
            "\\*bold\\* \\*\\*b\\*\\* \\_em\\_ \\~\\~strike\\~\\~ \\$math\\$",
        ),
        ("snake_case_name", "snake_case_name"),  # inside a word: never emphasis
        ("# heading", "\\# heading"),
        ("### h3", "\\### h3"),
        ("#hashtag", "#hashtag"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("---", "\\---"),
        ("===", "\\==="),
        ("1. first", "1\\. first"),
        ("2) second", "2\\) second"),
        ("> quote", "\\> quote"),
        ("-0.25", "-0.25"),
        ("--no-humans: judges only", "--no-humans: judges only"),
        ("1.5 points", "1.5 points"),
        ("two\nlines\tand  spaces", "two lines and spaces"),
        ("back\\slash", "back\\\\slash"),
        ("\x1b[31mred", "␛\\[31mred"),
        ("\x9b", "\\\\x9b"),
    ],
)
def test_markdown_escaping(raw: str, md: str) -> None:
    assert inert_md(raw) == md


HOSTILE_MD = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "&amp; &lt;b&gt; &#60;i&#62;",
    "<http://example.com> and https://example.com",
    "[link](http://x) ![img](y) [ref]",
    "*bold* **b** _em_ __strong__ ~~strike~~ `code`",
    "# heading",
    "> quote",
    "- item",
    "1. first",
    "a|b|c",
    "back\\slash \\<b\\>",
]


@pytest.mark.parametrize("raw", HOSTILE_MD)
def test_markdown_renders_as_the_text_it_escapes(raw: str) -> None:
    # a CommonMark renderer (independent of tiap) makes one paragraph of it, no other
    # element, and the reader sees the text as it was
    md = inert_md(raw)
    assert md_tags(md) == {"p"}
    assert md_text(md).strip() == raw


def test_markdown_cell_is_one_line_without_controls() -> None:
    raw = "a\nb|c\r\n\x1b]0;t\x07\u202e\x85d"
    md = inert_md(raw)
    assert "\n" not in md
    assert "\r" not in md
    assert UNSAFE.search(md) is None
    assert md.count("|") == md.count("\\|") == 1
    assert "\\x85" in md  # NEL is a control, shown; not taken for whitespace


# ---------------------------------------------------------------------- HTML


def test_html_is_escaped_and_inert() -> None:
    raw = "<b a=\"1\" b='2'>&\x1b[31m\u202e</b>"
    out = inert_html(raw)
    assert out == "&lt;b a=&quot;1&quot; b=&#x27;2&#x27;&gt;&amp;␛[31m\\u202e&lt;/b&gt;"
    assert inert_html("\"'", quote=False) == "\"'"
    assert UNSAFE.search(out) is None


def test_the_inert_console_shows_every_text_inert_and_keeps_its_own_styles() -> None:
    import io

    from rich.progress import BarColumn, Progress, TextColumn
    from rich.table import Table
    from rich.text import Text

    from tiap.text import inert_console

    out = io.StringIO()
    console = inert_console(file=out, force_terminal=True, color_system="standard", width=100)
    table = Table(title="t\x1b]0;T\x07")
    table.add_column("name", style="bold")
    table.add_row("r\x1b[2J\u202e [red]x[/red]")
    console.print(table)
    console.print(Text("built raw \x1b]0;PWNED\x07 \u2066"))  # bypasses the string path
    console.print("plain [bold]markup[/bold] \x9b31m", style="green")
    with Progress(TextColumn("{task.description}"), BarColumn(), console=console) as bars:
        bars.add_task("judge \x1b]0;J\x07", total=2)
    text = out.getvalue()
    # only Rich's own SGR sequences remain: ESC [ digits;... m
    rest = re.sub(r"\x1b\[[0-9;]*m", "", text)
    rest = re.sub(r"\x1b\[\?25[lh]|\r|\x1b\[2K|\x1b\[1A", "", rest)  # the bar's cursor controls
    assert UNSAFE.search(rest) is None, repr(rest)
    assert "r␛[2J\\u202e [red]x[/red]" in rest  # laid out inert, markup as text
    assert "t␛]0;T␇" in rest
    assert "built raw ␛]0;PWNED \\u2066" in rest  # (Rich's Text drops the BEL itself)
    assert "plain [bold]markup[/bold] \\x9b31m" in rest
    assert "judge ␛]0;" in rest  # a description laid out raw: shown inert (and cut)
    assert "\x1b[1m" in text  # the column's bold style is still drawn
