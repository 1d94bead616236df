"""`tiap answers extract --reader MODEL`: a reader model's answers through the judges'
call path, against the real loopback OpenAI-compatible server: the prompt as documented,
answers written, a re-run answered from the store, retries, failures (exit 3, nothing
written), a budget stop that a re-run finishes without paying twice, the key kept out of
everything stored or printed, bad numbers refused, and rescore's answer F1 on them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from judge_support import KEY_ENV, SECRET

from support.loopback import Behaviour, LoopbackServer, Script, garbage, reply, status
from tiap.judge.reader import answer_of
from tiap.judge.reader_prompt import memory_line, reader_messages
from tiap.traces.answer_scoring import answer_scores
from tiap.traces.bundle import read_bundle
from tiap.traces.extractive import top_memories
from tiap.traces.models import Memory, Source

RUN = "lexical-raw"
_QUESTION_END = " Short answer:"


def question_of(body: dict[str, Any]) -> str:
    """The question of a reader request (the loopback server's key)."""
    text = body["messages"][-1]["content"]
    return text.rsplit("Question: ", 1)[1].removesuffix(_QUESTION_END)


def first_line_reply(body: dict[str, Any]) -> Behaviour:
    """The reader answers with the first line of its context, padded with white space."""
    text = body["messages"][-1]["content"]
    return reply("  " + text.split("\n", 1)[0] + " \n")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(Script(default=first_line_reply), key=question_of) as s:
        yield s


@pytest.fixture
def bundle_dir(sample_bundle_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_bundle_dir, tmp_path / "bundle"))


def reader_args(bundle: Path, db: Path, url: str, *more: str) -> list[str]:
    return [
        "answers",
        "extract",
        str(bundle),
        "--run",
        RUN,
        "--top",
        "3",
        "--reader",
        "openai/reader-model",
        "--api-base",
        url,
        "--api-key-env",
        KEY_ENV,
        "--db",
        str(db),
        "--concurrency",
        "1",
        "--quiet",
        *more,
    ]


def expected_answers(bundle: Path) -> dict[str, str]:
    """What the scripted reader answers, worked out from the bundle apart from the
    reader: the first distinct memory of the ranking, as a raw turn with its speaker
    and time (every memory of the sample's raw store is one)."""
    b = read_bundle(bundle)
    store = b.memories(b.run_store(RUN))
    out = {}
    for e in b.runs[RUN]:
        m = store[e.ranking[0]]
        src = b.sources[m.source_ids[0]]
        out[e.query_id] = f'{src.time}: {src.speaker} said, "{m.text}"'
    return out


def run_answers(bundle: Path) -> dict[str, str | None]:
    return {e.query_id: e.answer for e in read_bundle(bundle).runs[RUN]}


