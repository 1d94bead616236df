"""The ``tiap`` command prints text from data inert: no escape sequence or control
character of a case, a name, a label or a message reaches the terminal, while
``--json`` keeps the stored text exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_cli_errors import assert_one_line_error
from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace
from tiap.cli.root import fail
from tiap.text import inert

#: every C0/C1 control but newline and tab, DEL, bidi overrides and isolates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

MEMORY = (
    "Caroline \x1b]0;PWNED\x07went \x1b[31mred\x1b[0m \x1b]52;c;UFdORUQ=\x07 "
    "\x1b[3;2H\x1b[2Kover \x1bP1$r\x1b\\ \x9b31m \u202eevil\u2069 [b]x[/b] \x7f"
)
QUESTION = "When \x1b]2;TITLE\x1b\\did\r she \x08\x08go?"


def _case(i: int) -> Case:
    return Case(
        case_id=f"c{i}",
        dataset="loco\x1b[7mmo",
        run="run-\x1b[1m",
        store="st\x1b]0;S\x07",
        query_id=f"q{i}\x1b[2J",
        query_index=i,
        question=QUESTION,
        answer="7 May \x1b[5m2023",
        category="temporal\x9b",
        evidence=[
            EvidenceItem(
                source_id="D1:1", text="I went \x1b[41mthere\x1b[0m", speaker="Caro\x1b[5mline"
            )
        ],
        memory_id="fact-\x1b]8;;http://x\x1b\\",
        memory_text=MEMORY,
        memory_source_ids=["D1:1"],
        rank=3,
        rank_bucket=rank_bucket(3),
        k=60,
    )


def _workspace(path: Path) -> Path:
    with Workspace(path) as ws:
        ws.add_cases([_case(0), _case(1)])
        ws.save_subset("val\x1b[31m", ["c0", "c1"])
        ws.add_label(
            LabelRecord(
                case_id="c0",
                rater="judge\x1b]0;J\x07",
                rater_kind="judge",
                label=None,
                reason="provider said \x1b[2J\x1b[H [red]boom[/red]",
                origin="test",
            )
        )
    return path


def _assert_inert(*outputs: str) -> None:
    for out in outputs:
        found = UNSAFE.search(out)
        assert found is None, f"{found!r} in {out!r}"


def test_cases_show_prints_placeholders(tiap_cli, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    proc = tiap_cli("cases", "show", "c0", "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout, proc.stderr)
    assert f"  {inert(MEMORY)}" in proc.stdout.splitlines()
    assert f"question: {inert(QUESTION)}" in proc.stdout
    assert "question: When ␛]2;TITLE␛\\did␍ she ␈␈go?" in proc.stdout
    assert "dataset loco␛[7mmo" in proc.stdout
    assert "[D1:1 | Caro␛[5mline] I went ␛[41mthere␛[0m" in proc.stdout
    assert "judge␛]0;J␇ [judge]: (none: provider said ␛[2J␛[H [red]boom[/red])" in proc.stdout


def test_cases_show_json_keeps_the_stored_text(tiap_cli, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    proc = tiap_cli("cases", "show", "c0", "--db", str(db), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["case"]["memory_text"] == MEMORY
    assert data["case"]["question"] == QUESTION
    assert data["labels"][0]["rater"] == "judge\x1b]0;J\x07"
    assert "\x1b" not in proc.stdout  # JSON escapes C0 controls itself (\u001b)
    listed = tiap_cli("cases", "list", "--db", str(db), "--json", cwd=tmp_path)
    assert [json.loads(line)["memory_text"] for line in listed.stdout.splitlines()] == [
        MEMORY,
        MEMORY,
    ]


def test_cases_list_prints_placeholders_in_aligned_columns(tiap_cli, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    proc = tiap_cli("cases", "list", "--db", str(db), "--subset", "val\x1b[31m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["case_id", "run", "query_id", "rank", "bucket", "memory"]
    assert lines[1].split()[:6] == ["c0", "run-␛[1m", "q0␛[2J", "3", "1-5", "Caroline"]
    assert "Caroline ␛]0;PWNED␇went ␛[31mred␛[0m" in lines[1]
    # columns line up: the memory column starts at the same place on every row
    start = lines[0].index("memory")
    assert all(line[start:].startswith("Caroline ") for line in lines[1:3])
    assert lines[-1] == "2 cases"


def test_cases_subsets_and_errors_quoting_data_are_inert(tiap_cli, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    proc = tiap_cli("cases", "subsets", "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout)
    assert proc.stdout.startswith("val␛[31m: 2 cases")
    # an argument echoed in an error, and a rename quoting rater names
    proc = tiap_cli("cases", "show", "c\x1b]0;X\x07", "--db", str(db), cwd=tmp_path)
    line = assert_one_line_error(proc, "no case 'c␛]0;X␇'")
    _assert_inert(line)
    proc = tiap_cli(
        "cases", "rename-rater", "judge\x1b]0;J\x07", "j\x1b[1m", "--kind", "judge",
        "--db", str(db), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout)
    assert "labels of judge 'judge␛]0;J␇' to 'j␛[1m'" in proc.stdout


def test_agreement_summary_lines_are_inert(tiap_cli, tmp_path: Path) -> None:
    rows = [
        {"case_id": f"c{i}", "rater": rater, "label": label, "dataset": "d\x1b[31m"}
        for i in range(6)
        for rater, label in (
            ("r\x1b]0;PWNED\x07", "y\x1b[1mes" if i % 2 else "no"),
            ("plain", "no"),
            ("h\u202e", "no"),
        )
    ]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = tiap_cli(
        "agreement", "report", "--labels", str(labels), "--out", str(out), "--resamples", "0",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout, proc.stderr)
    assert "r␛]0;PWNED␇" in proc.stdout
    assert "y␛[1mes" in proc.stdout
    assert "h\\u202e" in proc.stdout
    # the reports show the same placeholders; report.json keeps the labels as given
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    _assert_inert(md, page)
    assert "r␛\\]0;PWNED␇" in md  # Markdown-escaped too
    assert "r␛]0;PWNED␇" in page
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert "r\x1b]0;PWNED\x07" in report["included_raters"]
    assert "y\x1b[1mes" in report["labels"]


# In-process: the printing helpers every command uses.


def test_judge_summary_table_is_inert_and_not_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from tiap.cli.judge_display import print_summary as _print_summary
    from tiap.judge.summary import JudgeTally, RunSummary

    tally = JudgeTally(
        judge="j1",
        kind="llm",
        model="openai/m\x1b[31m",
        calls=3,
        invalid={"provider [/oops] \x1b]0;PWNED\x07": 2},
        error="401 \x1b[2J[bold]denied[/bold]",
    )
    summary = RunSummary(
        panel="p\x1b]0;P\x07[red]",
        rubric_id="r",
        rubric_hash="h",
        subset=None,
        cases=3,
        judges=[tally],
    ).finish()
    _print_summary(summary)
    out = capsys.readouterr().out
    _assert_inert(out)
    assert "panel p␛]0;P␇[red], rubric r" in out
    assert "provider [/oops] ␛]0;PWNED␇ 2" in out
    with pytest.raises(SystemExit) as info:
        fail("judges stopped: " + "; ".join(summary.errors))
    assert info.value.code == 2
    err = capsys.readouterr().err
    _assert_inert(err)
    assert err == "tiap: error: judges stopped: j1: 401 ␛[2J[bold]denied[/bold]\n"


def test_echo_is_inert_and_echo_json_is_exact(capsys: pytest.CaptureFixture[str]) -> None:
    from tiap.annotate.labelstudio.models import PushResult
    from tiap.cli.output import echo, echo_json

    result = PushResult(
        url="http://127.0.0.1:1",
        project_id=1,
        project="tiap \x1b]0;PWNED\x07",
        created=True,
        tasks_added=2,
        tasks_present=0,
        predictions_added=0,
    )
    echo(result.summary())
    echo("multi\nline\ttab \x1b[31m", err=True)
    echo_json(json.dumps({"project": result.project}, ensure_ascii=False))
    got = capsys.readouterr()
    lines = got.out.splitlines()
    assert lines[0].startswith("project 'tiap ␛]0;PWNED␇' (id 1, created)")
    assert json.loads(lines[1]) == {"project": "tiap \x1b]0;PWNED\x07"}
    assert got.err == "multi\nline\ttab ␛[31m\n"


def test_error_messages_are_one_inert_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        fail("a\nb\x1c\x85c \x1b]0;T\x07")
    assert capsys.readouterr().err == "tiap: error: a b␜\\x85c ␛]0;T␇\n"
