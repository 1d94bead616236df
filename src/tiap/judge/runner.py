"""Run a panel over cases: plan, answer from the cache, call, store, resume.

The unit of work is a (case, judge) pair for one rubric. A pair is skipped when
a label row for (case, judge, rubric hash, model) exists already, so a run
stopped by Ctrl-C, ``kill -9`` or a budget is completed by the next run
without repeating a call. Each call's ``model_calls`` row and label row are
committed together, in one transaction, as soon as the call returns.

A pair whose request hash has a successful ``model_calls`` row is answered from
it without a request (and without importing litellm). Other pairs are called
through :func:`tiap.judge.call.call_model`, ``concurrency`` at a time per judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tiap.cases import Case, LabelRecord, Workspace
from tiap.errors import TiapError
from tiap.judge.call import CallOutcome, call_model
from tiap.judge.failures import TRANSPORT_REASONS, Failure, scrub
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.pricing import CostPolicy, Price, cost_policy, judge_price
from tiap.judge.request import (
    canonical_json,
    estimate_tokens,
    full_request,
    judge_settings,
    litellm_kwargs,
    request_hash,
)
from tiap.judge.summary import DryRun, JudgeEstimate, JudgeTally, RunSummary
from tiap.rubric import Rubric, parse_judgment, render_messages

#: output tokens assumed for a typical judgment in cost estimates.
TYPICAL_OUTPUT_TOKENS = 100
_CACHE_BATCH = 500


class Reporter(Protocol):
    """Progress callbacks (see :mod:`tiap.judge.progress`)."""

    def start(self, judge: str, total: int) -> None: ...

    def advance(self, judge: str, n: int = 1) -> None: ...


class _NoReporter:
    def start(self, judge: str, total: int) -> None:
        pass

    def advance(self, judge: str, n: int = 1) -> None:
        pass


@dataclass
class Pair:
    """One (case, judge) pair that needs a label."""

    case: Case
    messages: list[dict[str, str]]
    request_hash: str
    est_input: int
    est_input_upper: int
    cached: dict[str, Any] | None = None


@dataclass
class JudgePlan:
    judge: JudgeSpec
    settings: dict[str, Any]
    price: Price | None
    costs: CostPolicy
    cases: int = 0
    already_labelled: int = 0
    pairs: list[Pair] = field(default_factory=list)

    @property
    def to_call(self) -> list[Pair]:
        return [p for p in self.pairs if p.cached is None]

    @property
    def cache_hits(self) -> list[Pair]:
        return [p for p in self.pairs if p.cached is not None]


@dataclass
class RunPlan:
    panel: Panel
    rubric: Rubric
    subset: str | None
    cases: int
    judges: list[JudgePlan]


def _existing(
    ws: Workspace, panel: Panel, rubric: Rubric, retry_failed: bool
) -> set[tuple[str, str, str]]:
    """(case_id, rater, model) pairs that count as done for this rubric."""
    names = [j.name for j in panel.judges]
    marks = ",".join("?" for _ in names)
    rows = ws.conn.execute(
        "SELECT case_id, rater, model, label, reason FROM labels "
        f"WHERE rater_kind = 'judge' AND rubric_hash = ? AND rater IN ({marks}) ORDER BY id",
        [rubric.content_hash, *names],
    )
    latest: dict[tuple[str, str, str], tuple[str | None, str | None]] = {}
    for case_id, rater, model, label, reason in rows:
        latest[(case_id, rater, model or "")] = (label, reason)
    done = set()
    for key, (label, reason) in latest.items():
        code = (reason or "").split(":", 1)[0]
        if retry_failed and label is None and code in TRANSPORT_REASONS:
            continue
        done.add(key)
    return done


def _cached_responses(ws: Workspace, hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Successful stored responses by request hash."""
    import json

    out: dict[str, dict[str, Any]] = {}
    unique = list(dict.fromkeys(hashes))
    for i in range(0, len(unique), _CACHE_BATCH):
        chunk = unique[i : i + _CACHE_BATCH]
        marks = ",".join("?" for _ in chunk)
        for h, response_json in ws.conn.execute(
            f"SELECT request_hash, response_json FROM model_calls "
            f"WHERE status = 'ok' AND request_hash IN ({marks})",
            chunk,
        ):
            if response_json:
                out[h] = json.loads(response_json)
    return out