def db_text(db: Path) -> str:
    """Every cell of every table of the workspace, as text."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(repr(row) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"'))


# ---------------------------------------------------------------------------- prompt


def test_the_prompt_is_locomos_qa_prompt_over_the_context_lines() -> None:
    sources = {
        "s1": Source(source_id="s1", text="x", speaker="Ann", time="2023-05-08"),
        "s2": Source(source_id="s2", text="y", speaker="Bob", time="2023-05-09"),
        "s3": Source(source_id="s3", text="z", speaker="Ann"),
    }
    raw = Memory(memory_id="r", text="I paint.", source_ids=["s1"], raw=True, canonical=False)
    fact = Memory(memory_id="f", text="Ann paints", source_ids=["s1"], raw=False, canonical=True)
    summary = Memory(
        memory_id="m", text="They met.", source_ids=["s1", "s2"], raw=False, canonical=True
    )
    untimed = Memory(memory_id="u", text="Hi", source_ids=["s3"], raw=True, canonical=False)
    lines = [memory_line(m, sources) for m in (raw, fact, summary, untimed)]
    assert lines == [
        '2023-05-08: Ann said, "I paint."',
        "2023-05-08: Ann paints",  # a derived memory: its text, its one time
        "They met.",  # two times between its sources: none shown
        'Ann said, "Hi"',  # no time
    ]
    messages = reader_messages("What does Ann do?", lines[:2])
    assert messages == [
        {
            "role": "user",
            "content": '2023-05-08: Ann said, "I paint."\n2023-05-08: Ann paints\n\n'
            "Based on the above context, write an answer in the form of a short phrase for "
            "the following question. Answer with exact words from the context whenever "
            "possible.\n\nQuestion: What does Ann do? Short answer:",
        }
    ]
    mems = {m.memory_id: m for m in (raw, fact, summary)}
    # distinct memories, best first, cut at top
    assert [m.memory_id for m in top_memories(["f", "f", "r", "m"], mems, 2)] == ["f", "r"]


def test_the_command_lines_defaults_are_the_readers() -> None:
    from tiap.cli.answers_reader import READER_DEFAULTS
    from tiap.judge.reader_prompt import ReaderSettings

    settings = ReaderSettings(model="openai/x")
    assert READER_DEFAULTS["concurrency"] == settings.concurrency == 4
    assert READER_DEFAULTS["max_tokens"] == settings.max_tokens == 100
    assert READER_DEFAULTS["temperature"] == settings.temperature == 0.0
    assert READER_DEFAULTS["timeout"] == settings.timeout_s == 60.0
    assert READER_DEFAULTS["route"] == settings.route == "auto"


def test_a_reply_gives_an_answer_or_its_reason() -> None:
    assert answer_of({"content": "  Paris \n"}) == ("Paris", None)
    assert answer_of({"content": " \n"}) == (None, "empty")
    assert answer_of({"content": None, "refusal": "I cannot"}) == (None, "refusal")
    assert answer_of({"content": "long", "truncated": True}) == (None, "reply_too_large")


# ---------------------------------------------------------------- answers and cache


def test_answers_are_written_and_a_second_run_calls_nothing(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    db = tmp_path / "ws.db"  # absent: created
    expected = expected_answers(bundle_dir)
    result = tiap_cli(*reader_args(bundle_dir, db, server.url))
    assert result.code == 0, result.err
    assert run_answers(bundle_dir) == expected  # stripped of the reply's white space
    assert "37 of 37 queries answered" in result.out
    assert "reader: openai/reader-model answering LoCoMo's QA prompt" in result.out
    made = server.count
    assert made == len(set(server.per_key)) == 37  # one call per query, none repeated
    assert server.requests[0].authorization == f"Bearer {SECRET}"  # the key was used ...
    assert SECRET not in db_text(db)  # ... and never stored
    assert SECRET not in result.out + result.err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, request_json FROM model_calls").fetchall()
    assert len(rows) == 37
    assert {s for s, _ in rows} == {"ok"}
    request = json.loads(rows[0][1])
    assert request["model"] == "openai/reader-model"
    assert request["temperature"] == 0
    assert request["max_tokens"] == 100
    assert "api_key" not in request

    written = (bundle_dir / "runs" / f"{RUN}.jsonl").read_bytes()
    again = tiap_cli(*reader_args(bundle_dir, db, server.url, "--replace"))
    assert again.code == 0, again.err
    assert server.count == made  # every reply from the store: no request
    assert "37 stored replies, 0 calls" in again.out
    assert (bundle_dir / "runs" / f"{RUN}.jsonl").read_bytes() == written  # same bytes

    # the run now carries answers: refused without --replace, before any call
    refused = tiap_cli(*reader_args(bundle_dir, db, server.url))
    assert refused.code == 2
    assert "--replace" in refused.err


def test_rate_limits_server_errors_and_malformed_bodies_are_retried(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    questions = [q.question for q in read_bundle(bundle_dir).queries[:3]]
    server.script.add(questions[0], status(429, retry_after=0.01), status(429, retry_after=0.01))
    server.script.add(questions[1], status(500, retry_after=0.01))
    server.script.add(questions[2], garbage())
    result = tiap_cli(*reader_args(bundle_dir, tmp_path / "ws.db", server.url))
    assert result.code == 0, result.err
    assert "4 retries" in result.out
    assert server.per_key[questions[0]] == 3
    assert server.per_key[questions[1]] == 2
    assert server.per_key[questions[2]] == 2
    assert run_answers(bundle_dir) == expected_answers(bundle_dir)


def test_failed_replies_exit_3_and_write_nothing_until_complete(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    db = tmp_path / "ws.db"
    questions = [q.question for q in read_bundle(bundle_dir).queries]
    # six attempts (the retry policy's), each a server error
    server.script.add(questions[0], *[status(500, retry_after=0.01)] * 6)
    server.script.add(questions[1], reply("   "))  # an empty answer
    before = (bundle_dir / "runs" / f"{RUN}.jsonl").read_bytes()
    result = tiap_cli(*reader_args(bundle_dir, db, server.url))
    assert result.code == 3
    assert "2 of 37 answers missing" in result.err
    assert "server_error 1" in result.err
    assert "empty 1" in result.err
    assert "nothing was written" in result.err
    assert (bundle_dir / "runs" / f"{RUN}.jsonl").read_bytes() == before
    assert len(result.err.strip().splitlines()) == 1

    # the same command: the failed call is asked again, the stored empty reply is not
    made = server.count
    again = tiap_cli(*reader_args(bundle_dir, db, server.url))
    assert again.code == 3
    assert server.count == made + 1
    assert "1 of 37 answers missing" in again.err
    assert "empty 1" in again.err

    # --partial writes what there is; the query without an answer has none
    partial = tiap_cli(*reader_args(bundle_dir, db, server.url, "--partial"))
    assert partial.code == 3
    assert server.count == made + 1
    answers = run_answers(bundle_dir)
    expected = expected_answers(bundle_dir)
    empty = read_bundle(bundle_dir).queries[1].query_id
    assert answers[empty] is None
    assert {q: a for q, a in answers.items() if q != empty} == {
        q: a for q, a in expected.items() if q != empty
    }


# ------------------------------------------------------------------------- budget


def test_a_budget_stop_exits_3_and_the_same_command_finishes_without_paying_twice(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    db = tmp_path / "ws.db"
    # $1,000 per million tokens = $0.001 a token: a call's worst case is its prompt's
    # upper estimate (characters / 3, + 16) and 100 answer tokens: about $0.2-0.3
    prices = ["--input-cost-per-mtok", "1000", "--output-cost-per-mtok", "1000"]
    args = reader_args(bundle_dir, db, server.url, *prices, "--max-cost", "2")
    first = tiap_cli(*args)
    assert first.code == 3
    made = server.count
    assert 0 < made < 37
    assert f"{37 - made} of 37 answers missing" in first.err
    assert "stopped by the budget" in first.err
    assert "--max-cost 2.0" in first.err  # the command that goes on
    assert run_answers(bundle_dir) == dict.fromkeys(expected_answers(bundle_dir))
    with sqlite3.connect(db) as conn:
        (spent,) = conn.execute("SELECT SUM(cost_usd) FROM model_calls").fetchone()
    assert spent <= 2.0
    # the loopback server counts ~4 characters a token: the cost is its tokens' price
    with sqlite3.connect(db) as conn:
        for tin, tout, cost in conn.execute(
            "SELECT input_tokens, output_tokens, cost_usd FROM model_calls"
        ):
            assert cost == pytest.approx((tin + tout) * 0.001)

    runs = 1
    while True:  # each run has its own $2 (the earlier ones are over)
        result = tiap_cli(*args)
        runs += 1
        assert result.code in (0, 3)
        if result.code == 0:
            break
        assert runs < 20
    assert server.count == 37  # no request made twice
    assert set(server.per_key.values()) == {1}
    assert run_answers(bundle_dir) == expected_answers(bundle_dir)


def test_a_run_killed_midway_resumes_without_asking_a_stored_reply_again(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path
) -> None:
    import os
    import signal
    import time

    db = tmp_path / "ws.db"
    server.delay_s = 0.2
    args = reader_args(bundle_dir, db, server.url)
    proc = tiap_cli.popen(*args, env={KEY_ENV: SECRET})
    deadline = time.monotonic() + 120

    def stored() -> int:
        if not db.exists():
            return 0
        with sqlite3.connect(db) as conn:
            try:
                return int(conn.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0])
            except sqlite3.OperationalError:  # the tables are not made yet
                return 0

    while stored() < 5:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)  # let the server finish reading what was sent before the kill
    kept = stored()
    asked_before = server.count
    assert kept < 37
    assert run_answers(bundle_dir) == dict.fromkeys(expected_answers(bundle_dir))

    server.delay_s = 0.0
    done = tiap_cli(*reader_args(bundle_dir, db, server.url), env={KEY_ENV: SECRET})
    assert done.code == 0, done.err
    assert f"{kept} stored replies, {37 - kept} calls" in done.out
    assert run_answers(bundle_dir) == expected_answers(bundle_dir)
    # only the call in flight at the kill (concurrency 1) was asked again
    assert max(server.per_key.values()) <= 2
    assert sum(n - 1 for n in server.per_key.values()) == asked_before - kept <= 1


def test_max_cost_needs_a_price(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    args = reader_args(bundle_dir, tmp_path / "ws.db", server.url, "--max-cost", "1")
    result = tiap_cli(*args)
    assert result.code == 2
    assert "--input-cost-per-mtok" in result.err
    assert server.count == 0


# -------------------------------------------------------------------------- input


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["--temperature", "2.5"], "--temperature must lie between 0 and 2"),
        (["--temperature", "nan"], "--temperature must be a finite number"),
        (["--timeout", "0"], "--timeout must lie between"),
        (["--seed", "-1"], "--seed must be a non-negative integer"),
        (["--max-cost", "-1"], "--max-cost must not be negative"),
        (["--input-cost-per-mtok", "1"], "give both --input-cost-per-mtok"),
        (["--top", "0"], "--top must be at least 1"),
        (["--route", "nowhere"], "--route: unknown route 'nowhere'"),
    ],
)
def test_bad_settings_exit_2_with_one_line(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, more, message
) -> None:
    result = tiap_cli(*reader_args(bundle_dir, tmp_path / "ws.db", server.url, *more))
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert server.count == 0


def test_reader_needs_a_workspace_and_reader_options_need_a_reader(
    tiap_cli, bundle_dir: Path, tmp_path: Path
) -> None:
    base = ["answers", "extract", str(bundle_dir), "--run", RUN]
    result = tiap_cli(*base, "--reader", "openai/x")
    assert result.code == 2
    assert "--reader needs --db" in result.err
    result = tiap_cli(*base, "--db", str(tmp_path / "ws.db"))
    assert result.code == 2
    assert "--db is a reader setting" in result.err
    result = tiap_cli(*base, "--reader", "tiap-offline/keyword", "--db", str(tmp_path / "w.db"))
    assert result.code == 2
    assert "offline judges" in result.err


def test_a_missing_key_is_one_line_before_any_call(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    result = tiap_cli(*reader_args(bundle_dir, tmp_path / "ws.db", server.url))
    assert result.code == 2
    assert KEY_ENV in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert server.count == 0


def test_progress_is_shown_as_plain_lines_on_stderr(
    tiap_cli, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    with LoopbackServer(
        Script(default=first_line_reply), key=question_of, delay_s=0.01
    ) as slow_server:
        args = reader_args(bundle_dir, tmp_path / "ws.db", slow_server.url)
        args.remove("--quiet")
        result = tiap_cli(*args, env={"TIAP_PROGRESS_INTERVAL": "0.05"})
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if line.startswith("reading: ")]
    assert lines, result.err
    assert lines[-1].startswith("reading: 37/37 in ")
    assert "\x1b" not in result.err  # no escape sequence off a terminal


# ---------------------------------------------------------------------- end to end


def test_rescore_scores_the_readers_answers(
    tiap_cli, server: LoopbackServer, bundle_dir: Path, tmp_path: Path, key_env: str
) -> None:
    assert tiap_cli(*reader_args(bundle_dir, tmp_path / "ws.db", server.url)).code == 0
    out = tmp_path / "out"
    result = tiap_cli("rescore", str(bundle_dir), "--out", str(out), "--runs", RUN)
    assert result.code == 0, result.err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    scored = report["answers"]["runs"][RUN]
    b = read_bundle(bundle_dir)
    answers = expected_answers(bundle_dir)
    f1 = [
        answer_scores(answers[q.query_id], q.answer, q.metadata)[0]
        for q in b.queries
        if not q.abstention and q.answer.strip()
    ]
    assert scored["n_scored"] == len(f1)
    assert scored["f1"]["mean"] == pytest.approx(sum(f1) / len(f1), abs=1e-6)
    # the report says which reader made them (answers/RUN.json, the run file unchanged)
    record = json.loads((bundle_dir / "answers" / f"{RUN}.json").read_text(encoding="utf-8"))
    assert record["n_answers"] == 37
    assert scored["method"] == record["method"]
    assert scored["method"].startswith("reader: openai/reader-model answering LoCoMo's QA")
    assert "(locomo-qa/1) from the top 3 memories" in scored["method"]
    assert "reader: openai/reader-model" in (out / "report.md").read_text(encoding="utf-8")

    # the run file changed since (an answer edited by hand): the method is not known
    path = bundle_dir / "runs" / f"{RUN}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["answer"] = "edited"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    again = tmp_path / "again"
    assert tiap_cli("rescore", str(bundle_dir), "--out", str(again), "--runs", RUN).code == 0
    report = json.loads((again / "report.json").read_text(encoding="utf-8"))
    assert report["answers"]["runs"][RUN]["method"] is None
    assert f"{RUN}: not recorded" in (again / "report.md").read_text(encoding="utf-8")
