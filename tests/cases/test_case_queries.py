"""The workspace's typed queries: columns derived from the models, filters in SQL
(long lists in chunks), and no SQL anywhere else in the package."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest
from case_support import make_case, make_label

import tiap
from tiap.cases.rows import TABLES
from tiap.cases.store import CHUNK
from tiap.cases.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path):
    with Workspace(tmp_path / "w.sqlite") as w:
        yield w


def test_every_table_has_the_columns_its_model_derives(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    Workspace(path).close()
    con = sqlite3.connect(path)
    for cols in TABLES:
        actual = [r[1] for r in con.execute(f"PRAGMA table_info({cols.table})")]
        assert sorted(actual) == sorted(cols.names), cols.table
    con.close()


def test_a_case_round_trips_through_its_columns(ws: Workspace) -> None:
    case = make_case("c1").model_copy(update={"metadata": {"a": None, "b": [1, "x"]}})
    ws.add_cases([case])
    assert ws.case("c1") == case
    assert ws.cases()[0] == case


def _many(ws: Workspace, n: int) -> list[str]:
    ids = [f"c{i:05d}" for i in range(n)]
    ws.add_cases([make_case(cid, query_index=i) for i, cid in enumerate(ids)])
    with ws.transaction():
        ws.add_labels(make_label(cid, "ann", "partial") for cid in ids)
        ws.add_labels(make_label(cid, "bob", "supports") for cid in ids[::3])
        ws.add_labels(make_label(cid, "ann", "supports") for cid in ids[::2])  # newer wins
        ws.add_labels(
            make_label(cid, "jj", "partial", rater_kind="judge", rubric_hash="r1") for cid in ids
        )
    ws.retract_label(ids[1], "ann")
    return ids


def test_latest_labels_for_many_cases_are_filtered_in_sql_in_chunks(ws: Workspace) -> None:
    ids = _many(ws, 2 * CHUNK + 137)
    everything = ws.latest_labels()
    wanted = ids[5:-3:2] + ids[:3]  # > 2 chunks, unordered, with a duplicate below
    wanted_set = set(wanted)
    with ws.traced() as statements:
        got = ws.latest_labels(case_ids=[*wanted, ids[0]])
    assert got == [r for r in everything if r.case_id in wanted_set]
    assert len(got) > CHUNK
    selects = [s for s in statements if s.startswith("SELECT l.*")]
    assert len(selects) == -(-len(wanted_set) // CHUNK)
    for sql in selects:
        assert "case_id IN (" in sql
        assert sql.count("'c") <= CHUNK  # the ids are bound one chunk at a time
    # the retracted label is left out, or kept on request
    assert (ids[1], "ann") not in {(r.case_id, r.rater) for r in got}
    kept = ws.latest_labels(case_ids=[ids[1]], include_retracted=True)
    assert [(r.rater, r.reason) for r in kept] == [("ann", "retracted"), ("jj", None)]
    # the other filters combine with it
    humans = ws.latest_labels(case_ids=ids[:7], rater_kind="human", raters=["bob"])
    assert [(r.case_id, r.label) for r in humans] == [
        (ids[0], "supports"),
        (ids[3], "supports"),
        (ids[6], "supports"),
    ]
    assert ws.latest_labels(case_ids=[]) == []
    assert ws.latest_labels(raters=[]) == []


def test_latest_judge_labels_by_rubric_and_judge(ws: Workspace) -> None:
    ws.add_cases([make_case("c1"), make_case("c2", query_index=1)])
    judge = {"rater_kind": "judge"}
    ws.add_label(make_label("c1", "a", "supports", rubric_hash="r1", request_hash="h1", **judge))
    ws.add_label(
        make_label("c1", "a", None, rubric_hash="r1", request_hash="h2", reason="timeout", **judge)
    )
    ws.add_label(make_label("c1", "a", "partial", rubric_hash="r2", request_hash="h3", **judge))
    ws.add_label(make_label("c2", "b", "partial", rubric_hash="r1", request_hash="h4", **judge))
    ws.add_label(make_label("c2", "ann", "partial", rubric_hash="r1"))
    marks = ws.latest_judge_labels(["a", "b", "ann"], "r1")
    assert set(marks) == {("c1", "a"), ("c2", "b")}
    assert (marks[("c1", "a")].request_hash, marks[("c1", "a")].reason) == ("h2", "timeout")
    assert marks[("c2", "b")].label == "partial"
    assert ws.latest_judge_labels(["a"], "r2")[("c1", "a")].request_hash == "h3"
    assert ws.latest_judge_labels([], "r1") == {}


def test_cached_responses_in_chunks_and_only_successes(ws: Workspace) -> None:
    n = CHUNK + 20
    with ws.transaction():
        for i in range(n):
            ws.store_call(
                request_hash=f"h{i}",
                model="m",
                api_base=None,
                request={"i": i},
                response={"content": str(i)},
                status="ok" if i % 4 else "error",
            )
    got = ws.cached_responses([f"h{i}" for i in range(n)] + ["absent", "h1"])
    assert got == {f"h{i}": {"content": str(i)} for i in range(n) if i % 4}
    call = ws.model_call("h1")
    assert call is not None
    assert (call.request, call.status) == ({"i": 1}, "ok")


def test_cases_of_some_runs_are_filtered_in_sql(ws: Workspace) -> None:
    ws.add_cases([make_case(f"c{i}", run="ab"[i % 2], query_index=i) for i in range(6)])
    ws.save_subset("val", ["c5", "c0", "c3"])
    with ws.traced() as statements:
        assert [c.case_id for c in ws.cases(runs=["b"])] == ["c1", "c3", "c5"]
        assert [c.case_id for c in ws.cases(subset="val", runs=["b"])] == ["c5", "c3"]
    assert all("run IN (" in s for s in statements if "FROM cases" in s or "JOIN cases" in s)
    assert ws.cases(runs=[]) == []


# ----------------------------------------------------------------- no SQL elsewhere


SQL_ATTRIBUTES = ("execute", "executemany", "executescript", "_conn", "conn")


def _sql_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n == "sqlite3" or n.startswith("sqlite3.") for n in names):
                found.append(f"{path}:{node.lineno}: imports sqlite3")
        elif isinstance(node, ast.Attribute) and node.attr in SQL_ATTRIBUTES:
            found.append(f"{path}:{node.lineno}: .{node.attr}")
    return found


def test_no_module_outside_tiap_cases_touches_a_connection() -> None:
    root = Path(tiap.__file__).parent
    files = [p for p in root.rglob("*.py") if root / "cases" not in p.parents]
    assert len(files) > 50
    uses = [u for p in files for u in _sql_uses(p)]
    assert uses == []
    # the check does see SQL where there is some
    assert _sql_uses(root / "cases" / "workspace.py")
