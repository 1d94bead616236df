"""Plan a panel run: which (case, judge) pairs need a label, and which of those
the ``model_calls`` cache answers; ``--dry-run`` figures of a plan.

"Already judged" and the cache key agree: a (case, judge) pair is done for a run
when the judge's latest label on that case under this rubric hash carries the
request hash the plan would send now (``labels.request_hash``: model, api_base,
messages, temperature, max_tokens, response format, seed and params). So editing
a panel setting re-judges every pair; where the same request was made before, the
``model_calls`` cache answers it without a request, so switching a setting back
is free and makes the current settings' label the latest again. With
``retry_failed``, a latest label that failed in transport (timeout, rate limit,
server or connection error, bad request) does not count as done.

A judge may not take a name a human rater already uses in the workspace (rater
names are one namespace); the plan refuses it.

A plan is a snapshot: other runs may judge the same pairs at the same time. The
plan records the workspace's newest label id (its *label epoch*); a pair is
claimed before it is called (:mod:`tiap.judge.claims`), and a label stored after
the epoch with the pair's request hash means another run judged it meanwhile.
Pairs whose request is a line of an open provider batch (``tiap judge run
--batch``) belong to that batch (:attr:`Pair.batch`): they are neither called nor
submitted again until its results are stored.

Pairs that send the same request (the same cache key: say, one memory at one
rank credited for one query in two runs) are one :class:`Group`: it is called
once and its answer labels every pair of it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import Case, Workspace
from tiap.cases.probe_models import ProbeTag
from tiap.cases.vocab import JUDGE
from tiap.errors import TiapError
from tiap.judge.failures import TRANSPORT_REASONS
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.pricing import CostPolicy, Price, cost_policy, judge_price
from tiap.judge.request import (
    canonical_json,
    estimate_tokens,
    judge_settings,
    request_hash,
    settings_hash,
)
from tiap.judge.scale_gate import GateDecision, require_scale_gate
from tiap.judge.summary import DryRun, JudgeEstimate
from tiap.rubric import Rubric, render_messages

#: output tokens assumed for a typical judgment in cost estimates.
TYPICAL_OUTPUT_TOKENS = 100


@dataclass
class Pair:
    """One (case, judge) pair that needs a label."""

    case: Case
    messages: list[dict[str, str]]
    request_hash: str
    est_input: int
    est_input_upper: int
    cached: dict[str, Any] | None = None
    #: the open provider-batch submission whose line answers this pair, if any.
    batch: int | None = None


@dataclass
class Group:
    """The pairs of one judge that send one request (one cache key): one call."""

    request_hash: str
    pairs: list[Pair]

    @property
    def messages(self) -> list[dict[str, str]]:
        return self.pairs[0].messages

    @property
    def case_ids(self) -> list[str]:
        return [p.case.case_id for p in self.pairs]


def group_pairs(pairs: Sequence[Pair]) -> list[Group]:
    """Pairs grouped by request hash, in the order each hash first appears."""
    groups: dict[str, Group] = {}
    for pair in pairs:
        group = groups.get(pair.request_hash)
        if group is None:
            groups[pair.request_hash] = Group(pair.request_hash, [pair])
        else:
            group.pairs.append(pair)
    return list(groups.values())


@dataclass
class JudgePlan:
    judge: JudgeSpec
    settings: dict[str, Any]
    price: Price | None
    costs: CostPolicy
    settings_hash: str = ""
    cases: int = 0
    already_labelled: int = 0
    pairs: list[Pair] = field(default_factory=list)
    #: a probe's plan (:mod:`tiap.probe`): its labels are probe labels, kept apart
    probe: ProbeTag | None = None

    @property
    def key(self) -> str:
        """The judge's name, and a probe's variant after it: its tally and bar."""
        return self.judge.name if self.probe is None else f"{self.judge.name} {self.probe.variant}"

    @property
    def to_call(self) -> list[Pair]:
        """Pairs that need a request (not cached, not waiting in a provider batch)."""
        return [p for p in self.pairs if p.cached is None and p.batch is None]

    @property
    def cache_hits(self) -> list[Pair]:
        return [p for p in self.pairs if p.cached is not None]

    @property
    def in_batches(self) -> list[Pair]:
        """Pairs a line of an open provider batch will answer."""
        return [p for p in self.pairs if p.cached is None and p.batch is not None]

    @property
    def groups(self) -> list[Group]:
        """:attr:`to_call` grouped by request: one call per group."""
        return group_pairs(self.to_call)


@dataclass
class RunPlan:
    panel: Panel
    rubric: Rubric
    subset: str | None
    cases: int
    judges: list[JudgePlan]
    #: the scale gate for this run (see :mod:`tiap.judge.scale_gate`)
    gate: GateDecision = field(default_factory=lambda: GateDecision(check=None))
    #: the newest label id when the plan was made (see the module docstring)
    label_epoch: int = 0

    @property
    def gate_note(self) -> str | None:
        """Set when the run goes past a gate that did not pass (``force``): tell the user."""
        return self.gate.note


def _existing(
    ws: Workspace, panel: Panel, rubric: Rubric, retry_failed: bool
) -> dict[tuple[str, str], str]:
    """(case_id, judge) -> the request hash of the judge's latest label on the case
    under this rubric, for the labels that count as done (see the module docstring);
    the pair is done when that hash is the one the plan would send now."""
    latest = ws.latest_judge_labels([j.name for j in panel.judges], rubric.content_hash)
    done: dict[tuple[str, str], str] = {}
    for key, mark in latest.items():
        code = (mark.reason or "").split(":", 1)[0]
        if retry_failed and mark.label is None and code in TRANSPORT_REASONS:
            continue
        if mark.request_hash is not None:
            done[key] = mark.request_hash
    return done


def _cached_responses(ws: Workspace, hashes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Successful stored responses by request hash."""
    return ws.cached_responses(hashes)


