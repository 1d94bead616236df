"""Collecting a finished provider batch: read its files, store what it answered,
hand back what is to be called again (step 3 of :mod:`tiap.judge.batch_run`).

- **Files.** A file that cannot be read for good (a 404: the provider deleted it)
  counts a try on the submission (``fetch_failures``); the batch is polled again
  later (in this run when it waits, else by the next one). After
  :data:`MAX_FETCH_TRIES` such reads the file counts as missing and the batch is
  collected without it, like an expired one. A transient failure (a timeout, a 5xx)
  is only tried again; an authentication failure stops the judge.
- **Lines** are sorted by :func:`~tiap.judge.batch_results.sort_lines` and stored
  :data:`STORE_CHUNK` at a time through the run's writer
  (:mod:`tiap.cases.group_commit`), each stored and counted like a direct call's
  result (:mod:`tiap.judge.work`). Each chunk stores its lines, settles their
  reservations in the batch's ledger row (a cost that is unknown counts at the
  line's worst case) and adds them to the submission's counts, in one transaction:
  an ingest that is interrupted and resumed counts every line once.
- **Missing lines** (the provider counted them completed, neither file holds them)
  are called again directly only with ``recall_missing`` (``--recall-missing``):
  else the submission becomes ``missing`` and holds their pairs until a run
  recalls them or ``tiap judge batches --abandon`` gives them up. Either way the
  provider may have charged for them: as many lines as it counted completed
  without a result are counted as spent at their worst case.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import Workspace
from tiap.cases.run_models import BatchRequest, ProviderBatch, RequestState
from tiap.cases.store import now_iso
from tiap.judge.batch_results import BatchFiles, LineReader, SortedLines, sort_lines
from tiap.judge.call import CallOutcome
from tiap.judge.failures import classify
from tiap.judge.outcomes import Rater, Stored, asks_json_only
from tiap.judge.pricing import Price, table_batch_price, table_price
from tiap.judge.routes import BatchApi
from tiap.judge.work import JudgeWork
from tiap.rubric import Reason

#: batch lines stored per transaction.
STORE_CHUNK = 200
#: reads of a batch's file that fail for good before the file counts as missing.
MAX_FETCH_TRIES = 3


def give_back(
    ws: Workspace, sub: ProviderBatch, lines: Sequence[BatchRequest], charged: int
) -> float:
    """Settle the reservations of lines the batch will not answer: the ``charged``
    costliest count as spent (the provider may have run them; their cost is
    unknown), the rest are released. Returns what was counted as spent."""
    reserved = sorted((r.reserved_usd for r in lines), reverse=True)
    spent = sum(reserved[: max(0, charged)])
    ws.settle_batch_ledger(sub, sum(reserved), spent)
    return spent


@dataclass(frozen=True)
class Files:
    """What could be read of a finished batch's files."""

    files: BatchFiles
    #: the files that could not be read, after the last try (taken as missing)
    gone: list[str] = field(default_factory=list)


@dataclass
class Collected:
    """What collecting a batch left to do: lines to call again directly."""

    again: list[BatchRequest] = field(default_factory=list)


