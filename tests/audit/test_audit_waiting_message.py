"""While the audit waits for people it says what it waits for (one person's label on
every case of the validation subset; the second reviewer's overlap is optional) and
how to go on without them, with what that costs the gate."""

from __future__ import annotations

from tiap.audit.humans import waiting_detail, waiting_message
from tiap.audit.step_figures import HumanFigures


def test_the_paused_audit_says_what_it_waits_for(audit_waiting_6) -> None:
    made = audit_waiting_6.made
    assert made.code == 3
    waiting = "none yet; waiting for one person's label on each of the 6 cases"
    assert f"[5] human labels: waiting ({waiting})" in made.out.splitlines()
    err = " ".join(made.err.split())
    assert (
        "the gate waits for one person to label every one of the validation subset's 6 cases" in err
    )
    assert "a second person's labels on the 2 overlap cases are optional" in err
    assert "run it with --no-humans: the gate then rests on the judges' agreement" in err
    assert "next: tiap annotate tui --db" in err


def test_progress_is_shown_with_what_is_awaited() -> None:
    figures = HumanFigures(required=True, cases=115, progress={"carol": 3})
    assert waiting_detail(figures) == (
        "carol 3/115; waiting for one person's label on each of the 115 cases"
    )
    assert "overlap" not in waiting_message(figures, 0)
    assert "the 36 overlap cases are optional" in waiting_message(figures, 36)
