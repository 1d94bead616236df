"""Rater names are one namespace: a name is a judge or a human, never both. Enforced on
every label write; a workspace an earlier tiap let clash is an error with the way out."""

from __future__ import annotations

import sqlite3
from itertools import pairwise
from pathlib import Path

import pytest
from case_support import make_case, make_label
from legacy_workspace import make_earlier_workspace

from tiap.agreement import labels_from_workspace
from tiap.cases.vocab import ADJUDICATED, HUMAN, JUDGE
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError


@pytest.fixture
def ws(tmp_path: Path):
    with Workspace(tmp_path / "w.sqlite") as w:
        w.add_cases([make_case("c1"), make_case("c2", query_index=1)])
        yield w


def test_a_label_whose_rater_is_the_other_kind_is_refused(ws: Workspace) -> None:
    ws.add_label(make_label("c1", "foo", "partial"))
    ws.add_label(make_label("c1", "jj", "supports", rater_kind=JUDGE))
    with pytest.raises(TiapError, match="'foo' is the name of a human rater"):
        ws.add_label(make_label("c2", "foo", "supports", rater_kind=JUDGE))
    with pytest.raises(TiapError, match="'jj' is the name of a judge"):
        ws.add_label(make_label("c2", "jj", "supports"))
    with pytest.raises(TiapError, match="'jj' is the name of a judge"):
        ws.retract_label("c1", "jj")
    # a batch is refused whole, also when the clash is inside the batch
    batch = [make_label("c2", "new", "partial"), make_label("c2", "foo", None, rater_kind=JUDGE)]
    with pytest.raises(TiapError, match="'foo'"):
        ws.add_labels(batch)
    inside = [make_label("c2", "x", "partial"), make_label("c2", "x", "partial", rater_kind=JUDGE)]
    with pytest.raises(TiapError, match="rater 'x' appears both as judge and as human"):
        ws.add_labels(inside)
    assert ws.raters() == ["foo", "jj"]
    assert ws.raters(HUMAN) == ["foo"]
    assert len(ws.label_history("c2")) == 0


def test_require_rater_kind(ws: Workspace) -> None:
    ws.add_label(make_label("c1", "foo", "partial"))
    ws.require_rater_kind("foo", HUMAN)
    ws.require_rater_kind("unused", JUDGE)
    with pytest.raises(TiapError, match=r"pick another name for the judge \(rename it\)"):
        ws.require_rater_kind("foo", JUDGE, hint="rename it")
    with pytest.raises(TiapError, match="reserved for adjudicated human labels"):
        ws.require_rater_kind(ADJUDICATED, JUDGE)
    with pytest.raises(TiapError, match="reserved"):
        ws.add_label(make_label("c1", ADJUDICATED, "partial", rater_kind=JUDGE))
    ws.require_rater_kind(ADJUDICATED, HUMAN)
    assert ws.rater_kinds("foo") == {HUMAN}
    assert ws.rater_kinds("unused") == set()


def _clashed(path: Path) -> Path:
    """An earlier tiap's workspace where judge 'ann' labelled after human 'ann'."""
    make_earlier_workspace(path, 2)
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "INSERT INTO labels (case_id, rater, rater_kind, label, rubric_hash, created_at) "
            "VALUES ('c1', 'ann', 'judge', 'supports', 'rh', 't3')"
        )
    con.close()
    return path


def test_a_clash_left_by_an_earlier_tiap_is_an_error_with_the_way_out(tmp_path: Path) -> None:
    path = _clashed(tmp_path / "w.sqlite")
    for opener in (Workspace, Workspace.open_readonly):
        with opener(path) as ws:
            assert ws.rater_clashes() == ["ann"]
            for read in (ws.latest_labels, ws.raters, lambda: labels_from_workspace(ws)):
                with pytest.raises(TiapError) as err:
                    read()
                message = str(err.value)
                assert "'ann' have labels both as judge and as human" in message
                assert f"tiap cases rename-rater ann NEW --kind judge --db {path}" in message
                assert "\n" not in message
            with pytest.raises(TiapError, match="both as judge and as human"):
                ws.require_rater_kind("ann", HUMAN)
    with Workspace(path) as ws:
        with pytest.raises(TiapError, match="'ann' is in use already"):
            ws.rename_rater("judge-a", "ann", JUDGE)
        with pytest.raises(TiapError, match="no labels by the human rater 'judge-a'"):
            ws.rename_rater("judge-a", "other", HUMAN)
        assert ws.rename_rater("ann", "ann-judge", JUDGE) == 1
        latest = {(r.rater, r.rater_kind, r.label) for r in ws.latest_labels(case_ids=["c1"])}
        assert latest == {
            ("ann", "human", "partial"),
            ("ann-judge", "judge", "supports"),
            ("judge-a", "judge", "supports"),
        }
        (event,) = ws.events("rater.rename")
        assert (event["old"], event["new"], event["kind"], event["labels"]) == (
            "ann",
            "ann-judge",
            "judge",
            1,
        )