class Collector:
    """Collects one judge's finished batches (see the module docstring)."""

    def __init__(
        self,
        work: JudgeWork,
        client: BatchApi,
        price: Price | None,
        *,
        recall_missing: bool,
    ) -> None:
        self.work = work
        self.ctx = work.ctx
        self.jp = work.jp
        self.client = client
        self.price = price
        self.recall_missing = recall_missing
        self.tally = work.tally
        self.reader = LineReader(self.ctx.plan.panel.max_reply_bytes, client, self.ctx.secrets)

    # ------------------------------------------------------------------ files

    async def read(self, sub: ProviderBatch, batch: Any) -> Files | None:
        """The batch's files; None when one could not be read and tries are left."""
        blobs: list[bytes | None] = []
        problems: list[str] = []
        for fid in (getattr(batch, "output_file_id", None), getattr(batch, "error_file_id", None)):
            if not fid:
                blobs.append(None)
                continue
            try:
                blobs.append(await self.client.ingest(str(fid)))
            except Exception as exc:
                failure = classify(exc, self.ctx.secrets)
                if failure.retryable or failure.reason is Reason.AUTH_ERROR:
                    raise  # tried again at the next poll / stops the judge
                blobs.append(None)
                problems.append(f"file {fid}: {failure.reason}: {failure.message}")
        if problems:
            tries = sub.fetch_failures + 1
            self.ctx.ws.update_submission(
                sub.id or 0,
                fetch_failures=tries,
                note=f"its files could not be read (try {tries} of {MAX_FETCH_TRIES}): "
                + "; ".join(problems),
            )
            if tries < MAX_FETCH_TRIES:
                return None
        return Files(BatchFiles.read(blobs[0], blobs[1]), problems)

    # ------------------------------------------------------------------ store

    def _asks_json_only(self, requests: Sequence[BatchRequest]) -> bool:
        """How a submission's replies are read: as its requests asked (a submission
        is one judge under one settings hash), else as this judge's would."""
        for request in requests:
            if request.request_json:
                return asks_json_only(json.loads(request.request_json))
        return self.work.rater.structured

    def _price(self, sub: ProviderBatch) -> Price | None:
        if sub.model != self.jp.judge.model:  # submitted when the judge had another model
            return table_batch_price(sub.model) or table_price(sub.model)
        return self.price

    def _rater(self, sub: ProviderBatch, requests: Sequence[BatchRequest]) -> Rater:
        """Who the submission's labels are by, as it was submitted."""
        return Rater(
            sub.rater,
            sub.model,
            sub.api_base,
            sub.panel,
            sub.settings_hash,
            structured=self._asks_json_only(requests),
        )

    async def ingest(self, sub: ProviderBatch, batch: Any, read: Files) -> Collected:
        """Store a finished batch's results (see the module docstring)."""
        ws, sub_id = self.ctx.ws, sub.id or 0
        counts = getattr(batch, "request_counts", None)
        requests = ws.submission_requests(sub_id)
        lines = sort_lines(
            read.files,
            requests,
            provider_completed=int(getattr(counts, "completed", 0) or 0),
            reader=self.reader,
        )
        cases: dict[str, list[str]] = defaultdict(list)
        for bp in ws.submission_pairs(sub_id):
            cases[bp.request_hash].append(bp.case_id)
        rater, price = self._rater(sub, requests), self._price(sub)
        for i in range(0, len(lines.stored), STORE_CHUNK):  # one after the other: a chunk
            chunk = lines.stored[i : i + STORE_CHUNK]  # that fails stops the ingest
            job = self._chunk_job(sub, rater, price, chunk, cases)
            for outcome, cost, done, pairs in await self.ctx.writer.write(
                job, calls=0, urgent=True
            ):
                self.tally.batch_answered += 1
                self.work.count_call(outcome, cost, done, pairs)
        return self._close(sub, batch, lines, read)

    def _close(self, sub: ProviderBatch, batch: Any, lines: SortedLines, read: Files) -> Collected:
        """Once its lines are stored: what the batch did not answer is to be called
        again, or held (missing), and the submission is closed or marked so."""
        ws, sub_id = self.ctx.ws, sub.id or 0
        held = bool(lines.missing) and not self.recall_missing
        again = lines.again + ([] if held else lines.missing)
        with ws.transaction():
            ws.mark_requests(sub_id, dict.fromkeys((r.custom_id for r in again), "retry"))
            give_back(ws, sub, lines.again, 0)
            if lines.missing and not held:
                give_back(ws, sub, lines.missing, lines.uncounted)
            ws.add_to_submission(sub_id, retried=len(again))
            ws.update_submission(
                sub_id,
                state="missing" if held else "closed",
                closed_at=None if held else now_iso(),
                provider_status=batch.status,
                output_file_id=getattr(batch, "output_file_id", None),
                error_file_id=getattr(batch, "error_file_id", None),
                malformed_lines=lines.malformed,
                duplicate_lines=lines.duplicates,
                unknown_lines=lines.unknown,
                missing_lines=lines.uncounted if lines.missing else 0,
                note=_note(sub_id, lines, read, held=held) or None,
            )
            if not held:
                ws.close_batch_ledger(sub)
        self.tally.batch_retried += len(again)
        return Collected(again)

    def _chunk_job(
        self,
        sub: ProviderBatch,
        rater: Rater,
        price: Price | None,
        chunk: Sequence[tuple[BatchRequest, CallOutcome]],
        cases: dict[str, list[str]],
    ) -> Callable[[Workspace], list[tuple[CallOutcome, float | None, Stored, int]]]:
        """The writer's job for a chunk of lines: store them, settle their
        reservations and count them on the submission (one transaction)."""
        recorder = self.ctx.recorder

        def job(ws: Workspace) -> list[tuple[CallOutcome, float | None, Stored, int]]:
            states: dict[str, RequestState] = {}
            reserved = spent = known = 0.0
            out = []
            for request, outcome in chunk:
                cost = outcome.cost(price)  # a batch line has no route figure: its tokens
                case_ids = cases[request.request_hash]
                stored = recorder.record(
                    ws,
                    rater,
                    request_hash=request.request_hash,
                    request=json.loads(request.request_json or "{}"),
                    case_ids=case_ids,
                    outcome=outcome,
                    cost=cost,
                    epoch=sub.label_epoch,
                    settle=False,  # the batch's ledger row settles it
                    release=False,
                )
                out.append((outcome, cost, stored, len(case_ids)))
                reserved += request.reserved_usd
                spent += request.reserved_usd if cost is None else cost
                known += cost or 0.0
                states[request.custom_id] = "answered" if outcome.ok else "failed"
            ws.mark_requests(sub.id or 0, states)
            ws.settle_batch_ledger(sub, reserved, spent)
            ws.add_to_submission(sub.id or 0, answered=len(chunk), cost_usd=known)
            return out

        return job

    # ----------------------------------------------------------------- recall

    def recall(self, sub: ProviderBatch) -> Collected:
        """A ``missing`` submission's held lines, to be called again directly."""
        ws, sub_id = self.ctx.ws, sub.id or 0
        held = [r for r in ws.submission_requests(sub_id) if r.state == "pending"]
        with ws.transaction():
            ws.mark_requests(sub_id, dict.fromkeys((r.custom_id for r in held), "retry"))
            give_back(ws, sub, held, sub.missing_lines)
            ws.add_to_submission(sub_id, retried=len(held))
            note = f"{sub.note}; " if sub.note else ""
            ws.update_submission(
                sub_id,
                state="closed",
                closed_at=now_iso(),
                note=f"{note}its {len(held)} held lines called again directly (--recall-missing)",
            )
            ws.close_batch_ledger(sub)
        self.tally.batch_retried += len(held)
        return Collected(held)


def _note(sub_id: int, lines: SortedLines, read: Files, *, held: bool) -> str:
    """What collecting a batch found wrong with its files, for its ``note``."""
    parts = []
    if lines.malformed:
        parts.append(f"{lines.malformed} malformed output lines")
    if lines.duplicates:
        parts.append(
            f"{lines.duplicates} duplicate output lines ({lines.disagreeing} requests whose "
            "lines disagree: stored as duplicate_reply)"
        )
    if lines.unknown:
        parts.append(f"{lines.unknown} output lines for requests not in the batch (ignored)")
    if read.gone:
        parts.append(
            f"its files could not be read after {MAX_FETCH_TRIES} tries ("
            + "; ".join(read.gone)
            + "): taken as missing"
        )
    if lines.missing:
        what = (
            f"the provider counted {lines.uncounted} more lines completed than its output "
            f"holds; {len(lines.missing)} lines have no result"
        )
        if held:
            parts.append(
                f"{what}: held (the provider may have charged for them); --recall-missing "
                f"calls them directly, 'tiap judge batches --abandon {sub_id}' gives them up"
            )
        else:
            parts.append(
                f"{what}: called again directly (--recall-missing; the provider may have "
                "charged for them)"
            )
    return "; ".join(parts)
