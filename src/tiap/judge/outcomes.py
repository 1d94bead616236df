"""Storing what a request produced: its ``model_calls`` row and a label for every
pair that sent it, in one transaction, the same way for a direct call, a cache
answer and a provider batch's line.

A pair another run labelled meanwhile (a label newer than the label epoch with
the same request hash) gets no second label; the call is still recorded (it was
paid for, and it answers later runs from the cache). The same transaction
settles the call's budget reservation and drops the run's leases on the pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tiap.cases import LabelRecord, Workspace
from tiap.judge.call import CallOutcome
from tiap.judge.claims import Ledger
from tiap.judge.failures import Failure, scrub
from tiap.rubric import Rubric, parse_judgment


@dataclass(frozen=True)
class Rater:
    """Who a label is by, and under which settings: what a label row carries."""

    name: str
    model: str
    api_base: str | None
    panel: str | None
    settings_hash: str


@dataclass
class Stored:
    """What :meth:`Recorder.record` stored."""

    labels: list[LabelRecord]
    #: pairs skipped: another run labelled them meanwhile
    skipped: int = 0


class Recorder:
    """Stores outcomes for one run (one rubric, one owner, one ledger)."""

    def __init__(
        self,
        ws: Workspace,
        rubric: Rubric,
        *,
        owner: str,
        ledger: Ledger,
        secrets: Sequence[str],
    ) -> None:
        self.ws = ws
        self.rubric = rubric
        self.owner = owner
        self.ledger = ledger
        self.secrets = tuple(secrets)

    # ------------------------------------------------------------------ labels

    def _base(self, rater: Rater, case_id: str, request_hash: str) -> dict[str, Any]:
        return {
            "case_id": case_id,
            "rater": rater.name,
            "rater_kind": "judge",
            "rubric_id": self.rubric.id,
            "rubric_hash": self.rubric.content_hash,
            "panel": rater.panel,
            "model": rater.model,
            "request_hash": request_hash,
            "settings_hash": rater.settings_hash,
            "origin": "judge",
        }

    def judgment(
        self,
        rater: Rater,
        case_id: str,
        request_hash: str,
        content: str | None,
        refusal: str | None = None,
    ) -> LabelRecord:
        """The label a reply's content gives (NULL with its reason when invalid)."""
        parsed = parse_judgment(self.rubric, content)
        reason = parsed.reason
        if parsed.label is None and reason == "empty" and refusal:
            reason = "refusal"
        return LabelRecord(
            **self._base(rater, case_id, request_hash),
            label=parsed.label,
            reason=reason,
            rationale=scrub(parsed.rationale, self.secrets),
            raw=scrub(content, self.secrets),
        )

    def failed(
        self, rater: Rater, case_id: str, request_hash: str, failure: Failure
    ) -> LabelRecord:
        """The invalid label of a call that failed (not fatally) after its attempts."""
        return LabelRecord(
            **self._base(rater, case_id, request_hash),
            label=None,
            reason=failure.reason,
            note=failure.message,
        )

    def scrubbed(self, response: dict[str, Any] | None) -> dict[str, Any] | None:
        if response is None or not self.secrets:
            return response
        return {k: scrub(v, self.secrets) if isinstance(v, str) else v for k, v in response.items()}

    # ------------------------------------------------------------------ writes

    def _new(
        self, rater: Rater, request_hash: str, case_ids: Sequence[str], epoch: int
    ) -> list[str]:
        """The cases not labelled for this request since ``epoch`` (by any run)."""
        done = self.ws.labels_since(rater.name, self.rubric.content_hash, case_ids, epoch)
        return [c for c in case_ids if (c, request_hash) not in done]

    def record(
        self,
        rater: Rater,
        *,
        request_hash: str,
        request: dict[str, Any],
        case_ids: Sequence[str],
        outcome: CallOutcome,
        cost: float | None,
        epoch: int,
        reserved: float = 0.0,
        settle: bool = True,
        release: bool = True,
    ) -> Stored:
        """Commit a call (``model_calls``), its labels, the budget and the leases."""
        failure = outcome.failure
        response = self.scrubbed(outcome.response)
        with self.ws.transaction():
            self.ws.store_call(
                request_hash=request_hash,
                model=rater.model,
                api_base=rater.api_base,
                request=request,
                response=response,
                status="ok" if failure is None else "error",
                error=None if failure is None else f"{failure.reason}: {failure.message}",
                latency_ms=round(outcome.latency_ms, 3),
                cost_usd=cost,
                input_tokens=outcome.input_tokens,
                output_tokens=outcome.output_tokens,
            )
            fresh = self._new(rater, request_hash, case_ids, epoch)
            records: list[LabelRecord] = []
            if failure is None or not failure.fatal:
                for i, case_id in enumerate(fresh):
                    if failure is None:
                        refusal = (response or {}).get("refusal")
                        record = self.judgment(
                            rater, case_id, request_hash, outcome.content, refusal
                        )
                    else:
                        record = self.failed(rater, case_id, request_hash, failure)
                    # the call's cost and tokens are on its first label; the others
                    # were answered by the same request, like a cache answer
                    if i == 0:
                        record.cost_usd = cost
                        record.input_tokens = outcome.input_tokens
                        record.output_tokens = outcome.output_tokens
                    else:
                        record.cost_usd = None if cost is None else 0.0
                    records.append(record)
                if records:
                    self.ws.add_labels(records)
            if settle:
                self.ledger.settle(reserved, cost)
            if release:
                self.ws.release_leases(
                    self.owner,
                    rater=rater.name,
                    rubric_hash=self.rubric.content_hash,
                    case_ids=list(case_ids),
                )
        return Stored(records, skipped=len(case_ids) - len(fresh))

    def record_cached(
        self,
        rater: Rater,
        answers: Iterable[tuple[str, Sequence[str], dict[str, Any]]],
        epoch: int,
        *,
        release: bool = False,
    ) -> Stored:
        """Label pairs from stored responses, ``(request_hash, case_ids, response)``,
        in one transaction; no request, no cost."""
        records: list[LabelRecord] = []
        skipped = 0
        with self.ws.transaction():
            for request_hash, case_ids, cached in answers:
                fresh = self._new(rater, request_hash, case_ids, epoch)
                skipped += len(case_ids) - len(fresh)
                for case_id in fresh:
                    record = self.judgment(
                        rater, case_id, request_hash, cached.get("content"), cached.get("refusal")
                    )
                    record.cost_usd = 0.0
                    records.append(record)
                if release:
                    self.ws.release_leases(
                        self.owner,
                        rater=rater.name,
                        rubric_hash=self.rubric.content_hash,
                        case_ids=list(case_ids),
                    )
            if records:
                self.ws.add_labels(records)
        return Stored(records, skipped=skipped)