def plan_run(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str | None = None,
    retry_failed: bool = False,
) -> RunPlan:
    """Which pairs need a label, and which of those the cache can answer."""
    cases = ws.cases(subset=subset)
    if not cases:
        where = f"subset '{subset}'" if subset else f"workspace {ws.path}"
        raise TiapError(f"{where} has no cases (run 'tiap cases extract' first)")
    done = _existing(ws, panel, rubric, retry_failed)
    rendered = []
    for case in cases:
        messages = render_messages(rubric, case.prompt_fields())
        typical, upper = estimate_tokens(messages)
        rendered.append((case, messages, canonical_json(messages), typical, upper))
    plans = []
    for judge in panel.judges:
        settings = judge_settings(panel, judge, rubric)
        settings_json = canonical_json(settings)
        plan = JudgePlan(
            judge=judge,
            settings=settings,
            price=judge_price(judge),
            costs=cost_policy(judge),
            cases=len(cases),
        )
        for case, messages, messages_json, typical, upper in rendered:
            if (case.case_id, judge.name, judge.model) in done:
                plan.already_labelled += 1
                continue
            h = request_hash(settings_json, messages_json)
            plan.pairs.append(Pair(case, messages, h, typical, upper))
        plans.append(plan)
    cached = _cached_responses(ws, [p.request_hash for jp in plans for p in jp.pairs])
    for jp in plans:
        for p in jp.pairs:
            p.cached = cached.get(p.request_hash)
    return RunPlan(panel=panel, rubric=rubric, subset=subset, cases=len(cases), judges=plans)


def _missing_key(judge: JudgeSpec) -> str | None:
    import os

    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        return judge.api_key_env
    return None


def dry_run(plan: RunPlan) -> DryRun:
    """Figures of a plan without calling anything."""
    out = []
    for jp in plan.judges:
        to_call = jp.to_call
        est_in = sum(p.est_input for p in to_call)
        est_upper = sum(p.est_input_upper for p in to_call)
        if not to_call:
            typical, upper = 0.0, 0.0
        elif jp.price is None:
            typical = upper = None
        else:
            typical = jp.price.cost(est_in, TYPICAL_OUTPUT_TOKENS * len(to_call))
            upper = jp.price.cost(est_upper, plan.panel.max_tokens * len(to_call))
        out.append(
            JudgeEstimate(
                judge=jp.judge.name,
                kind=jp.judge.kind,
                model=jp.judge.model,
                cases=jp.cases,
                already_labelled=jp.already_labelled,
                cache_hits=len(jp.cache_hits),
                calls=len(to_call),
                est_input_tokens=est_in,
                est_cost_usd=None if typical is None else round(typical, 6),
                max_cost_usd=None if upper is None else round(upper, 6),
                missing_key_env=_missing_key(jp.judge) if to_call else None,
            )
        )
    return DryRun(
        panel=plan.panel.name,
        rubric_id=plan.rubric.id,
        rubric_hash=plan.rubric.content_hash,
        subset=plan.subset,
        cases=plan.cases,
        judges=out,
    ).finish()


