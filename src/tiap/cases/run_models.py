"""Pydantic models of the workspace's coordination tables: judge leases, the
budget ledger and provider batches (one model per table; :mod:`tiap.cases.rows`
derives the columns from them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "BATCH_STATES",
    "BatchPair",
    "BatchRequest",
    "BatchState",
    "LedgerEntry",
    "PairLease",
    "ProviderBatch",
    "RequestState",
]


class PairLease(BaseModel):
    """One row of ``judge_leases``: a (case, judge, rubric) pair claimed by a run
    (``owner``) until ``expires_at`` (Unix seconds), for the request ``request_hash``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rubric_hash: str
    rater: str
    case_id: str
    request_hash: str
    owner: str
    expires_at: float
    taken_at: str


class LedgerEntry(BaseModel):
    """One row of ``budget_ledger``: one run's share of a budget. Runs of one
    ``scope`` (panel, rubric, subset) that overlap in time share a budget (see
    :class:`tiap.judge.claims.Ledger`); ``budget`` names the oldest run with a budget
    that was live when this one started (its own name if none)."""

    model_config = ConfigDict(extra="forbid")

    owner: str
    budget: str
    scope: str
    max_cost_usd: float | None = None
    #: worst cases of the calls this run is making (or has submitted) and not settled.
    reserved_usd: float = 0.0
    #: what this run's calls cost (unknown costs count at their worst case).
    spent_usd: float = 0.0
    started_at: str
    #: until when the run is known to run (Unix seconds): renewed while it works,
    #: the time it finished once it has.
    expires_at: float
    finished_at: str | None = None


BatchState = Literal[
    "prepared", "uploaded", "creating", "submitted", "missing", "closed", "abandoned"
]
"""``provider_batches.state``: tiap's side of a submission. ``prepared`` (recorded,
nothing sent), ``uploaded`` (input file sent), ``creating`` (the batch is being
created: its id may exist at the provider), ``submitted`` (batch id known),
``missing`` (over, its results stored, except lines the provider counted completed
that are in neither of its files: their pairs stay held until they are called
again on purpose or the batch is abandoned), ``closed`` (results stored),
``abandoned`` (never created, or given up: its pairs are free)."""

BATCH_STATES: tuple[BatchState, ...] = (
    "prepared",
    "uploaded",
    "creating",
    "submitted",
    "missing",
    "closed",
    "abandoned",
)

RequestState = Literal["pending", "answered", "failed", "retry"]
"""``provider_batch_requests.state``: ``answered`` (stored like a direct call),
``failed`` (stored as an invalid judgment), ``retry`` (not answered by the batch:
expired, cancelled, a failed or malformed line; called again directly). A line of a
``missing`` submission without a result stays ``pending``."""


class ProviderBatch(BaseModel):
    """One row of ``provider_batches``: a submission of one judge's requests."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    batch_id: str | None = None
    state: BatchState
    provider_status: str | None = None
    rater: str
    model: str
    api_base: str | None = None
    provider: str
    panel: str | None = None
    rubric_id: str | None = None
    rubric_hash: str
    settings_hash: str
    #: the newest label id when the pairs were claimed: a label for one of them
    #: with a larger id means the pair was judged meanwhile.
    label_epoch: int
    requests: int
    pairs: int
    bytes: int
    #: a random key, recorded before the batch is created and sent in its metadata
    #: (``tiap_key``): how a run finds a batch whose creation it did not see end.
    submission_key: str | None = None
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    answered: int = 0
    retried: int = 0
    #: reads of its output files that failed for good (a 404): after a few, the
    #: files are taken as missing.
    fetch_failures: int = 0
    #: lines of its output files that could not be read, that repeated a custom id,
    #: that named a custom id not in the batch; and lines the provider counted
    #: completed that are in neither file.
    malformed_lines: int = 0
    duplicate_lines: int = 0
    unknown_lines: int = 0
    missing_lines: int = 0
    reserved_usd: float = 0.0
    cost_usd: float | None = None
    submitted_by: str
    poller: str | None = None
    poll_expires_at: float | None = None
    note: str | None = None
    created_at: str
    updated_at: str
    closed_at: str | None = None

    @property
    def open(self) -> bool:
        """Its pairs belong to it until its results are stored."""
        return self.state not in ("closed", "abandoned")

    @property
    def ledger_owner(self) -> str:
        """Its row in the budget ledger: what it reserved, until it is over."""
        return f"batch:{self.id}"


class BatchRequest(BaseModel):
    """One row of ``provider_batch_requests``: one line of a submission (one
    distinct request; every pair that needs it is in ``provider_batch_pairs``)."""

    model_config = ConfigDict(extra="forbid")

    submission: int
    custom_id: str
    request_hash: str
    #: the stored request (``model_calls.request_json``), until its result is stored.
    request_json: str | None = None
    state: RequestState = "pending"
    #: its worst case at the batch price, reserved when it was submitted.
    reserved_usd: float = 0.0


class BatchPair(BaseModel):
    """One row of ``provider_batch_pairs``: a case whose judgment a line answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    submission: int
    case_id: str
    request_hash: str
