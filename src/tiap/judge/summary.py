"""What a run (or a dry run) reports: per judge and in total. Stable JSON keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tiap.judge.panel import JudgeKind

#: how a judge's requests went: called one by one, or through its provider's batch API.
Route = Literal["direct", "batch"]


class JudgeTally(BaseModel):
    """One judge's figures for a run."""

    judge: str
    kind: JudgeKind
    model: str
    cases: int = 0
    #: (case, judge) pairs that already had a label for this rubric: skipped.
    already_labelled: int = 0
    #: judgments answered from ``model_calls`` without a request.
    cache_hits: int = 0
    #: logical calls made (each may take several attempts).
    calls: int = 0
    #: retried attempts (429, 5xx, timeouts, connection errors).
    retries: int = 0
    valid: int = 0
    #: label NULL, by reason code (not_json, refusal, timeout, ...).
    invalid: dict[str, int] = Field(default_factory=dict)
    #: pairs left undone because the budget ran out or the judge stopped.
    not_started: int = 0
    cost_usd: float = 0.0
    #: calls whose cost is unknown (no price, none reported).
    cost_unknown: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: why the judge stopped early (an authentication or not-found error), if it did.
    error: str | None = None
    #: ``direct`` or ``batch`` (``--batch`` and a provider with a batch API).
    route: Route = "direct"
    #: why a judge went the way it went under ``--batch`` (e.g. no batch API).
    route_note: str | None = None
    #: pairs answered by a request another pair of this run sent (the same cache key).
    deduplicated: int = 0
    #: pairs another run judged while this one ran (not asked again).
    done_elsewhere: int = 0
    #: pairs another run held (claimed, in flight) when this one ended.
    held_elsewhere: int = 0
    #: pairs waiting in a provider batch when this run ended.
    in_batches: int = 0
    #: pairs held by provider batches whose provider counted their lines completed
    #: but whose results are in neither file (``missing``): called again only with
    #: ``--recall-missing``, or freed by ``tiap judge batches --abandon``.
    missing_in_batches: int = 0
    #: provider batches this run submitted, and the requests in them.
    batches_submitted: int = 0
    batch_requests: int = 0
    #: batch lines stored like direct calls, and lines called again directly
    #: (expired, cancelled, failed or malformed).
    batch_answered: int = 0
    batch_retried: int = 0
    #: rate limits (429) seen, the concurrency the judge ended at (adaptive), and
    #: the seconds its calls waited before being retried.
    rate_limited: int = 0
    concurrency: int | None = None
    retry_wait_s: float = 0.0

    def add_invalid(self, reason: str) -> None:
        code = reason.split(":", 1)[0]
        self.invalid[code] = self.invalid.get(code, 0) + 1


class BatchReport(BaseModel):
    """One provider batch as a run saw it (``tiap judge batches`` lists them all)."""

    submission: int
    batch_id: str | None
    judge: str
    model: str
    state: str
    provider_status: str | None
    requests: int
    pairs: int
    completed: int = 0
    failed: int = 0
    answered: int = 0
    retried: int = 0
    #: output lines that could not be read, repeated a request, named a request not
    #: in the batch; lines the provider counted completed without a result.
    malformed_lines: int = 0
    duplicate_lines: int = 0
    unknown_lines: int = 0
    missing_lines: int = 0
    cost_usd: float | None = None
    note: str | None = None
    created_at: str
    closed_at: str | None = None


class RunSummary(BaseModel):
    """The outcome of ``tiap judge run``."""

    panel: str
    rubric_id: str
    rubric_hash: str
    subset: str | None
    cases: int
    judges: list[JudgeTally]
    max_cost_usd: float | None = None
    stopped_by_budget: bool = False
    cost_usd: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    valid: int = 0
    invalid: dict[str, int] = Field(default_factory=dict)
    #: this run's name in the workspace's leases and budget ledger.
    owner: str | None = None
    #: the budget (ledger) this run counted against, shared with overlapping runs.
    budget: str | None = None
    #: what the shared budget held when the run ended (every run's spending).
    budget_used_usd: float | None = None
    deduplicated: int = 0
    done_elsewhere: int = 0
    held_elsewhere: int = 0
    in_batches: int = 0
    missing_in_batches: int = 0
    not_started: int = 0
    #: the provider batches this run submitted or polled.
    batches: list[BatchReport] = Field(default_factory=list)

    def finish(self) -> RunSummary:
        """Fill the totals from the per-judge figures."""
        self.cost_usd = round(sum(j.cost_usd for j in self.judges), 10)
        for name in _SUMMED:
            setattr(self, name, sum(getattr(j, name) for j in self.judges))
        totals: dict[str, int] = {}
        for j in self.judges:
            for reason, n in j.invalid.items():
                totals[reason] = totals.get(reason, 0) + n
        self.invalid = dict(sorted(totals.items()))
        return self

    @property
    def errors(self) -> list[str]:
        return [f"{j.judge}: {j.error}" for j in self.judges if j.error]

    @property
    def waiting(self) -> bool:
        """Pairs wait in provider batches: run again (``--batch``) to collect them."""
        return self.in_batches > 0

    @property
    def incomplete(self) -> bool:
        """Work is left that this run could have done: the budget stopped it,
        batches are still running, or batches hold lines whose results are missing
        (exit status 3 on the command line)."""
        return (
            (self.stopped_by_budget and self.not_started > 0)
            or self.waiting
            or self.missing_in_batches > 0
        )

    @property
    def nothing_to_claim(self) -> bool:
        """Every pair left was another run's: this run made no call and stored nothing."""
        return (
            self.held_elsewhere > 0
            and self.calls == 0
            and self.valid == 0
            and not any(j.invalid for j in self.judges)
        )


#: the per-judge counts a run's summary adds up
_SUMMED = (
    "calls",
    "cache_hits",
    "retries",
    "valid",
    "deduplicated",
    "done_elsewhere",
    "held_elsewhere",
    "in_batches",
    "missing_in_batches",
    "not_started",
)


class JudgeEstimate(BaseModel):
    """One judge's figures for ``--dry-run``."""

    judge: str
    kind: JudgeKind
    model: str
    cases: int
    already_labelled: int
    cache_hits: int
    calls: int
    est_input_tokens: int
    #: typical cost (about four characters per token, ~100 output tokens), or None
    #: when the judge's price is unknown.
    est_cost_usd: float | None
    #: upper bound (three characters per token, max_tokens of output).
    max_cost_usd: float | None
    missing_key_env: str | None = None
    #: pairs a line of an open provider batch will answer (not called, not submitted).
    in_batches: int = 0


class DryRun(BaseModel):
    """The outcome of ``tiap judge run --dry-run``: nothing was called."""

    panel: str
    rubric_id: str
    rubric_hash: str
    subset: str | None
    cases: int
    judges: list[JudgeEstimate]
    calls: int = 0
    cache_hits: int = 0
    est_cost_usd: float | None = None
    max_cost_usd: float | None = None

    def finish(self) -> DryRun:
        self.calls = sum(j.calls for j in self.judges)
        self.cache_hits = sum(j.cache_hits for j in self.judges)
        typical = [j.est_cost_usd for j in self.judges]
        upper = [j.max_cost_usd for j in self.judges]
        self.est_cost_usd = None if None in typical else round(sum(typical), 6)  # type: ignore[arg-type]
        self.max_cost_usd = None if None in upper else round(sum(upper), 6)  # type: ignore[arg-type]
        return self