class Budget:
    """``--max-cost``: a call starts only if the spend so far, the worst case of the
    calls in flight and its own worst case stay within the budget."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False

    def reserve(self, worst: float) -> bool:
        if self.max_cost is None:
            return True
        if self.exhausted or self.spent + self.reserved + worst > self.max_cost + 1e-12:
            self.exhausted = True
            return False
        self.reserved += worst
        return True

    def settle(self, worst: float, actual: float | None) -> None:
        if self.max_cost is None:
            return
        self.reserved -= worst
        self.spent += worst if actual is None else actual


class _Run:
    """The state of one execution of a plan."""

    def __init__(
        self,
        ws: Workspace,
        plan: RunPlan,
        budget: Budget,
        reporter: Reporter,
        keys: dict[str, str | None],
    ) -> None:
        self.ws = ws
        self.plan = plan
        self.panel = plan.panel
        self.rubric = plan.rubric
        self.budget = budget
        self.reporter = reporter
        self.keys = keys
        self.secrets = tuple(k for k in keys.values() if k)
        self.tallies = {
            jp.judge.name: JudgeTally(
                judge=jp.judge.name,
                kind=jp.judge.kind,
                model=jp.judge.model,
                cases=jp.cases,
                already_labelled=jp.already_labelled,
            )
            for jp in plan.judges
        }

    # ------------------------------------------------------------------ labels

    def _label(
        self, jp: JudgePlan, pair: Pair, content: str | None, refusal: str | None = None
    ) -> LabelRecord:
        parsed = parse_judgment(self.rubric, content)
        reason = parsed.reason
        if parsed.label is None and reason == "empty" and refusal:
            reason = "refusal"
        return LabelRecord(
            case_id=pair.case.case_id,
            rater=jp.judge.name,
            rater_kind="judge",
            label=parsed.label,
            reason=reason,
            rationale=scrub(parsed.rationale, self.secrets),
            raw=scrub(content, self.secrets),
            rubric_id=self.rubric.id,
            rubric_hash=self.rubric.content_hash,
            panel=self.panel.name,
            model=jp.judge.model,
            request_hash=pair.request_hash,
            origin="judge",
        )

    def _count(self, tally: JudgeTally, record: LabelRecord) -> None:
        if record.label is None:
            tally.add_invalid(record.reason or "invalid")
        else:
            tally.valid += 1

    def answer_from_cache(self) -> None:
        """Label every pair the cache answers, in batched transactions."""
        batch: list[LabelRecord] = []
        for jp in self.plan.judges:
            tally = self.tallies[jp.judge.name]
            for pair in jp.cache_hits:
                cached = pair.cached or {}
                record = self._label(jp, pair, cached.get("content"), cached.get("refusal"))
                record.cost_usd = 0.0
                batch.append(record)
                tally.cache_hits += 1
                self._count(tally, record)
                if len(batch) >= 1000:
                    self.ws.add_labels(batch)
                    batch = []
            self.reporter.advance(jp.judge.name, len(jp.cache_hits))
        if batch:
            self.ws.add_labels(batch)

    # ------------------------------------------------------------------- calls

    def _cost(self, jp: JudgePlan, outcome: CallOutcome) -> float | None:
        if not jp.costs.known:
            return None
        if outcome.cost_usd is not None:
            return outcome.cost_usd
        if jp.price is None or outcome.input_tokens is None or outcome.output_tokens is None:
            return None
        return jp.price.cost(outcome.input_tokens, outcome.output_tokens)

    def _store(self, jp: JudgePlan, pair: Pair, outcome: CallOutcome) -> float | None:
        """Commit the call and its label together; returns the call's cost."""
        tally = self.tallies[jp.judge.name]
        cost = self._cost(jp, outcome)
        failure: Failure | None = outcome.failure
        response = outcome.response
        if response is not None and self.secrets:
            response = {
                k: scrub(v, self.secrets) if isinstance(v, str) else v for k, v in response.items()
            }
        record: LabelRecord | None = None
        if failure is None:
            record = self._label(jp, pair, outcome.content, (response or {}).get("refusal"))
        elif not failure.fatal:
            record = LabelRecord(
                case_id=pair.case.case_id,
                rater=jp.judge.name,
                rater_kind="judge",
                label=None,
                reason=failure.reason,
                note=failure.message,
                rubric_id=self.rubric.id,
                rubric_hash=self.rubric.content_hash,
                panel=self.panel.name,
                model=jp.judge.model,
                request_hash=pair.request_hash,
                origin="judge",
            )
        if record is not None:
            record.cost_usd = cost
            record.input_tokens = outcome.input_tokens
            record.output_tokens = outcome.output_tokens
        with self.ws.transaction():
            self.ws.store_call(
                request_hash=pair.request_hash,
                model=jp.judge.model,
                api_base=jp.judge.api_base,
                request=full_request(jp.settings, pair.messages),
                response=response,
                status="ok" if failure is None else "error",
                error=None if failure is None else f"{failure.reason}: {failure.message}",
                latency_ms=round(outcome.latency_ms, 3),
                cost_usd=cost,
                input_tokens=outcome.input_tokens,
                output_tokens=outcome.output_tokens,
            )
            if record is not None:
                self.ws.add_label(record)
        tally.calls += 1
        tally.input_tokens += outcome.input_tokens or 0
        tally.output_tokens += outcome.output_tokens or 0
        if cost is None:
            tally.cost_unknown += 1
        else:
            tally.cost_usd += cost
        if record is not None:
            self._count(tally, record)
        return cost

    def _worst(self, jp: JudgePlan, pair: Pair) -> float:
        if jp.price is None:
            return 0.0
        return jp.price.cost(pair.est_input_upper, self.panel.max_tokens)

    async def run_judge(self, jp: JudgePlan) -> None:
        tally = self.tallies[jp.judge.name]
        queue = list(reversed(jp.to_call))
        api_key = self.keys.get(jp.judge.name)
        timeout = self.panel.timeout_s

        def on_retry(failure: Failure, sleep: float) -> None:
            tally.retries += 1

        async def worker() -> None:
            while queue and tally.error is None:
                pair = queue[-1]
                worst = self._worst(jp, pair)
                if not self.budget.reserve(worst):
                    return
                queue.pop()
                kwargs = litellm_kwargs(jp.settings, pair.messages, timeout)
                kwargs.update(jp.costs.litellm_kwargs)
                try:
                    outcome = await call_model(
                        self.panel, kwargs, api_key=api_key, secrets=self.secrets, on_retry=on_retry
                    )
                except BaseException:
                    self.budget.settle(worst, 0.0)
                    raise
                if outcome.failure is not None and outcome.failure.fatal and tally.error is None:
                    tally.error = f"{outcome.failure.reason}: {outcome.failure.message}"
                cost = self._store(jp, pair, outcome)
                self.budget.settle(worst, cost)
                self.reporter.advance(jp.judge.name)

        workers = [worker() for _ in range(min(jp.judge.concurrency, len(queue)))]
        await asyncio.gather(*workers)
        tally.not_started = len(queue)

    async def run_calls(self) -> None:
        await asyncio.gather(*(self.run_judge(jp) for jp in self.plan.judges if jp.to_call))


