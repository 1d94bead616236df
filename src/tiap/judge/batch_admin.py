"""Giving up a provider batch: ``tiap judge batches --abandon ID``.

An open submission (any state but ``closed`` and ``abandoned``) is marked
``abandoned`` in one transaction: its unanswered lines' pairs are free again (the
next run calls or submits them), its ledger row is closed, and an event
(``batch_abandoned``) records what was given up. What the provider may have
charged for counts as spent at its worst case: nothing for a batch it never
received (``prepared``, ``uploaded``), the lines it counted completed without a
result for a ``missing`` one, every unanswered line otherwise (it may still run).
The batch is not cancelled at the provider (that needs the judge's key): a
batch that may still run is said to be so. A batch another live run is polling
is refused: that run may be storing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from tiap.cases import Workspace
from tiap.cases.run_models import ProviderBatch
from tiap.cases.store import now_iso
from tiap.errors import TiapError
from tiap.judge.batch_api import TERMINAL
from tiap.judge.batch_collect import give_back
from tiap.judge.claims import owner_gone

#: the event ``--abandon`` records.
ABANDON_EVENT = "batch_abandoned"


class AbandonEvent(BaseModel):
    """The payload of a ``batch_abandoned`` event."""

    model_config = ConfigDict(extra="forbid")

    submission: int
    batch_id: str | None
    judge: str
    rubric_hash: str
    #: tiap's state and the provider's status when it was abandoned
    state: str
    provider_status: str | None
    #: its unanswered lines, and the pairs they answered (free again)
    lines: int
    pairs: int
    #: what was counted as spent for lines the provider may have charged for
    spent_usd: float
    #: whether the provider may still run it (not over there, or never confirmed)
    may_still_run: bool


@dataclass(frozen=True)
class Abandoned:
    """What ``--abandon`` did."""

    submission: ProviderBatch
    event: AbandonEvent


def _charged(sub: ProviderBatch, lines: int) -> int:
    """Lines of the batch the provider may have charged for (see the module docstring)."""
    if sub.state in ("prepared", "uploaded"):
        return 0
    if sub.state == "missing":
        return sub.missing_lines
    return lines


def _may_still_run(sub: ProviderBatch) -> bool:
    return sub.state == "creating" or (
        sub.state == "submitted" and sub.provider_status not in TERMINAL
    )


def abandon_batch(ws: Workspace, ref: str) -> Abandoned:
    """Give up the open submission ``ref`` (its number, or the provider's batch id)."""
    with ws.transaction():
        sub = ws.find_submission(ref)
        if sub is None:
            raise TiapError(
                f"{ws.path}: no provider batch '{ref}' ('tiap judge batches' lists them)"
            )
        sub_id = sub.id or 0
        if not sub.open:
            raise TiapError(f"{ws.path}: batch {sub_id} is {sub.state}: nothing to abandon")
        polled = sub.poller is not None and (sub.poll_expires_at or 0.0) > time.time()
        if polled and not owner_gone(str(sub.poller)):
            raise TiapError(
                f"{ws.path}: batch {sub_id} is being collected by run {sub.poller}; "
                "abandon it when that run has ended"
            )
        pending = [r for r in ws.submission_requests(sub_id) if r.state == "pending"]
        hashes = {r.request_hash for r in pending}
        pairs = sum(1 for p in ws.submission_pairs(sub_id) if p.request_hash in hashes)
        spent = give_back(ws, sub, pending, _charged(sub, len(pending)))
        may_run = _may_still_run(sub)
        event = AbandonEvent(
            submission=sub_id,
            batch_id=sub.batch_id,
            judge=sub.rater,
            rubric_hash=sub.rubric_hash,
            state=sub.state,
            provider_status=sub.provider_status,
            lines=len(pending),
            pairs=pairs,
            spent_usd=round(spent, 10),
            may_still_run=may_run,
        )
        note = f"{sub.note}; " if sub.note else ""
        ws.update_submission(
            sub_id,
            state="abandoned",
            closed_at=now_iso(),
            poller=None,
            poll_expires_at=None,
            note=f"{note}abandoned ('tiap judge batches --abandon') when {sub.state}: "
            f"{pairs} pairs freed",
        )
        ws.close_batch_ledger(sub)
        ws.record_event(ABANDON_EVENT, event.model_dump(mode="json"))
    return Abandoned(ws.submission(sub_id), event)
