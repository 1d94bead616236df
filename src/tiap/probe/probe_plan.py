"""Plan a probe run: for each judge and probe variant, the subset's cases to
re-judge under the perturbation, as a :class:`~tiap.judge.plan.RunPlan` the
judges' one path carries out (:func:`tiap.judge.runner.execute`: claimed, leased,
budgeted, cached and resumable like ``tiap judge run``).

Each (judge, variant) is one :class:`~tiap.judge.plan.JudgePlan` tagged with its
:class:`~tiap.cases.probe_models.ProbeTag`: its labels are stored as probe labels,
its leases are its own (:func:`tiap.judge.claims.lease_key`). A pair is done when
the judge has a probe label on the case with the request hash the plan would send
now; the ``model_calls`` cache answers a request made before.

The unperturbed judgment a probe is compared with is the judge's latest label on
the case under the rubric, when it was made with the request the panel would send
now (the same settings and text); other cases are not probed (a judge with none is
an error: ``tiap judge run`` first). The ``injection``
probe plants a label the unperturbed judgment did not give, so it is planned only
for cases with a valid one: one variant per planted label (``injection:partial``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tiap.cases import Case, Workspace
from tiap.cases.probe_models import PROBE_KINDS, ProbeTag
from tiap.cases.vocab import JUDGE
from tiap.errors import TiapError
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.plan import JudgePlan, Pair, RunPlan
from tiap.judge.pricing import cost_policy, judge_price
from tiap.judge.request import (
    canonical_json,
    estimate_tokens,
    judge_settings,
    request_hash,
    settings_hash,
)
from tiap.probe.perturb import planted_label, probe_messages, repeat_settings
from tiap.rubric import Rubric, render_messages

__all__ = [
    "DEFAULT_REPEATS",
    "MAX_REPEATS",
    "MIN_REPEATS",
    "ProbePlan",
    "parse_kinds",
    "plan_probes",
]

DEFAULT_REPEATS = 3
MIN_REPEATS = 2
MAX_REPEATS = 20


def parse_kinds(text: str, *, option: str = "--kind") -> list[str]:
    """``order,repeat`` -> the probe kinds, in the order of :data:`PROBE_KINDS`; an
    unknown or missing kind is an error naming ``option`` and the known ones."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in PROBE_KINDS]
    if unknown or not names:
        raise TiapError(
            f"{option}: unknown probe kind {', '.join(repr(u) for u in unknown) or '(none)'}; "
            f"known: {', '.join(PROBE_KINDS)}"
        )
    return [k for k in PROBE_KINDS if k in names]


def check_repeats(repeats: int, *, option: str = "--repeats") -> int:
    if not MIN_REPEATS <= repeats <= MAX_REPEATS:
        raise TiapError(f"{option} must be from {MIN_REPEATS} to {MAX_REPEATS}, got {repeats}")
    return repeats


@dataclass
class ProbePlan:
    """A probe run's plan: the run the judges' path carries out, and what the
    figures compare (each judge's unperturbed label per case, and the request hash
    of every probe judgment per judge, variant and case)."""

    run: RunPlan
    kinds: list[str]
    repeats: int
    seed: int
    #: judge -> its model and the hash of its request settings
    judges: dict[str, JudgeSpec]
    settings_hashes: dict[str, str]
    #: (case_id, judge) -> the unperturbed label compared with (``None``: invalid)
    baseline: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: (judge, variant) -> case_id -> the request hash of its probe judgment
    requests: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    #: cases of the subset without an unperturbed judgment to compare, per judge
    not_compared: dict[str, int] = field(default_factory=dict)


@dataclass
class _Variant:
    tag: ProbeTag
    rubric: Rubric
    settings: dict[str, object]
    cases: list[tuple[Case, list[dict[str, str]]]]