def resolve_keys(plan: RunPlan) -> dict[str, str | None]:
    """Each judge's API key, read now; one error before any call if one is missing."""
    keys: dict[str, str | None] = {}
    for jp in plan.judges:
        if not jp.to_call:
            keys[jp.judge.name] = None
            continue
        keys[jp.judge.name] = jp.judge.api_key()
        if jp.judge.kind == "local_llm":
            from tiap.judge.local_llm import check_available

            check_available()
    return keys


def check_budget_prices(plan: RunPlan, max_cost: float | None) -> None:
    if max_cost is None:
        return
    unpriced = [jp.judge for jp in plan.judges if jp.to_call and jp.price is None]
    if unpriced:
        names = ", ".join(f"'{j.name}' ({j.model})" for j in unpriced)
        raise TiapError(
            f"--max-cost needs a price for every judge; no known price for {names}: add "
            "input_cost_per_mtok and output_cost_per_mtok to the panel"
        )


async def execute(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
) -> RunSummary:
    """Carry out a plan: cache answers first, then the calls."""
    check_budget_prices(plan, max_cost)
    keys = resolve_keys(plan)
    reporter = reporter or _NoReporter()
    for jp in plan.judges:
        reporter.start(jp.judge.name, len(jp.pairs))
    run = _Run(ws, plan, Budget(max_cost), reporter, keys)
    run.answer_from_cache()
    await run.run_calls()
    summary = RunSummary(
        panel=plan.panel.name,
        rubric_id=plan.rubric.id,
        rubric_hash=plan.rubric.content_hash,
        subset=plan.subset,
        cases=plan.cases,
        judges=[run.tallies[jp.judge.name] for jp in plan.judges],
        max_cost_usd=max_cost,
        stopped_by_budget=run.budget.exhausted,
    )
    return summary.finish()


def run_panel(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str | None = None,
    max_cost: float | None = None,
    retry_failed: bool = False,
    reporter: Reporter | None = None,
) -> RunSummary:
    """Plan and execute (the Python API of ``tiap judge run``)."""
    if max_cost is not None and max_cost < 0:
        raise TiapError("--max-cost must not be negative")
    plan = plan_run(ws, panel, rubric, subset=subset, retry_failed=retry_failed)
    return asyncio.run(execute(ws, plan, max_cost=max_cost, reporter=reporter))
