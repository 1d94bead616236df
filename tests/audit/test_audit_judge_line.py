"""The judging step's line says when judgments shared an identical request, which was
sent once (so the calls and cached answers are fewer than the answers)."""

from __future__ import annotations

from tiap.audit import StepName


def test_the_judge_line_says_identical_requests_were_sent_once(audit_complete) -> None:
    outcome, lines = audit_complete.made.outcome, audit_complete.made.lines
    for name, number in ((StepName.JUDGE_SUBSET, 4), (StepName.JUDGE_ALL, 7)):
        summary = outcome.step(name).figures.summary
        line = next(x for x in lines if x.startswith(f"[{number}] "))
        answered = summary.valid + sum(summary.invalid.values())
        assert summary.calls + summary.cache_hits + summary.deduplicated == answered, line
        said = f"({summary.deduplicated} judgments shared an identical request, sent once)"
        assert (said in line) == (summary.deduplicated > 0), line
    # some of the sample's cases make identical requests (the line says so there)
    assert outcome.step(StepName.JUDGE_ALL).figures.summary.deduplicated > 0
