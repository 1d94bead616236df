"""Every ``--help`` of the ``tiap`` command tree reads as written: brackets shown,
help texts whole, one-paragraph summaries, capitalised metavars."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tiap.cli import main
from tiap.cli.root import command

_BRACKETS = re.compile(r"\[[^\]]*\]")
#: typer's own metavars: <path>, <str>, <int range>, <list[str]>, ...
_TYPER_METAVAR = re.compile(r"<(?:bool|path|str|int|float|list\[\w+\])(?: range)?>")


def _walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _walk(sub, [*path, name])


COMMANDS = list(_walk(command(), []))


def _help(capsys: pytest.CaptureFixture[str], path: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main([*path, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: tiap")
    return out


def _squash(text: str) -> str:
    """Without whitespace: help is re-wrapped (and may break after a hyphen)."""
    return re.sub(r"\s+", "", text)


def _texts(cmd: Any) -> list[str]:
    """The command's own help text and every parameter's help."""
    texts = [cmd.help or ""]
    texts += [getattr(p, "help", None) or "" for p in cmd.params]
    return [t for t in texts if t]


def test_the_tree_has_every_command_of_the_contract() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    for expected in (
        "demo",
        "audit",
        "rescore",
        "traces build locomo",
        "traces import locomo",
        "traces export lmeb",
        "cases sample",
        "judge run",
        "annotate tui",
        "annotate labelstudio push",
        "agreement report",
        "labels export",
        "labels import",
    ):
        assert expected in paths


@pytest.mark.parametrize(
    ("path", "cmd"), COMMANDS, ids=[" ".join(p) or "tiap" for p, _ in COMMANDS]
)
def test_help_shows_every_text_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: list[str], cmd: Any
) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    out = _help(capsys, path)
    flat = _squash(out)
    for text in _texts(cmd):
        assert _squash(text) in flat, f"help text not shown whole: {text!r}"
        for bracket in _BRACKETS.findall(text):
            assert _squash(bracket) in flat, f"bracket swallowed: {bracket!r}"
    assert "<bool>" not in out
    assert not re.search(r"\{[a-z_]+\}", out), out
    assert not _TYPER_METAVAR.search(out), out
    assert "\x1b" not in out
    # the summary is one paragraph: from the usage line to the first section
    summary = out.split("\n\n")[1] if cmd.help else ""
    if cmd.help:
        assert _squash(summary) == _squash(cmd.help.split("\n\n")[0])


def test_bracketed_default_of_cases_sample_is_shown(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    out = " ".join(_help(capsys, ["cases", "sample"]).split())
    assert "Cases a second reviewer also labels [default: 36/115 of --n]." in out
    assert "Usage: tiap cases sample [OPTIONS]" in out
    assert "--db PATH" in out


def test_arguments_are_capitalised_in_usage(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, ["audit"])
    assert out.splitlines()[0] == "Usage: tiap audit [OPTIONS] BUNDLE"
    assert "  BUNDLE  Trace bundle directory; with --mode qrels:" in " ".join(out.split("\n"))
    out = _help(capsys, ["cases", "rename-rater"])
    assert out.splitlines()[0] == "Usage: tiap cases rename-rater [OPTIONS] OLD NEW"


def test_traces_help_names_exactly_its_commands(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, ["traces"])
    listed = re.findall(r"^  ([a-z-]+)  ", out.split("Commands:")[1], re.MULTILINE)
    assert listed == ["build", "import", "export"]
    summary = " ".join(out.split("\n\n")[1].split())
    assert summary == (
        "Trace bundles: build them from benchmark files, import a memory system's exports as "
        "one, or export one as an LMEB/BEIR task directory."
    )


def test_retriever_help_and_error_name_the_same_retrievers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tiap.traces.retrieve import RETRIEVERS

    out = " ".join(_help(capsys, ["traces", "build", "locomo"]).split())
    help_text = out.split("-r, --retriever TEXT")[1].split(" -k, --k")[0]
    data = tmp_path / "l.json"
    data.write_text("[]", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["traces", "build", "locomo", str(data), "--out", str(tmp_path / "o"), "-r", "x"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    known = re.search(r"unknown retriever 'x' \(known: ([^)]*)\)", err)
    assert known is not None, err
    names = known.group(1).split(", ")
    assert names == [*RETRIEVERS, "none"]
    for name in names:
        assert re.search(rf"\b{name}\b", help_text), (name, help_text)


def test_top_level_help_loads_no_data_models() -> None:
    """``tiap --help`` (and every command's start) reads only the option tables: not
    tiap's data models (typer itself imports pydantic), the bundle reader, numpy or
    litellm."""
    code = (
        "import sys; from tiap.cli import main\n"
        "try:\n    main(['traces', 'build', 'beam', '--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('tiap.traces.models', 'tiap.traces.bundle', 'tiap.traces.beam', 'numpy', "
        "'litellm')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--max-chars" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]"