def _variants(
    rubric: Rubric,
    panel: Panel,
    judge: JudgeSpec,
    cases: Sequence[Case],
    kinds: Sequence[str],
    repeats: int,
    seed: int,
    given: dict[str, str | None],
) -> list[_Variant]:
    settings = judge_settings(panel, judge, rubric)
    out: list[_Variant] = []
    for kind in kinds:
        if kind == "repeat":
            plain = [(c, render_messages(rubric, c.prompt_fields())) for c in cases]
            out.extend(
                _Variant(
                    ProbeTag(
                        kind="repeat", variant=f"repeat:{i}", params={"index": i, "of": repeats}
                    ),
                    rubric,
                    repeat_settings(settings, i),
                    plain,
                )
                for i in range(repeats)
            )
        elif kind == "injection":
            by_label: dict[str, list[tuple[Case, list[dict[str, str]]]]] = {}
            for c in cases:
                label = given.get(c.case_id)
                if label is None:
                    continue
                planted = planted_label(
                    rubric.label_names, label, seed, f"{c.case_id}/{judge.name}"
                )
                _, messages = probe_messages(rubric, c, kind, seed=seed, planted=planted)
                by_label.setdefault(planted, []).append((c, messages))
            out.extend(
                _Variant(
                    ProbeTag(kind="injection", variant=f"injection:{lab}", params={"planted": lab}),
                    rubric,
                    settings,
                    by_label[lab],
                )
                for lab in sorted(by_label)
            )
        else:
            shown = rubric
            rendered = []
            for c in cases:
                shown, messages = probe_messages(rubric, c, kind, seed=seed)
                rendered.append((c, messages))
            params: dict[str, object] = (
                {"labels": "reversed", "evidence": "reversed"}
                if kind == "order"
                else {"factor": 3, "seed": seed}
            )
            out.append(
                _Variant(
                    ProbeTag(kind=kind, variant=kind, params=params),  # type: ignore[arg-type]
                    shown,
                    judge_settings(panel, judge, shown),
                    rendered,
                )
            )
    return out


def plan_probes(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str,
    kinds: Sequence[str],
    repeats: int = DEFAULT_REPEATS,
    seed: int = 0,
) -> ProbePlan:
    """Which probe judgments are needed, and which of those the cache answers."""
    check_repeats(repeats)
    cases = ws.cases(subset=subset)
    if not cases:
        raise TiapError(f"subset '{subset}' has no cases (run 'tiap cases subset' first)")
    for judge in panel.judges:
        ws.require_rater_kind(judge.name, JUDGE, hint=f"rename it in panel '{panel.name}'")
    epoch = ws.max_probe_label_id()
    latest = ws.latest_judge_labels([j.name for j in panel.judges], rubric.content_hash)
    plain = {c.case_id: canonical_json(render_messages(rubric, c.prompt_fields())) for c in cases}
    out = ProbePlan(
        run=RunPlan(panel=panel, rubric=rubric, subset=subset, cases=len(cases), judges=[]),
        kinds=list(kinds),
        repeats=repeats,
        seed=seed,
        judges={j.name: j for j in panel.judges},
        settings_hashes={},
    )
    out.run.label_epoch = epoch
    for judge in panel.judges:
        settings = judge_settings(panel, judge, rubric)
        base_json = canonical_json(settings)
        out.settings_hashes[judge.name] = settings_hash(settings)
        given: dict[str, str | None] = {}
        for c in cases:
            mark = latest.get((c.case_id, judge.name))
            if mark is not None and mark.request_hash == request_hash(base_json, plain[c.case_id]):
                given[c.case_id] = mark.label
                out.baseline[(c.case_id, judge.name)] = mark.label
        out.not_compared[judge.name] = len(cases) - len(given)
        if not given:
            raise TiapError(
                f"judge '{judge.name}' has no label on subset '{subset}' made with the request "
                f"panel '{panel.name}' sends now: run 'tiap judge run' on the subset first"
            )
        judged = [c for c in cases if c.case_id in given]  # nothing to compare with: no call
        for variant in _variants(rubric, panel, judge, judged, kinds, repeats, seed, given):
            out.run.judges.append(_judge_plan(judge, variant, out, settings))
    _mark_done_and_cached(ws, out)
    return out


def _judge_plan(
    judge: JudgeSpec, variant: _Variant, out: ProbePlan, base: dict[str, object]
) -> JudgePlan:
    settings_json = canonical_json(variant.settings)
    jp = JudgePlan(
        judge=judge,
        settings=dict(variant.settings),
        price=judge_price(judge),
        costs=cost_policy(judge),
        settings_hash=settings_hash(dict(base)),
        cases=len(variant.cases),
        probe=variant.tag,
    )
    hashes = out.requests.setdefault((judge.name, variant.tag.variant), {})
    for case, messages in variant.cases:
        h = request_hash(settings_json, canonical_json(messages))
        hashes[case.case_id] = h
        typical, upper = estimate_tokens(messages)
        jp.pairs.append(Pair(case, messages, h, typical, upper))
    return jp


def _mark_done_and_cached(ws: Workspace, out: ProbePlan) -> None:
    """Drop the pairs already given a probe label for their request; mark those
    the cache answers."""
    every = [p.request_hash for jp in out.run.judges for p in jp.pairs]
    cached = ws.cached_responses(every)
    for jp in out.run.judges:
        done = ws.latest_probe_labels(jp.judge.name, [p.request_hash for p in jp.pairs])
        left = [p for p in jp.pairs if (p.case.case_id, p.request_hash) not in done]
        jp.already_labelled = len(jp.pairs) - len(left)
        jp.pairs = left
        for p in left:
            p.cached = cached.get(p.request_hash)
