"""Storing what a request produced: its ``model_calls`` row and a label for every
pair that sent it, in one transaction, the same way for a direct call, a cache
answer and a provider batch's line.

A pair another run labelled meanwhile (a label newer than the label epoch with
the same request hash) gets no second label; the call is still recorded (it was
paid for, and it answers later runs from the cache). The same transaction
settles the call's budget reservation and drops the run's leases on the pairs.

A label without a label carries a :class:`~tiap.rubric.Reason` code and, apart, its
detail (``note``: the label outside the rubric, the provider's error, the size of a
cut reply). A reply cut at the panel's ``max_reply_bytes`` (its record says
``truncated``) keeps its one bounded copy with its call: its label rows get
``reply_too_large`` (what was cut could hold another label, so the part kept is
never read as the answer) and no ``raw`` copy.

A reply is read by the rule of :func:`tiap.rubric.parse_judgment`, as its request
asked: JSON only under a ``json_schema`` or ``json_object`` response format
(:attr:`Rater.structured`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tiap.cases import LabelRecord, Workspace
from tiap.judge.call import CallOutcome
from tiap.judge.claims import Ledger
from tiap.judge.failures import Failure, scrub
from tiap.judge.panel import DEFAULT_REPLY_BYTES
from tiap.judge.routes.reply import NOTE_CHARS, RATIONALE_CHARS
from tiap.rubric import Reason, Rubric, parse_judgment


@dataclass(frozen=True)
class Rater:
    """Who a label is by, and under which settings: what a label row carries, and
    how its replies are read (``structured``: its requests asked for JSON only)."""

    name: str
    model: str
    api_base: str | None
    panel: str | None
    settings_hash: str
    structured: bool


def asks_json_only(request: Mapping[str, Any]) -> bool:
    """Whether a request (its settings, :func:`tiap.judge.request.judge_settings`)
    asked for JSON only: a ``json_schema`` or ``json_object`` response format. Its
    replies are then read as that object alone (:func:`tiap.rubric.parse_judgment`)."""
    return request.get("response_format") is not None


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
        max_reply_bytes: int = DEFAULT_REPLY_BYTES,
    ) -> None:
        self.ws = ws
        self.rubric = rubric
        self.max_reply_bytes = max_reply_bytes
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
        *,
        truncated: bool = False,
        reply_bytes: int | None = None,
    ) -> LabelRecord:
        """The label a reply's content gives (NULL with its reason when invalid);
        ``truncated``: the reply was cut at ``max_reply_bytes`` (its full size
        ``reply_bytes`` when known)."""
        parsed = parse_judgment(self.rubric, content, structured=rater.structured)
        label, reason, note = parsed.label, parsed.reason, parsed.detail
        if label is None and reason is Reason.EMPTY and refusal:
            reason, note = Reason.REFUSAL, refusal[:NOTE_CHARS]
        if truncated:
            # what was cut could hold another label: the part kept is never an answer
            size = f"{reply_bytes:,} bytes" if reply_bytes else "more than it read"
            note = (
                f"reply of {size} cut to its first {self.max_reply_bytes:,} bytes "
                "(max_reply_bytes), kept with its call"
            )
            label, reason = None, Reason.REPLY_TOO_LARGE
        rationale = parsed.rationale
        if rationale is not None and len(rationale) > RATIONALE_CHARS:
            rationale = rationale[:RATIONALE_CHARS] + "…"
        return LabelRecord(
            **self._base(rater, case_id, request_hash),
            label=label,
            reason=None if reason is None else reason.value,
            rationale=scrub(rationale, self.secrets),
            note=scrub(note, self.secrets),
            raw=None if truncated else scrub(content, self.secrets),
        )

    def from_response(
        self, rater: Rater, case_id: str, request_hash: str, response: dict[str, Any]
    ) -> LabelRecord:
        """The label of a stored response record (a call's, a cache answer's)."""
        size = response.get("reply_bytes")
        content = response.get("content")
        refusal = response.get("refusal")
        return self.judgment(
            rater,
            case_id,
            request_hash,
            content if isinstance(content, str) else None,
            refusal if isinstance(refusal, str) else None,
            truncated=bool(response.get("truncated")),
            reply_bytes=size if isinstance(size, int) else None,
        )

    def failed(
        self, rater: Rater, case_id: str, request_hash: str, failure: Failure
    ) -> LabelRecord:
        """The invalid label of a call that failed (not fatally) after its attempts."""
        return LabelRecord(
            **self._base(rater, case_id, request_hash),
            label=None,
            reason=failure.reason.value,
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
                error=None if failure is None else json.dumps(failure.record()),
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
                            rater,
                            case_id,
                            request_hash,
                            outcome.content,
                            refusal,
                            truncated=outcome.truncated,
                            reply_bytes=outcome.reply_bytes,
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
                    record = self.from_response(rater, case_id, request_hash, cached)
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
