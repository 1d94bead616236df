"""The audit's Python API: typed settings, steps and outcome; callable from a
running event loop (a notebook) and as a coroutine."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.audits import complete_settings
from tiap.audit import (
    AgreementFigures,
    AuditState,
    JudgeFigures,
    RescoreFigures,
    StepName,
    read_state,
    run_audit,
    run_audit_async,
)
from tiap.cases import Workspace
from tiap.errors import TiapError


def _check_complete(outcome, out: Path) -> None:  # type: ignore[no-untyped-def]
    assert outcome.status == "complete"
    assert outcome.index_md == out / "index.md"
    assert outcome.index_md.is_file()
    # every step but the probes, which run only when asked for (probes=...)
    assert [r.step for r in outcome.steps] == [s for s in StepName if s != StepName.PROBES]
    judged = outcome.step(StepName.JUDGE_SUBSET)
    assert judged is not None
    assert isinstance(judged.figures, JudgeFigures)
    assert judged.figures.summary.calls == 30
    assert isinstance(outcome.step("rescore").figures, RescoreFigures)
    final = outcome.step(StepName.FINAL)
    assert final is not None
    assert isinstance(final.figures, AgreementFigures)
    assert outcome.final is not None
    assert final.figures.n_cases == outcome.final.n_cases
    assert outcome.supported_share == outcome.final.supported_share
    with Workspace(out / "workspace.sqlite", create=False) as ws:
        labels = ws.latest_labels(rater_kind="judge")
        assert len(labels) == 5 * ws.count_cases()
    state, warning = read_state(out)
    assert warning is None
    assert isinstance(state, AuditState)
    assert state.ordered() == outcome.steps


async def test_run_audit_inside_a_running_loop(audit_complete) -> None:
    # run_audit(complete_settings(SAMPLE, out)) inside a running loop: once per session
    out, made = audit_complete.root / "audit", audit_complete.made
    assert made.settings == complete_settings(made.settings.bundle, out)
    outcome, lines = made.outcome, made.lines
    _check_complete(outcome, out)
    assert lines[0] == f"[1] rescore: done ({out / 'rescore'}/report.md)"


async def test_run_audit_async_resumes_and_keeps_the_records(
    audit_complete, sample_bundle_dir: Path
) -> None:
    out = audit_complete.root / "audit"
    settings = complete_settings(sample_bundle_dir, out)
    first = audit_complete.made.outcome  # run_audit(settings): once per session
    _check_complete(first, out)
    again = await run_audit_async(settings, say=lambda _: None)
    _check_complete(again, out)
    judged = again.step(StepName.JUDGE_SUBSET)
    assert judged is not None
    assert judged.runs == first.step(StepName.JUDGE_SUBSET).runs  # type: ignore[union-attr]
    assert judged.found_done_at is not None
    # other settings (another subset size) start the records afresh, but the rescore's
    other = settings.model_copy(update={"n": 5, "subset": "validation-5"})
    third = await run_audit_async(other, say=lambda _: None)
    rescored, earlier = third.step(StepName.RESCORE), again.step(StepName.RESCORE)
    assert rescored is not None
    assert earlier is not None
    assert rescored.runs == earlier.runs  # kept: the bundle and its settings are unchanged
    sample = third.step(StepName.SAMPLE)
    assert sample is not None
    assert len(sample.runs) == 1
    assert sample.runs[0].at >= third.started_at


def test_settings_are_not_changed_by_a_run(audit_complete) -> None:
    # run_audit(settings): once per session, with a deep copy taken before
    settings, before = audit_complete.made.settings, audit_complete.made.before
    assert settings == before


def test_no_humans_and_a_reference_do_not_mix(tmp_path: Path, sample_bundle_dir: Path) -> None:
    settings = complete_settings(sample_bundle_dir, tmp_path / "audit").model_copy(
        update={"reference": "ann"}
    )
    with pytest.raises(TiapError, match="--no-humans"):
        run_audit(settings, say=lambda _: None)


def test_an_unreadable_state_file_is_started_afresh_with_a_warning(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = tmp_path / "audit"
    out.mkdir()
    (out / "audit_state.json").write_text("{not json", encoding="utf-8")
    lines: list[str] = []
    outcome = run_audit(complete_settings(sample_bundle_dir, out), say=lines.append)
    assert outcome.status == "complete"
    assert lines[0].startswith("warning: ")
    assert "audit_state.json: unreadable" in lines[0]
    state, warning = read_state(out)
    assert warning is None
    assert StepName.FINAL in state.steps


def test_the_default_say_prints_lines_inert(
    tmp_path: Path, sample_bundle_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiap.audit.pipeline import say_inert

    say_inert("run \x1b]0;PWNED\x07 \x1b[31mred")
    assert capsys.readouterr().out == "run ␛]0;PWNED␇ ␛[31mred\n"
    # the audit's own lines, with the default: an output path holding an escape sequence
    out = tmp_path / "o\x1b[2Jut"
    outcome = run_audit(complete_settings(sample_bundle_dir, out))
    assert outcome.status == "complete"
    printed = capsys.readouterr().out
    assert printed.strip()
    assert "\x1b" not in printed