def test_rename_rater_command_repairs_a_clash(tiap_cli, tmp_path: Path) -> None:
    path = _clashed(tmp_path / "w.sqlite")
    code, _, err = tiap_cli("cases", "show", "c1", "--db", str(path))
    assert code == 2
    assert err.count("\n") == 1
    assert "tiap cases rename-rater ann NEW --kind judge" in err
    code, _, err = tiap_cli(
        "cases", "rename-rater", "ann", "ann-judge", "--kind", "robot", "--db", str(path)
    )
    assert (code, err.strip()) == (2, "tiap: error: --kind: give one of judge, human (not 'robot')")
    code, out, err = tiap_cli(
        "cases", "rename-rater", "ann", "ann-judge", "--kind", "judge", "--db", str(path)
    )
    assert code == 0, err
    assert out.strip() == f"renamed 1 labels of judge 'ann' to 'ann-judge' in {path}"
    code, out, err = tiap_cli("cases", "show", "c1", "--db", str(path))
    assert code == 0, err
    assert "ann [human]: partial" in out
    assert "ann-judge [judge]: supports" in out


def test_appended_labels_are_checked_and_stored_as_added_ones_are(ws: Workspace) -> None:
    ws.add_label(make_label("c1", "foo", "partial"))
    clash = [make_label("c2", "new", "partial"), make_label("c2", "foo", None, rater_kind=JUDGE)]
    with pytest.raises(TiapError, match="'foo' is the name of a human rater"):
        ws.append_labels(clash)
    inside = [make_label("c2", "x", "partial"), make_label("c2", "x", "partial", rater_kind=JUDGE)]
    with pytest.raises(TiapError, match="rater 'x' appears both as judge and as human"):
        ws.append_labels(inside)
    with pytest.raises(TiapError, match="cannot label case 'nope': no such case"):
        ws.append_labels(
            [
                make_label("c1", "j", "supports", rater_kind=JUDGE),
                make_label("nope", "j", None, rater_kind=JUDGE),
            ]
        )
    assert len(ws.label_history("c2")) == 0
    # more rows than one statement takes: every one stored, in order, with its time
    many = [
        make_label("c1" if i % 2 else "c2", "j", f"l{i}", rater_kind=JUDGE, note=str(i))
        for i in range(150)
    ]
    ws.append_labels(many)
    ws.append_labels([])
    stored = ws.label_history("c1", "j") + ws.label_history("c2", "j")
    stored.sort(key=lambda r: r.id or 0)
    assert [r.note for r in stored] == [str(i) for i in range(150)]
    assert all(r.created_at for r in stored)
    assert len({r.created_at for r in stored}) == 1


def test_a_rater_history_goes_forward_in_time_even_within_one_millisecond(
    ws: Workspace,
) -> None:
    # fifty labels for one (case, rater) written back to back fall in a few
    # milliseconds; each gets a later time than the one before it
    for i in range(50):
        ws.add_label(make_label("c1", "foo", ("partial", "supports")[i % 2]))
    ws.append_labels([make_label("c2", "jj", "supports", rater_kind=JUDGE)])
    ws.append_labels([make_label("c2", "jj", "partial", rater_kind=JUDGE)])
    for case, rater in (("c1", "foo"), ("c2", "jj")):
        times = [r.created_at for r in ws.label_history(case) if r.rater == rater]
        assert all(a is not None and b is not None and a < b for a, b in pairwise(times))
    # a stored label stamped ahead of the clock (an imported history) is followed,
    # not preceded, by the next label written for its pair
    ws.add_label(
        make_label("c2", "bar", "partial").model_copy(
            update={"created_at": "2999-01-01T00:00:00.000+00:00"}
        )
    )
    ws.add_label(make_label("c2", "bar", "supports"))
    times = [r.created_at for r in ws.label_history("c2") if r.rater == "bar"]
    assert times == ["2999-01-01T00:00:00.000+00:00", "2999-01-01T00:00:00.001+00:00"]
    # and the clock of every other pair is not moved ahead with it
    ws.add_label(make_label("c1", "bar", "supports"))
    (stamp,) = [r.created_at for r in ws.label_history("c1") if r.rater == "bar"]
    assert stamp is not None
    assert stamp < "2100"
