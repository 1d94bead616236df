"""Storing what a request produced: its ``model_calls`` row and a label for every
pair that sent it, in one transaction (the group of the run's writer,
:mod:`tiap.cases.group_commit`), the same way for a direct call, a cache answer
and a provider batch's line.

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
from tiap.cases.models import ModelCall
from tiap.cases.probe_models import ProbeLabelRecord, ProbeTag
from tiap.cases.store import now_iso
from tiap.judge.call import CallOutcome
from tiap.judge.claims import Ledger, lease_key
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
    #: a probe's: its labels are probe labels (:mod:`tiap.cases.probe_store`)
    probe: ProbeTag | None = None

    def lease_key(self, rubric_hash: str) -> str:
        """What its leases are taken under (:func:`tiap.judge.claims.lease_key`)."""
        return lease_key(rubric_hash, self.probe)


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


@dataclass(frozen=True)
class CallResult:
    """One answered (or failed) call to store (:meth:`Recorder.record_calls`)."""

    rater: Rater
    request_hash: str
    #: the stored request (``model_calls.request_json``)
    request: dict[str, Any]
    case_ids: Sequence[str]
    outcome: CallOutcome
    cost: float | None
    #: the run's label epoch (a label newer than it was made meanwhile)
    epoch: int
    #: the call's budget reservation, settled now
    reserved: float = 0.0
    #: ``request`` as stored (:class:`~tiap.cases.rows.JsonTemplate`), when known
    request_json: str | None = None


class Recorder:
    """Stores outcomes for one run (one rubric, one owner, one ledger), on the
    workspace handle it is given (the run's writer's, :mod:`tiap.cases.group_commit`)."""

    def __init__(
        self,
        rubric: Rubric,
        *,
        owner: str,
        ledger: Ledger,
        secrets: Sequence[str],
        max_reply_bytes: int = DEFAULT_REPLY_BYTES,
    ) -> None:
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
        return scrub_response(response, self.secrets)

    # ------------------------------------------------------------------ writes

    def _new(
        self, ws: Workspace, rater: Rater, request_hash: str, case_ids: Sequence[str], epoch: int
    ) -> list[str]:
        """The cases not labelled for this request since ``epoch`` (by any run); a
        probe's: not given a probe label for it since its probe label epoch."""
        since = ws.labels_since if rater.probe is None else ws.probe_labels_since
        done = since(rater.name, self.rubric.content_hash, case_ids, epoch)
        return [c for c in case_ids if (c, request_hash) not in done]

    @staticmethod
    def _add(ws: Workspace, rater: Rater, records: Sequence[LabelRecord]) -> None:
        """Store labels; a probe's as probe labels, apart from the audit's."""
        tag = rater.probe
        if tag is None:
            ws.add_labels(records)
        else:
            ws.add_probe_labels([ProbeLabelRecord.of(r, tag) for r in records])

    def _call_labels(
        self,
        rater: Rater,
        request_hash: str,
        case_ids: Sequence[str],
        outcome: CallOutcome,
        response: dict[str, Any] | None,
        cost: float | None,
    ) -> list[LabelRecord]:
        """A call's label for each of ``case_ids`` (none for a fatal failure): its
        cost and tokens on the first, the others answered by the same request."""
        failure = outcome.failure
        if failure is not None and failure.fatal:
            return []
        records: list[LabelRecord] = []
        refusal = (response or {}).get("refusal")
        for i, case_id in enumerate(case_ids):
            if failure is None:
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
            if i == 0:
                record.cost_usd = cost
                record.input_tokens = outcome.input_tokens
                record.output_tokens = outcome.output_tokens
            else:
                record.cost_usd = None if cost is None else 0.0
            records.append(record)
        return records

    def record(
        self,
        ws: Workspace,
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
        """Store a call (``model_calls``), its labels, the budget and the leases, on
        ``ws`` (the run's writer's: the caller's transaction, or one of its own)."""
        result = CallResult(rater, request_hash, request, case_ids, outcome, cost, epoch, reserved)
        return self.record_calls(ws, [result], settle=settle, release=release)[0]

    def record_calls(
        self,
        ws: Workspace,
        results: Sequence[CallResult],
        *,
        settle: bool = True,
        release: bool = True,
    ) -> list[Stored]:
        """Store calls as :meth:`record` stores each, in order, in one transaction,
        with a statement per kind of row for all of them (their ``model_calls`` rows,
        their labels, the look-up of pairs labelled meanwhile, the budget settlement,
        the release of their leases) rather than per call."""
        out: list[Stored] = []
        responses = [self.scrubbed(r.outcome.response) for r in results]
        now = now_iso()
        with ws.transaction():
            ws.store_calls(
                [self._model_call(r, res, now) for r, res in zip(results, responses, strict=True)],
                [r.request_json for r in results],
            )
            done = self._done_since(ws, results)
            records: list[LabelRecord] = []
            probes: list[ProbeLabelRecord] = []
            for r, response in zip(results, responses, strict=True):
                seen = done[(r.rater.name, r.epoch, r.rater.probe is not None)]
                fresh = [c for c in r.case_ids if (c, r.request_hash) not in seen]
                seen.update((c, r.request_hash) for c in fresh)
                labels = self._call_labels(
                    r.rater, r.request_hash, fresh, r.outcome, response, r.cost
                )
                tag = r.rater.probe
                if tag is None:
                    records.extend(labels)
                else:
                    probes.extend(ProbeLabelRecord.of(label, tag) for label in labels)
                out.append(Stored(labels, skipped=len(r.case_ids) - len(fresh)))
            ws.append_labels(records)
            if probes:
                ws.add_probe_labels(probes)
            if settle:
                self.ledger.settle_all([(r.reserved, r.cost) for r in results], ws)
            if release:
                self._release(ws, results)
        return out

    @staticmethod
    def _model_call(r: CallResult, response: dict[str, Any] | None, now: str) -> ModelCall:
        return model_call_row(
            r.request_hash, r.rater.model, r.rater.api_base, r.request, r.outcome,
            response=response, cost=r.cost, now=now,
        )  # fmt: skip

    def _done_since(
        self, ws: Workspace, results: Sequence[CallResult]
    ) -> dict[tuple[str, int, bool], set[tuple[str, str]]]:
        """(case, request hash) pairs labelled since each rater's epoch, one query per
        rater, epoch and kind of label (a probe's: its probe labels) for the cases of
        all ``results``."""
        cases: dict[tuple[str, int, bool], list[str]] = {}
        for r in results:
            cases.setdefault((r.rater.name, r.epoch, r.rater.probe is not None), []).extend(
                r.case_ids
            )
        return {
            key: (ws.probe_labels_since if key[2] else ws.labels_since)(
                key[0], self.rubric.content_hash, ids, key[1]
            )
            for key, ids in cases.items()
        }

    def _release(self, ws: Workspace, results: Sequence[CallResult]) -> None:
        """Drop this run's leases on the pairs of ``results``, one statement per rater
        and lease key (a probe's leases are its variant's)."""
        cases: dict[tuple[str, str], list[str]] = {}
        for r in results:
            pair = (r.rater.name, r.rater.lease_key(self.rubric.content_hash))
            cases.setdefault(pair, []).extend(r.case_ids)
        for (rater, key), ids in cases.items():
            ws.release_leases(self.owner, rater=rater, rubric_hash=key, case_ids=ids)

    def record_cached(
        self,
        ws: Workspace,
        rater: Rater,
        answers: Iterable[tuple[str, Sequence[str], dict[str, Any]]],
        epoch: int,
        *,
        release: bool = False,
    ) -> Stored:
        """Label pairs from stored responses, ``(request_hash, case_ids, response)``,
        on ``ws`` in one transaction; no request, no cost."""
        records: list[LabelRecord] = []
        skipped = 0
        with ws.transaction():
            for request_hash, case_ids, cached in answers:
                fresh = self._new(ws, rater, request_hash, case_ids, epoch)
                skipped += len(case_ids) - len(fresh)
                for case_id in fresh:
                    record = self.from_response(rater, case_id, request_hash, cached)
                    record.cost_usd = 0.0
                    records.append(record)
                if release:
                    ws.release_leases(
                        self.owner,
                        rater=rater.name,
                        rubric_hash=rater.lease_key(self.rubric.content_hash),
                        case_ids=list(case_ids),
                    )
            if records:
                self._add(ws, rater, records)
        return Stored(records, skipped=skipped)


def scrub_response(
    response: dict[str, Any] | None, secrets: Sequence[str]
) -> dict[str, Any] | None:
    """A stored reply with every secret (API key) scrubbed from its texts."""
    if response is None or not secrets:
        return response
    return {k: scrub(v, secrets) if isinstance(v, str) else v for k, v in response.items()}


def model_call_row(
    request_hash: str,
    model: str,
    api_base: str | None,
    request: dict[str, Any],
    outcome: CallOutcome,
    *,
    response: dict[str, Any] | None,
    cost: float | None,
    now: str,
) -> ModelCall:
    """The ``model_calls`` row of one call (its reply already scrubbed)."""
    failure = outcome.failure
    return ModelCall(
        request_hash=request_hash,
        model=model,
        api_base=api_base,
        request=request,
        response=response,
        status="ok" if failure is None else "error",
        error=None if failure is None else json.dumps(failure.record()),
        created_at=now,
        latency_ms=round(outcome.latency_ms, 3),
        cost_usd=cost,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
    )
