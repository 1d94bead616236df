"""One judge through its provider's batch API: submit, poll, store; resumable.

1. **Submit.** The judge's pending groups (one line per distinct request) are
   claimed into submissions of at most the provider's per-batch requests and
   bytes, as many as the budget takes (each line's worst case at the batch
   price). A submission, its lines and its pairs are recorded in the same
   transaction that claims them, *before* anything is sent: from then on they
   belong to it, and so does its reservation (a ledger row of its own, kept until
   its lines are stored, whichever run stores them). Then the file is uploaded
   (its id recorded), the batch created (recorded as being created first, with
   the submission's random key in the batch's metadata; then its id). A run
   killed in between finds the batch again by that key or its input file, through
   every page of the provider's batch list, instead of creating a second one.
2. **Poll.** Every open submission of the judge under the rubric, this run's and
   earlier runs', is polled (one run at a time polls a batch) until it is over;
   with ``wait=False`` once.
3. **Store** (:mod:`tiap.judge.batch_collect`). A finished batch's output and
   error files are read and each line stored exactly like a direct call's reply
   (same cache key, parsing, invalid reasons; cost at the batch price). A failed
   line whose failure a direct call would not retry (a 400, say) is stored as an
   invalid judgment, like a direct call's. **Everything the batch did not answer**
   (an expired or cancelled batch's lines, lines failed with a retryable status,
   malformed lines, lines missing from both files) **is called again directly, in
   the same run** — except lines the provider counted completed that are in
   neither file (no output file, say): those are called again only with
   ``recall_missing``. A submission that cannot be made at all (the upload or the
   creation is refused) is given up and its pairs are called directly too.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tiap.cases.run_models import BatchPair, BatchRequest, ProviderBatch
from tiap.cases.store import now_iso
from tiap.judge.batch_api import KEY_FIELD, TERMINAL, BatchLimits
from tiap.judge.batch_collect import Collector, give_back
from tiap.judge.claims import Claim
from tiap.judge.direct import DirectJudge
from tiap.judge.failures import classify
from tiap.judge.plan import Group, Pair
from tiap.judge.pricing import Price, batch_price
from tiap.judge.request import canonical_json, estimate_tokens, full_request
from tiap.judge.routes import BatchApi
from tiap.judge.summary import BatchReport
from tiap.judge.work import JudgeWork, pairs_in
from tiap.rubric import Reason

#: failures of a batch creation after which the batch may exist all the same.
_UNCERTAIN = frozenset({Reason.TIMEOUT, Reason.CONNECTION_ERROR, Reason.SERVER_ERROR})


@dataclass(frozen=True)
class BatchOptions:
    """How ``--batch`` runs: wait for the batches (polling every ``poll_s``
    seconds) or submit and return; ``limits`` overrides the provider's;
    ``recall_missing`` calls directly the lines a batch's provider counted
    completed that are in neither of its files (``--recall-missing``)."""

    wait: bool = True
    poll_s: float = 30.0
    limits: BatchLimits | None = None
    recall_missing: bool = False


def batch_report(sub: ProviderBatch) -> BatchReport:
    return BatchReport(
        submission=sub.id or 0,
        batch_id=sub.batch_id,
        judge=sub.rater,
        model=sub.model,
        state=sub.state,
        provider_status=sub.provider_status,
        requests=sub.requests,
        pairs=sub.pairs,
        completed=sub.completed,
        failed=sub.failed,
        answered=sub.answered,
        retried=sub.retried,
        malformed_lines=sub.malformed_lines,
        duplicate_lines=sub.duplicate_lines,
        unknown_lines=sub.unknown_lines,
        missing_lines=sub.missing_lines,
        cost_usd=sub.cost_usd,
        note=sub.note,
        created_at=sub.created_at,
        closed_at=sub.closed_at,
    )


class BatchJudge:
    """One judge's requests through its provider's batch API (module docstring)."""

    def __init__(self, work: JudgeWork, api: BatchApi, options: BatchOptions) -> None:
        self.work = work
        self.ctx = ctx = work.ctx
        self.jp = jp = work.jp
        self.provider = api.provider
        self.options = options
        self.limits = options.limits or api.limits
        self.tally = work.tally
        self.claimer = work.claimer
        self.price: Price | None = batch_price(jp.judge)
        self.client = api
        self.collector = Collector(work, api, self.price, recall_missing=options.recall_missing)
        self.rubric_hash = ctx.plan.rubric.content_hash
        self.leftover: list[Group] = []
        self.touched: set[int] = set()
        self.stopped_by_budget = False

    # ----------------------------------------------------------------- submit

    def _worst(self, group: Group) -> float:
        """A line's worst case at the batch price."""
        if self.price is None:
            return 0.0
        return self.price.cost(group.pairs[0].est_input_upper, self.ctx.plan.panel.max_tokens)

    def _request(self, group: Group) -> dict[str, Any]:
        return full_request(self.jp.settings, group.messages)

    def _next_chunk(self, groups: deque[Group]) -> tuple[list[Group], dict[str, int]]:
        """The next groups that fit one batch, and each one's line size."""
        chunk: list[Group] = []
        sizes: dict[str, int] = {}
        total = 0
        while groups and len(chunk) < self.limits.max_requests:
            line = len(self.client.line(groups[0].request_hash, self._request(groups[0])))
            if line > self.limits.max_bytes:  # too large for any batch: called directly
                self.leftover.append(groups.popleft())
                continue
            if total + line > self.limits.max_bytes:
                break
            group = groups.popleft()
            chunk.append(group)
            sizes[group.request_hash] = line
            total += line
        return chunk, sizes

    def _record(self, claimed: Sequence[Group], reserved: dict[str, float], size: int) -> int:
        """Record a submission of the claimed groups, and move their reservations
        from this run's ledger row to the submission's (call inside the claim)."""
        ctx, judge = self.ctx, self.jp.judge
        stamp, now = now_iso(), time.time()
        total = sum(reserved.values())
        submission = ProviderBatch(
            state="prepared",
            rater=judge.name,
            model=judge.model,
            api_base=judge.api_base,
            provider=self.provider,
            panel=ctx.plan.panel.name,
            rubric_id=ctx.plan.rubric.id,
            rubric_hash=self.rubric_hash,
            settings_hash=self.jp.settings_hash,
            label_epoch=ctx.plan.label_epoch,
            requests=len(claimed),
            pairs=pairs_in(claimed),
            bytes=size,
            reserved_usd=total,
            submitted_by=ctx.owner,
            submission_key=secrets.token_hex(16),
            poller=ctx.owner,
            poll_expires_at=now + ctx.lease_s,
            created_at=stamp,
            updated_at=stamp,
        )
        requests = [
            BatchRequest(
                submission=0,
                custom_id=g.request_hash,
                request_hash=g.request_hash,
                request_json=canonical_json(self._request(g)),
                reserved_usd=reserved.get(g.request_hash, 0.0),
            )
            for g in claimed
        ]
        pairs = [
            BatchPair(submission=0, case_id=c, request_hash=g.request_hash)
            for g in claimed
            for c in g.case_ids
        ]
        sub_id = ctx.ws.record_submission(submission, requests, pairs)
        ledger = ctx.ledger
        ledger.release(total)  # it is the submission's now, not this run's
        ctx.ws.open_batch_ledger(
            ctx.ws.submission(sub_id),
            budget=ledger.budget,
            scope=ledger.scope,
            max_cost_usd=ledger.max_cost,
            reserved_usd=total if ledger.max_cost is not None else 0.0,
        )
        return sub_id

    def _chunks(self, groups: deque[Group]) -> list[tuple[list[Group], dict[str, int]]]:
        """The judge's pending groups cut into batches (each with its lines' sizes);
        when its requests cannot be batch lines, none: they are called directly."""
        chunks = []
        try:
            while groups:
                chunk, sizes = self._next_chunk(groups)
                if chunk:
                    chunks.append((chunk, sizes))
        except Exception as exc:  # litellm cannot write the request for this provider
            failure = classify(exc, self.ctx.secrets)
            self.tally.route_note = (
                f"its requests cannot be batch lines ({failure.message}): called directly"
            )
            self.leftover.extend(g for chunk, _ in chunks for g in chunk)
            self.leftover.extend(groups)
            return []
        return chunks

    def _claim_into_submission(self, chunk: list[Group], sizes: dict[str, int]) -> Claim:
        """Claim a batch's groups and record its submission, in one transaction."""
        with self.ctx.ws.transaction():
            claim = self.claimer.claim(chunk, self._worst, lease=False)
            if claim.claimed:
                size = sum(sizes[g.request_hash] for g in claim.claimed)
                self.touched.add(self._record(claim.claimed, claim.reserved, size))
        if claim.claimed:
            self.tally.batches_submitted += 1
            self.tally.batch_requests += len(claim.claimed)
        return claim

    async def submit(self) -> None:
        """Claim the judge's pending groups into recorded submissions."""
        chunks = self._chunks(deque(self.jp.groups))
        for i, (chunk, sizes) in enumerate(chunks):
            claim = self._claim_into_submission(chunk, sizes)
            held = await self.work.take(claim)
            self.tally.held_elsewhere += pairs_in(held)
            self.ctx.reporter.advance(self.work.name, pairs_in(held))
            if claim.unfunded:
                self.stopped_by_budget = True
                later = [g for rest, _ in chunks[i + 1 :] for g in rest]
                self.tally.not_started += pairs_in(claim.unfunded) + pairs_in(later)
                break

    # ------------------------------------------------------------------- send

    def _give_up(self, sub: ProviderBatch, why: str) -> None:
        """A submission the provider never took: its pairs are free, called directly."""
        ws = self.ctx.ws
        requests = ws.submission_requests(sub.id or 0)
        with ws.transaction():
            ws.update_submission(sub.id or 0, state="abandoned", note=why, closed_at=now_iso())
            give_back(ws, sub, [r for r in requests if r.state == "pending"], 0)
            ws.close_batch_ledger(sub)
        self.tally.route_note = f"a batch could not be submitted ({why}): called directly"
        self.leftover.extend(self._groups(sub, requests))

    def _submitted(self, sub_id: int, batch: Any) -> None:
        self.ctx.ws.update_submission(
            sub_id, state="submitted", batch_id=batch.id, provider_status=batch.status
        )

    async def _find(self, sub: ProviderBatch) -> tuple[bool, Any | None]:
        """``(known, batch)``: the batch made for a submission being created, looked
        up through the provider's whole list; ``known`` is False (and a note says
        why) when the list could not be read: the next poll or run looks again."""
        try:
            return True, await self.client.find(sub.submission_key, sub.input_file_id)
        except Exception as exc:
            failure = classify(exc, self.ctx.secrets)
            why = f"creation unconfirmed, the batch list could not be read ({failure.reason})"
            self.ctx.ws.update_submission(sub.id or 0, note=f"{why}: {failure.message}")
            self.tally.route_note = f"batch {sub.id}: {why}"
            return False, None

    async def send(self, sub: ProviderBatch) -> None:
        """Upload and create a recorded submission (resuming where a run stopped)."""
        ws, sub_id = self.ctx.ws, sub.id or 0
        if sub.state == "prepared":
            data = b"".join(
                self.client.line(r.custom_id, json.loads(r.request_json or "{}"))
                for r in ws.submission_requests(sub_id)
            )
            try:
                file_id = await self.client.upload(f"tiap-batch-{sub_id}.jsonl", data)
            except Exception as exc:  # nothing was created: the pairs are free
                failure = classify(exc, self.ctx.secrets)
                self._give_up(ws.submission(sub_id), f"{failure.reason}: {failure.message}")
                return
            ws.update_submission(sub_id, state="uploaded", input_file_id=file_id)
        elif sub.state == "creating":  # a run stopped while creating it: it may exist
            known, found = await self._find(sub)
            if found is not None:
                self._submitted(sub_id, found)
            if found is not None or not known:
                return
        sub = ws.submission(sub_id)
        ws.update_submission(sub_id, state="creating")
        metadata = {"tiap_submission": str(sub_id), KEY_FIELD: sub.submission_key or ""}
        try:
            self._submitted(sub_id, await self.client.submit(sub.input_file_id or "", metadata))
            return
        except Exception as exc:
            failure = classify(exc, self.ctx.secrets)
        if failure.reason in _UNCERTAIN:  # it may have been created all the same
            known, found = await self._find(sub)
            if found is not None:
                self._submitted(sub_id, found)
            if found is not None or not known:
                return
        self._give_up(ws.submission(sub_id), f"{failure.reason}: {failure.message}")

    # ------------------------------------------------------------------- poll

    def _mine(self) -> list[ProviderBatch]:
        """Open submissions of the judge under the rubric that this run may poll."""
        ws, now = self.ctx.ws, time.time()
        subs = ws.submissions(
            rater=self.jp.judge.name, rubric_hash=self.rubric_hash, open_only=True
        )
        expires = now + self.ctx.lease_s
        return [s for s in subs if ws.take_poll(s.id or 0, self.ctx.owner, expires, now)]

    async def poll(self) -> None:
        """Send what is unsent, poll what runs, store what finished (once unless
        waiting); recall the held lines of ``missing`` submissions if asked to."""
        while True:
            for sub in self._mine():
                self.touched.add(sub.id or 0)
                if sub.state in ("prepared", "uploaded", "creating"):
                    await self.send(sub)
                elif sub.state == "missing" and self.options.recall_missing:
                    done = self.collector.recall(sub)
                    self.leftover.extend(self._groups(sub, done.again))
            running = []
            for sub in self._mine():
                if sub.state != "submitted" or sub.batch_id is None:
                    continue
                try:
                    finished = await self._poll_one(sub)
                except Exception as exc:  # the provider did not answer: try again later
                    failure = classify(exc, self.ctx.secrets)
                    if failure.fatal:
                        hint = ""
                        if failure.reason is Reason.NOT_FOUND:
                            hint = f" ('tiap judge batches --abandon {sub.id}' gives it up)"
                        self.tally.error = (
                            f"batch {sub.id}: {failure.reason}: {failure.message}{hint}"
                        )
                        return
                    self.ctx.ws.update_submission(
                        sub.id or 0, note=f"last poll failed: {failure.reason}: {failure.message}"
                    )
                    finished = False
                if not finished:
                    running.append(sub)
            if not running or not self.options.wait or self.tally.error is not None:
                return
            await asyncio.sleep(self.options.poll_s)

    async def _poll_one(self, sub: ProviderBatch) -> bool:
        """Retrieve a batch, record its status; store it when it is over (True)."""
        batch = await self.client.poll(sub.batch_id or "")
        counts = getattr(batch, "request_counts", None)
        done = int(getattr(counts, "completed", 0) or 0)
        failed = int(getattr(counts, "failed", 0) or 0)
        self.ctx.ws.update_submission(
            sub.id or 0, provider_status=batch.status, completed=done, failed=failed
        )
        text = f"{self.jp.judge.name} {sub.batch_id} {batch.status}"
        self.ctx.reporter.batch(f"batch-{sub.id}", text, done + failed, sub.requests)
        if batch.status not in TERMINAL:
            return False
        return await self.ingest(self.ctx.ws.submission(sub.id or 0), batch)

    # ------------------------------------------------------------------ store

    def _groups(self, sub: ProviderBatch, requests: Sequence[BatchRequest]) -> list[Group]:
        """Groups to call directly for a submission's unanswered lines (only when
        the submission was made with the judge's current settings)."""
        if sub.settings_hash != self.jp.settings_hash:
            return []
        wanted = {r.request_hash: r for r in requests}
        planned = {(p.case.case_id, p.request_hash): p for p in self.jp.pairs}
        by_hash: dict[str, list[Pair]] = defaultdict(list)
        for bp in self.ctx.ws.submission_pairs(sub.id or 0):
            request = wanted.get(bp.request_hash)
            if request is None:
                continue
            pair = planned.get((bp.case_id, bp.request_hash))
            if pair is None:
                messages = json.loads(request.request_json or "{}").get("messages") or []
                typical, upper = estimate_tokens(messages)
                pair = Pair(self.ctx.ws.case(bp.case_id), messages, bp.request_hash, typical, upper)
            by_hash[bp.request_hash].append(pair)
        return [Group(h, pairs) for h, pairs in by_hash.items()]

    async def ingest(self, sub: ProviderBatch, batch: Any) -> bool:
        """Store a finished batch's results (:mod:`tiap.judge.batch_collect`); what it
        did not answer is called directly. False when its files could not be read
        yet (it is polled again)."""
        read = await self.collector.read(sub, batch)
        if read is None:
            return False
        done = await self.collector.ingest(self.ctx.ws.submission(sub.id or 0), batch, read)
        self.leftover.extend(self._groups(sub, done.again))
        return True

    # -------------------------------------------------------------------- run

    async def run(self) -> None:
        self.tally.route = "batch"
        await self.submit()
        await self.poll()
        if self.leftover and self.tally.error is None:
            direct = DirectJudge(self.work, self.leftover)
            await direct.run()
            self.stopped_by_budget = self.stopped_by_budget or direct.stopped_by_budget
        for sub_id in sorted(self.touched):
            self.ctx.batches.append(batch_report(self.ctx.ws.submission(sub_id)))
