"""The workspace: migrations, cases, append-only labels, subsets, transactions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from case_support import make_case, make_label

from tiap.cases.migrations import MIGRATIONS
from tiap.cases.models import ModelCall, rank_bucket
from tiap.cases.rows import JsonTemplate, dumps_field
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError


@pytest.fixture
def ws(tmp_path: Path):
    with Workspace(tmp_path / "w.sqlite") as w:
        yield w


def test_rank_buckets() -> None:
    assert [rank_bucket(r) for r in (1, 5, 6, 20, 21, 60, 61, 1000)] == [
        "1-5",
        "1-5",
        "6-20",
        "6-20",
        "21-60",
        "21-60",
        "61+",
        "61+",
    ]


# ------------------------------------------------------------------------ migrations


def _raw(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    with Workspace(path) as w:
        rows = _raw(path, "SELECT version, name, applied_at FROM schema_migrations")
        assert [(r[0], r[1]) for r in rows] == [(v, n) for v, n, _ in MIGRATIONS]
        assert w.schema_version() == MIGRATIONS[-1][0]
        w.add_cases([make_case("c1")])
    with Workspace(path) as w:
        again = _raw(path, "SELECT version, name, applied_at FROM schema_migrations")
        assert again == rows  # not re-applied
        assert w.count_cases() == 1  # data kept
        mode = _raw(path, "PRAGMA journal_mode")[0][0]
        assert mode == "wal"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    Workspace(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')")
    con.commit()
    con.close()
    with pytest.raises(TiapError, match="schema version 999 is newer"):
        Workspace(path)


def test_not_a_workspace_and_missing_workspace(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(TiapError, match="not a tiap workspace"):
        Workspace(junk)
    with pytest.raises(TiapError, match="workspace not found"):
        Workspace(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()


# ---------------------------------------------------------------------------- cases


def test_cases_round_trip_and_are_idempotent(ws: Workspace) -> None:
    cases = [make_case("c2", run="b", query_index=1), make_case("c1", run="a", query_index=5)]
    assert ws.add_cases(cases) == (2, 0)
    assert ws.add_cases(cases) == (0, 2)
    assert ws.count_cases() == 2
    assert ws.case("c2") == cases[0]
    assert ws.case_ids() == ["c1", "c2"]  # by run, then query index
    assert [c.case_id for c in ws.cases(runs=["b"])] == ["c2"]
    with pytest.raises(TiapError, match="no case 'c9'"):
        ws.case("c9")


# --------------------------------------------------------------------------- labels


def test_latest_label_wins_and_history_is_kept(ws: Workspace) -> None:
    ws.add_cases([make_case("c1"), make_case("c2", query_index=1)])
    first = ws.add_label(make_label("c1", "ann", "supports"))
    ws.add_label(make_label("c1", "bob", "partial"))
    second = ws.add_label(make_label("c1", "ann", "partial", note="changed my mind"))
    assert second > first
    latest = {(r.case_id, r.rater): r.label for r in ws.latest_labels()}
    assert latest == {("c1", "ann"): "partial", ("c1", "bob"): "partial"}
    history = ws.label_history("c1", "ann")
    assert [r.label for r in history] == ["supports", "partial"]
    assert history[1].note == "changed my mind"
    assert all(r.created_at for r in history)
    assert [r.rater for r in ws.latest_labels(raters=["bob"])] == ["bob"]
    assert ws.latest_labels(case_ids=["c2"]) == []
    assert ws.raters() == ["ann", "bob"]


def test_retraction_withdraws_a_human_label(ws: Workspace) -> None:
    ws.add_cases([make_case("c1")])
    ws.add_label(make_label("c1", "ann", "supports"))
    ws.retract_label("c1", "ann", note="misclick")
    assert ws.latest_labels() == []
    kept = ws.latest_labels(include_retracted=True)
    assert [(r.label, r.reason, r.note) for r in kept] == [(None, "retracted", "misclick")]
    ws.add_label(make_label("c1", "ann", "does_not_support"))
    assert [r.label for r in ws.latest_labels()] == ["does_not_support"]
    assert len(ws.label_history("c1")) == 3


def test_invalid_judgments_are_kept_as_abstentions(ws: Workspace) -> None:
    ws.add_cases([make_case("c1")])
    ws.add_label(make_label("c1", "judge-a", None, rater_kind="judge", reason="not_json"))
    rows = ws.latest_labels(rater_kind="judge")
    assert [(r.rater, r.label, r.reason) for r in rows] == [("judge-a", None, "not_json")]
    assert ws.latest_labels(rater_kind="human") == []
    assert ws.raters("judge") == ["judge-a"]


def test_external_id_makes_imports_idempotent(ws: Workspace) -> None:
    ws.add_cases([make_case("c1")])
    rec = make_label("c1", "ann", "supports", external_id="ls:task-7:ann", origin="labelstudio")
    (first,) = ws.add_labels([rec])
    assert first > 0
    again = ws.add_labels([rec, make_label("c1", "bob", "partial", external_id="ls:task-7:bob")])
    assert again[0] == -1
    assert again[1] > first
    assert len(ws.label_history("c1")) == 2


def test_label_for_unknown_case_is_refused(ws: Workspace) -> None:
    with pytest.raises(TiapError, match="cannot label case 'nope': no such case"):
        ws.add_label(make_label("nope", "ann", "supports"))
    assert ws.label_history("nope") == []


# --------------------------------------------------------------------- transactions


def test_transaction_rolls_back_on_error(ws: Workspace) -> None:
    ws.add_cases([make_case("c0")])

    def failing_batch() -> None:
        with ws.transaction():
            ws.add_cases([make_case("c1")])
            ws.add_label(make_label("c1", "ann", "supports"))  # nested: joins the outer one
            ws.record_event("x", {"a": 1})
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        failing_batch()
    assert ws.case_ids() == ["c0"]
    assert ws.label_history("c1") == []
    assert ws.events("x") == []
    # The connection is usable afterwards, outside any transaction.
    ws.add_cases([make_case("c1")])
    assert ws.count_cases() == 2
    assert not ws.in_transaction


def test_a_failing_batch_leaves_nothing(ws: Workspace) -> None:
    ws.add_cases([make_case("c1")])
    batch = [make_label("c1", "ann", "supports"), make_label("missing", "ann", "partial")]
    with pytest.raises(TiapError, match="'missing'"):
        ws.add_labels(batch)
    assert ws.label_history("c1") == []


def test_writes_are_visible_to_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    with Workspace(path) as a, Workspace(path) as b:
        a.add_cases([make_case("c1")])
        a.add_label(make_label("c1", "ann", "partial"))
        assert [r.label for r in b.latest_labels()] == ["partial"]


# -------------------------------------------------------------------------- subsets


def test_a_second_handle_in_one_process_leaves_the_wal_to_the_first(tmp_path: Path) -> None:
    """Two handles on one workspace in one process (a thread of a run, a notebook's
    worker), one closed: another process must still see the first one's writes.
    Reading the file outside SQLite to recognise it again would drop this
    process's locks on it (POSIX locks belong to the process), and the other
    process would fold the live WAL in and delete it."""
    import subprocess
    import sys

    path = tmp_path / "w.sqlite"
    count = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    count += "print(c.execute('SELECT COUNT(*) FROM cases').fetchone()[0]); c.close()"

    def seen_elsewhere() -> int:
        out = subprocess.run(
            [sys.executable, "-c", count, str(path)], capture_output=True, text=True, check=True
        )
        return int(out.stdout)

    with Workspace(path) as first:
        first.add_cases([make_case("a")])
        Workspace(path, create=False).close()
        Workspace.open_readonly(path).close()
        assert seen_elsewhere() == 1
        first.add_cases([make_case("b")])
        assert {p.name for p in tmp_path.iterdir()} >= {"w.sqlite-wal", "w.sqlite-shm"}
        assert seen_elsewhere() == 2


def test_subsets_keep_order_and_overlap(ws: Workspace) -> None:
    ws.add_cases([make_case(f"c{i}", query_index=i) for i in range(5)])
    ws.save_subset("val", ["c3", "c0", "c4"], overlap=["c4", "c3"], params={"kind": "validation"})
    assert ws.case_ids(subset="val") == ["c3", "c0", "c4"]
    assert [c.case_id for c in ws.cases(subset="val")] == ["c3", "c0", "c4"]
    assert ws.overlap_ids("val") == ["c3", "c4"]  # in subset order
    assert ws.subset_params("val") == {"kind": "validation"}
    assert ws.subsets() == ["val"]
    with pytest.raises(TiapError, match="subset 'val' exists already"):
        ws.save_subset("val", ["c1"])
    ws.save_subset("val", ["c1", "c2"], overlap=["c2"], replace=True)
    assert ws.case_ids(subset="val") == ["c1", "c2"]
    assert ws.overlap_ids("val") == ["c2"]
    with pytest.raises(TiapError, match="overlap cases not in subset"):
        ws.save_subset("bad", ["c1"], overlap=["c2"])
    with pytest.raises(TiapError, match="no subset named 'other' \\(known: val\\)"):
        ws.case_ids(subset="other")
    assert ws.subsets() == ["val"]


# ------------------------------------------------------------------ model calls, events


def test_model_call_cache_keeps_successes(ws: Workspace) -> None:
    common = {"model": "m", "api_base": None, "request": {"messages": []}}
    ws.store_call(request_hash="h", response=None, status="error", error="timeout", **common)
    assert ws.cached_call("h")["status"] == "error"
    ws.store_call(request_hash="h", response={"text": "1"}, status="ok", **common)
    assert ws.cached_call("h")["response_json"] == '{"text": "1"}'
    ws.store_call(request_hash="h", response={"text": "2"}, status="ok", **common)
    assert ws.cached_call("h")["response_json"] == '{"text": "1"}'
    assert ws.cached_call("other") is None


def test_calls_stored_together_keep_successes_in_order(ws: Workspace) -> None:
    def call(h: str, status: str, text: str | None) -> ModelCall:
        response = None if text is None else {"text": text}
        return ModelCall(
            request_hash=h,
            model="m",
            request={"messages": [], "n": h},
            response=response,
            status=status,
            created_at="t",
        )

    # within one list as across lists: a failure is replaced, a success kept
    ws.store_calls([call("h", "error", None), call("h", "ok", "1"), call("h", "ok", "2")])
    assert ws.cached_call("h")["response_json"] == '{"text": "1"}'
    ws.store_calls([call("h", "ok", "3")])
    assert ws.cached_call("h")["response_json"] == '{"text": "1"}'
    ws.store_calls([call(f"k{i}", "ok", str(i)) for i in range(150)])
    assert ws.cached_responses([f"k{i}" for i in range(150)]) == {
        f"k{i}": {"text": str(i)} for i in range(150)
    }
    ws.store_calls([])


def test_a_json_template_gives_the_text_of_the_whole() -> None:
    fixed = {"b": {"z": 1, "a": [1.5, None]}, "a": "é", "messages": "dropped"}
    template = JsonTemplate(fixed, "messages")
    for value in ([{"role": "user", "content": "ü “x”"}], None, {"k": [1, 2]}, "\x00"):
        assert template.text(value) == dumps_field({**fixed, "messages": value})
    # a fixed part that holds the template's own marker is serialised whole
    odd = JsonTemplate({"a": JsonTemplate._MARK}, "messages")
    assert odd.text([1]) == dumps_field({"a": JsonTemplate._MARK, "messages": [1]})


def test_events_in_order(ws: Workspace) -> None:
    ws.record_event("k", {"n": 1})
    ws.record_event("other", {"n": 9})
    ws.record_event("k", {"n": 2})
    events = ws.events("k")
    assert [e["n"] for e in events] == [1, 2]
    assert all("created_at" in e for e in events)
