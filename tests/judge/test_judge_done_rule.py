"""A (case, judge) pair is done when the judge's latest label on the case under this
rubric carries the request hash the plan would send now; a judge cannot take a
human rater's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_support import rows

from support.loopback import LoopbackServer
from tiap.annotate.session import AnnotationSession
from tiap.cases import Workspace
from tiap.cli import main
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run, run_panel
from tiap.rubric import load_rubric


def _latest_hashes(db: Path) -> dict[str, str]:
    latest = rows(
        db,
        "SELECT case_id, request_hash FROM labels WHERE id IN "
        "(SELECT MAX(id) FROM labels GROUP BY case_id, rater)",
    )
    return dict(latest)


def test_editing_a_setting_rejudges_and_switching_back_is_answered_by_the_cache(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, tmp_path: Path
) -> None:
    db = make_workspace(3)
    original = write_panel(loopback.url)
    edited = tmp_path / "edited.toml"
    text = original.read_text(encoding="utf-8")
    assert "temperature = 0\n" in text
    edited.write_text(text.replace("temperature = 0\n", "temperature = 0.5\n"), encoding="utf-8")
    panel, panel_hot = load_panel(original), load_panel(edited)
    rubric = load_rubric()

    with Workspace(db) as ws:
        run_panel(ws, panel, rubric, subset="val")
    assert loopback.count == 3
    first = _latest_hashes(db)

    with Workspace(db) as ws:
        plan = plan_run(ws, panel_hot, rubric, subset="val")
        (jp,) = plan.judges
        assert (jp.already_labelled, len(jp.to_call), len(jp.cache_hits)) == (0, 3, 0)
        assert {p.request_hash for p in jp.pairs}.isdisjoint(first.values())
        hot = run_panel(ws, panel_hot, rubric, subset="val")
    assert (hot.calls, loopback.count) == (3, 6)
    assert set(_latest_hashes(db).values()).isdisjoint(first.values())

    # back to the original settings: every pair again, each answered by the cache
    with Workspace(db) as ws:
        plan = plan_run(ws, panel, rubric, subset="val")
        (jp,) = plan.judges
        assert (jp.already_labelled, len(jp.to_call), len(jp.cache_hits)) == (0, 0, 3)
        back = run_panel(ws, panel, rubric, subset="val")
    assert (back.calls, back.cache_hits) == (0, 3)
    assert loopback.count == 6  # no request reached the server
    assert _latest_hashes(db) == first
    # and now the pairs are done under the original settings
    with Workspace(db) as ws:
        (jp,) = plan_run(ws, panel, rubric, subset="val").judges
        assert (jp.already_labelled, len(jp.pairs)) == (3, 0)
    assert rows(db, "SELECT COUNT(*) FROM labels") == [(9,)]


def test_a_judge_cannot_take_a_human_raters_name(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, capsys
) -> None:
    db = make_workspace(6)
    rubric = load_rubric()
    with Workspace(db) as ws:
        session = AnnotationSession(ws, rubric, "foo", subset="val")
        for _ in range(6):
            session.label("partial")
            session.advance()
        assert len(ws.latest_labels(raters=["foo"])) == 6
    panel_file = write_panel(loopback.url, judges=("foo",))
    with Workspace(db) as ws, pytest.raises(TiapError) as err:
        run_panel(ws, load_panel(panel_file), rubric, subset="val")
    message = str(err.value)
    assert "'foo' is the name of a human rater in this workspace" in message
    assert "pick another name for the judge (rename it in panel 'loop')" in message
    assert loopback.count == 0

    with pytest.raises(SystemExit) as exit_info:
        main(["judge", "run", "--db", str(db), "--panel", str(panel_file), "--subset", "val"])
    assert exit_info.value.code == 2
    err_text = capsys.readouterr().err
    assert err_text.count("\n") == 1
    assert "'foo' is the name of a human rater" in err_text
    assert loopback.count == 0
    assert rows(db, "SELECT rater, rater_kind, COUNT(*) FROM labels GROUP BY 1, 2") == [
        ("foo", "human", 6)
    ]
    # the reverse: a person cannot take a judge's name
    with Workspace(db) as ws:
        run_panel(ws, load_panel(write_panel(loopback.url, judges=("bar",))), rubric, subset="val")
        with pytest.raises(TiapError, match="'bar' is the name of a judge"):
            AnnotationSession(ws, rubric, "bar", subset="val")