def plan_run(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str | None = None,
    retry_failed: bool = False,
    force: bool = False,
    enforce_gate: bool = True,
) -> RunPlan:
    """Which pairs need a label, and which of those the cache can answer.

    First the scale gate (:func:`tiap.judge.scale_gate.require_scale_gate`): beyond a
    validation subset a panel without a passed gate is refused (:class:`TiapError`
    naming the failing figures) unless ``force``, which is recorded and leaves a
    note on the plan (:attr:`RunPlan.gate_note`). ``enforce_gate=False`` only looks
    at the gate (``plan.gate``), refusing and recording nothing: for dry runs.
    """
    gate = require_scale_gate(ws, panel, rubric, subset=subset, force=force, enforce=enforce_gate)
    cases = ws.cases(subset=subset)
    if not cases:
        where = f"subset '{subset}'" if subset else f"workspace {ws.path}"
        raise TiapError(f"{where} has no cases (run 'tiap cases extract' first)")
    for judge in panel.judges:
        ws.require_rater_kind(judge.name, JUDGE, hint=f"rename it in panel '{panel.name}'")
    epoch = ws.max_label_id()  # before the labels are read: a later label is newer
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
            settings_hash=settings_hash(settings),
            cases=len(cases),
        )
        for case, messages, messages_json, typical, upper in rendered:
            h = request_hash(settings_json, messages_json)
            if done.get((case.case_id, judge.name)) == h:
                plan.already_labelled += 1
                continue
            plan.pairs.append(Pair(case, messages, h, typical, upper))
        plans.append(plan)
    cached = _cached_responses(ws, [p.request_hash for jp in plans for p in jp.pairs])
    for jp in plans:
        for p in jp.pairs:
            p.cached = cached.get(p.request_hash)
        batched = ws.open_batch_requests(
            jp.judge.name, rubric.content_hash, [p.request_hash for p in jp.pairs if not p.cached]
        )
        for p in jp.pairs:
            if p.cached is None and p.request_hash in batched:
                p.batch = batched[p.request_hash]
    return RunPlan(
        panel=panel,
        rubric=rubric,
        subset=subset,
        cases=len(cases),
        judges=plans,
        gate=gate,
        label_epoch=epoch,
    )


def _missing_key(judge: JudgeSpec) -> str | None:
    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        return judge.api_key_env
    return None


def dry_run(plan: RunPlan) -> DryRun:
    """Figures of a plan without calling anything: one call per distinct request."""
    out = []
    for jp in plan.judges:
        to_call = [g.pairs[0] for g in jp.groups]
        est_in = sum(p.est_input for p in to_call)
        est_upper = sum(p.est_input_upper for p in to_call)
        typical: float | None
        upper: float | None
        if not to_call:
            typical, upper = 0.0, 0.0
        elif jp.price is None:
            typical = upper = None
        else:
            typical = jp.price.cost(est_in, TYPICAL_OUTPUT_TOKENS * len(to_call))
            upper = jp.price.cost(est_upper, plan.panel.max_tokens * len(to_call))
        out.append(
            JudgeEstimate(
                judge=jp.key,
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
                in_batches=len(jp.in_batches),
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
