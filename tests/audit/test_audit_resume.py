"""A resumed audit keeps each step's figures: the index shows, for every step, the
figures of the invocation that did its work, with when it ran, and when a later
invocation found it already done."""

from __future__ import annotations

from pathlib import Path

from audit_support import read_state

from tiap.audit import JudgeFigures, StepName
from tiap.audit.steps import shown_time
from tiap.cases import LabelRecord, Workspace


def _row(index: str, title: str) -> str:
    """The index.md table row of a step (its first run)."""
    return next(line for line in index.splitlines() if line.startswith(f"| {title} |"))


def test_index_after_a_resumed_audit_keeps_the_first_runs_judging(
    tiap_cli, audit_waiting_6, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = audit_waiting_6.root / "audit"
    args = ("audit", sample_bundle_dir, "--out", out, "--panel", "offline", "--n", "6")
    paused = audit_waiting_6.made  # tiap *args --overlap 2 --no-progress, once per session
    assert paused.returncode == 3, paused.stderr  # waiting for human labels

    first = read_state(out).steps[StepName.JUDGE_SUBSET]
    assert len(first.runs) == 1
    run = first.runs[0]
    assert isinstance(run.figures, JudgeFigures)
    assert run.figures.summary.calls == 30  # 6 cases x 5 judges
    assert run.figures.summary.subset == "validation"
    assert "30 calls" in run.detail
    ran_at = shown_time(run.at)

    with Workspace(out / "workspace.sqlite", create=False) as ws:
        for cid in ws.case_ids(subset="validation"):
            ws.add_label(LabelRecord(case_id=cid, rater="ann", rater_kind="human", label="partial"))
    done = tiap_cli(*args, "--no-progress", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "judge subset 'validation': skipped (every case already judged" in done.stdout

    state = read_state(out)
    record = state.steps[StepName.JUDGE_SUBSET]
    assert record.runs == [run]  # the first run's record, unchanged
    assert record.found_done_at is not None
    assert record.found_done_at >= run.at
    assert state.steps[StepName.FINAL].status == "done"
    humans = state.steps[StepName.HUMANS]
    assert [r.status for r in humans.runs] == ["waiting", "done"]

    index = (out / "index.md").read_text(encoding="utf-8")
    row = _row(index, "judge subset 'validation'")
    assert run.detail in row
    assert "30 calls" in row
    assert ": 0 calls" not in row
    assert ran_at in row
    assert shown_time(record.found_done_at) in row
    assert "already judged" in row
    # the human labels step shows its history: waiting first, then done
    assert "| human labels | waiting |" in index
    assert "| done | complete: ann |" in index
    page = (out / "index.html").read_text(encoding="utf-8")
    assert run.detail in page
    # in a table cell a time keeps to one line: its spaces are no-break spaces (the
    # plain form is in the page only when an earlier step ran in the same second)
    assert ran_at.replace(" ", "\u00a0") in page
