"""Drift on a frozen anchor set: re-judge its anchors with the panel as it is now and
compare each judge with its own frozen labels.

A drift run is recorded first (a ``drift_start`` event: its id is the **drift-run
id**). Each anchor is re-judged once per judge on the judges' one path (claimed,
leased, budgeted), with the drift-run id in the request's cache key, so the calls
bypass the cache (that is the point) and are recorded like any other call; the
judgments are probe labels of kind ``drift`` with the run id. A run stopped
before its results were recorded is resumed by the next ``tiap judge drift`` of that
anchor set: the same run id, nothing asked twice.

Per judge, on the anchors where the frozen and the new label are both valid: the
share changed, Cohen's kappa of the new labels against the frozen ones, the exact
McNemar test on the binary collapse, accuracy against the human reference then and
now with Newcombe's interval of the difference, and an EWMA chart (lambda 0.3,
L = 3) of the share changed over every drift run of the anchor set, with target
the judge's noise floor (its repeat flip rate in the latest probe run of the
panel, else 0). A judge **drifted** when McNemar's p is below ``max_p`` (0.05) or
the chart raised an alarm.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tiap.cases import Case, Workspace
from tiap.cases.diagnostic_events import DriftedJudge, DriftEvent, DriftStartEvent, ProbeEvent
from tiap.cases.events import read_events, record_event
from tiap.cases.probe_models import AnchorLabel, AnchorSet, ProbeTag
from tiap.errors import TiapError
from tiap.judge.panel import Panel
from tiap.judge.plan import JudgePlan, Pair, RunPlan
from tiap.judge.pricing import cost_policy, judge_price
from tiap.judge.request import (
    canonical_json,
    estimate_tokens,
    judge_settings,
    request_hash,
    settings_hash,
)
from tiap.judge.summary import RunSummary
from tiap.probe.anchor import text_hash
from tiap.probe.drift_chart import ewma_figure
from tiap.progress import Reporter
from tiap.report.blocks import Badge, Block, Figures, data, heading, para, table
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.numbers import bounds, num
from tiap.report.page import page
from tiap.rubric import Rubric, render_messages
from tiap.stats.chance_agreement import cohen_kappa
from tiap.stats.control_chart import EWMA_L, EWMA_LAMBDA, EwmaPoint, ewma_chart
from tiap.stats.exact_tests import mcnemar_exact
from tiap.stats.paired_shares import paired_difference

__all__ = [
    "DriftPlan",
    "DriftRun",
    "drift_blocks",
    "drift_figures",
    "drift_history",
    "plan_drift",
    "run_drift",
    "write_drift_report",
]

MAX_P = 0.05


@dataclass
class DriftPlan:
    run: RunPlan
    anchor: AnchorSet
    run_id: int
    frozen: list[AnchorLabel]
    reference: dict[str, str | None]
    #: judge -> case_id -> request hash of its drift judgment
    requests: dict[str, dict[str, str]]
    settings_hashes: dict[str, str]


def _open_run(ws: Workspace, anchor: str, panel: Panel, rubric: Rubric, judges: list[str]) -> int:
    """The drift run to work on: the latest of this anchor set whose results were never
    recorded (a run stopped), else a new one."""
    ended = {e.run for e in read_events(ws, DriftEvent)}
    for record in reversed(ws.event_records(DriftStartEvent.KIND.value)):
        start = DriftStartEvent.model_validate(record.payload)
        if record.id not in ended and start.anchor == anchor and start.panel == panel.name:
            return int(record.id or 0)
    event = DriftStartEvent(
        anchor=anchor, panel=panel.name, rubric_hash=rubric.content_hash, judges=judges
    )
    return record_event(ws, event)


def _anchor_cases(ws: Workspace, anchor: AnchorSet, rubric: Rubric) -> list[Case]:
    rows = ws.anchor_cases(anchor.name)
    ids = [r.case_id for r in rows]
    gone = sorted(set(ids) - ws.live_case_ids(ids))
    if gone:
        raise TiapError(
            f"anchor set '{anchor.name}': {len(gone)} of its cases are no longer in the "
            f"workspace (first: {gone[0]}); its drift cannot be measured"
        )
    by_id = {c.case_id: c for c in ws.cases(subset=anchor.subset)} if anchor.subset else {}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise TiapError(
            f"anchor set '{anchor.name}': subset '{anchor.subset}' no longer holds its case "
            f"'{missing[0]}'"
        )
    cases = [by_id[i] for i in ids]
    for row, case in zip(rows, cases, strict=True):
        if text_hash(rubric, case.prompt_fields()) != row.text_hash:
            raise TiapError(
                f"anchor set '{anchor.name}': the text of case '{case.case_id}' changed since "
                "it was frozen; its drift cannot be measured"
            )
    return cases


def plan_drift(ws: Workspace, name: str, panel: Panel, rubric: Rubric) -> DriftPlan:
    """The drift run of anchor set ``name`` for ``panel``'s judges that were frozen."""
    anchor = ws.anchor_set(name)
    if anchor.rubric_hash != rubric.content_hash:
        raise TiapError(
            f"anchor set '{name}' was frozen under rubric '{anchor.rubric_id}' as it was then; "
            "give that rubric (--rubric)"
        )
    judges = [j for j in panel.judges if j.name in anchor.judges]
    if not judges:
        raise TiapError(
            f"panel '{panel.name}' has none of anchor set '{name}''s judges "
            f"({', '.join(anchor.judges)})"
        )
    cases = _anchor_cases(ws, anchor, rubric)
    run_id = _open_run(ws, name, panel, rubric, [j.name for j in judges])
    plan = RunPlan(panel=panel, rubric=rubric, subset=anchor.subset, cases=len(cases), judges=[])
    plan.label_epoch = 0  # every drift label of this run counts: the run id is in the key
    requests: dict[str, dict[str, str]] = {}
    hashes: dict[str, str] = {}
    tag = ProbeTag(
        kind="drift", variant=f"drift:{run_id}", params={"anchor": name}, drift_run=run_id
    )
    rendered = [(c, render_messages(rubric, c.prompt_fields())) for c in cases]
    for judge in judges:
        base = judge_settings(panel, judge, rubric)
        settings = {**base, "probe": tag.variant}
        settings_json = canonical_json(settings)
        hashes[judge.name] = settings_hash(base)
        jp = JudgePlan(
            judge=judge,
            settings=settings,
            price=judge_price(judge),
            costs=cost_policy(judge),
            settings_hash=hashes[judge.name],
            cases=len(cases),
            probe=tag,
        )
        mine = requests.setdefault(judge.name, {})
        for case, messages in rendered:
            h = request_hash(settings_json, canonical_json(messages))
            mine[case.case_id] = h
            typical, upper = estimate_tokens(messages)
            jp.pairs.append(Pair(case, messages, h, typical, upper))
        done = ws.latest_probe_labels(judge.name, mine.values())
        left = [p for p in jp.pairs if (p.case.case_id, p.request_hash) not in done]
        jp.already_labelled = len(jp.pairs) - len(left)
        jp.pairs = left
        cached = ws.cached_responses([p.request_hash for p in left])
        for p in left:
            p.cached = cached.get(p.request_hash)
        plan.judges.append(jp)
    return DriftPlan(
        run=plan,
        anchor=anchor,
        run_id=run_id,
        frozen=ws.anchor_labels(name),
        reference={c.case_id: c.reference for c in ws.anchor_cases(name)},
        requests=requests,
        settings_hashes=hashes,
    )


def _noise_floor(ws: Workspace, panel: str, judge: str) -> tuple[float, str]:
    for event in reversed(read_events(ws, ProbeEvent)):
        found = event.judge(judge) if event.panel == panel else None
        repeat = next((k for k in (found.kinds if found else []) if k.kind == "repeat"), None)
        if repeat is not None and repeat.flip_rate is not None:
            return repeat.flip_rate, "repeat probe"
    return 0.0, "none: no repeat probe of this judge"


def _label_pairs(
    then: Mapping[str, str | None], now: Mapping[str, str | None]
) -> list[tuple[str, str]]:
    """(frozen, new) labels of the anchors with both valid."""
    pairs: list[tuple[str, str]] = []
    for case, label in now.items():
        frozen = then.get(case)
        if frozen is not None and label is not None:
            pairs.append((frozen, label))
    return pairs


def _mcnemar(
    rubric: Rubric, pairs: Sequence[tuple[str, str]]
) -> tuple[int | None, int | None, float | None]:
    """The binary collapse's discordant counts (positive then only, positive now only)
    and the exact McNemar p (``None`` on a rubric without one, or no pairs)."""
    if not rubric.binary or not pairs:
        return None, None, None
    pos = rubric.binary_positive
    then_only = now_only = 0
    for x, y in pairs:
        was, is_now = rubric.collapse(x) == pos, rubric.collapse(y) == pos
        then_only += was and not is_now
        now_only += is_now and not was
    return then_only, now_only, mcnemar_exact(then_only, now_only).p_value


def _accuracy(
    plan: DriftPlan, then: Mapping[str, str | None], now: Mapping[str, str | None]
) -> dict[str, object]:
    """Accuracy against the human majority then and now, with Newcombe's interval of
    the difference (empty without a reference on an anchor with both labels)."""
    ref = []
    for case, r in plan.reference.items():
        x, y = then.get(case), now.get(case)
        if r and x and y:
            ref.append((x, y, r))
    if not ref:
        return {}
    both = sum(1 for x, y, r in ref if x == r and y == r)
    first = sum(1 for x, y, r in ref if x == r and y != r)
    second = sum(1 for x, y, r in ref if x != r and y == r)
    diff = paired_difference(both, first, second, len(ref) - both - first - second)
    return {
        "accuracy_n": len(ref),
        "accuracy_then": round(diff.first, 6),
        "accuracy_now": round(diff.second, 6),
        "accuracy_diff": round(diff.difference, 6),
        "accuracy_diff_ci": [round(diff.lower, 6), round(diff.upper, 6)],
    }


def _ewma_point(
    history: Sequence[DriftEvent], name: str, rate: float | None, n: int, floor: float
) -> EwmaPoint | None:
    """The EWMA chart's point of this run, over every earlier run of the set."""
    if rate is None:
        return None
    series = []
    for event in history:
        j = event.judge(name)
        if j is not None and j.change_rate is not None:
            series.append((j.change_rate, j.n))
    series.append((rate, n))
    return ewma_chart([v for v, _ in series], [k for _, k in series], floor)[-1]


def _r6(value: float | None) -> float | None:
    """A figure as stored: six decimals (``None`` stays)."""
    return None if value is None else round(float(value), 6)


def _reasons(p: float | None, point: EwmaPoint | None, n: int) -> list[str]:
    reasons = []
    if p is not None and p < MAX_P:
        reasons.append(f"McNemar p = {p:.3g} < {MAX_P}")
    if point is not None and point.alarm:
        reasons.append("EWMA alarm")
    if n == 0:
        reasons.append("no anchor with both a frozen and a new valid label")
    return reasons


def _changes(rubric: Rubric, pairs: Sequence[tuple[str, str]]) -> tuple[int, float | None]:
    """How many anchors changed label, and Cohen's kappa of then against now."""
    index = {lab: i for i, lab in enumerate(rubric.label_names)}
    then = [index[a] for a, _ in pairs]
    now = [index[b] for _, b in pairs]
    changed = sum(1 for a, b in zip(then, now, strict=True) if a != b)
    kappa = cohen_kappa(then, now, len(index))
    return changed, None if kappa is None else float(kappa)


def _ewma_values(point: EwmaPoint | None) -> tuple[float | None, float | None]:
    """The point's EWMA and upper control limit, as stored."""
    if point is None:
        return None, None
    return _r6(point.ewma), _r6(point.upper)


def _judge(ws: Workspace, plan: DriftPlan, name: str, history: list[DriftEvent]) -> DriftedJudge:
    rubric = plan.run.rubric
    hashes = plan.requests[name]
    stored = ws.latest_probe_labels(name, hashes.values())
    now = {c: getattr(stored.get((c, h)), "label", None) for c, h in hashes.items()}
    frozen = [lab for lab in plan.frozen if lab.rater == name]
    then = {lab.case_id: lab.label for lab in frozen}
    pairs = _label_pairs(then, now)
    n = len(pairs)
    changed, kappa = _changes(rubric, pairs)
    b, c, p = _mcnemar(rubric, pairs)
    floor, source = _noise_floor(ws, plan.run.panel.name, name)
    rate = changed / n if n else None
    point = _ewma_point(history, name, rate, n, floor)
    alarm = point is not None and point.alarm
    ewma, upper = _ewma_values(point)
    model = next(j.model for j in plan.run.panel.judges if j.name == name)
    judged = DriftedJudge(
        name=name,
        frozen_models=sorted({lab.model or "" for lab in frozen}),
        frozen_settings=sorted({lab.settings_hash or "" for lab in frozen}),
        model=model,
        settings_hash=plan.settings_hashes[name],
        n=n,
        changed=changed,
        change_rate=_r6(rate),
        kappa=_r6(kappa),
        mcnemar_b=b,
        mcnemar_c=c,
        mcnemar_p=p,
        noise_floor=floor,
        noise_source=source,
        ewma=ewma,
        ewma_upper=upper,
        alarm=alarm,
        drifted=(p is not None and p < MAX_P) or alarm,
        reasons=_reasons(p, point, n),
    )
    return judged.model_copy(update=_accuracy(plan, then, now))


def drift_history(ws: Workspace, anchor: str) -> list[DriftEvent]:
    """Every recorded drift run of an anchor set, oldest first."""
    return [e for e in read_events(ws, DriftEvent) if e.anchor == anchor]


def drift_figures(ws: Workspace, plan: DriftPlan) -> DriftEvent:
    """The drift run's results (not recorded: the caller records them when complete)."""
    history = drift_history(ws, plan.anchor.name)
    return DriftEvent(
        run=plan.run_id,
        anchor=plan.anchor.name,
        panel=plan.run.panel.name,
        rubric_hash=plan.run.rubric.content_hash,
        max_p=MAX_P,
        ewma_lambda=EWMA_LAMBDA,
        ewma_l=EWMA_L,
        judges=[_judge(ws, plan, jp.judge.name, history) for jp in plan.run.judges],
    )


def drift_blocks(event: DriftEvent, history: Sequence[DriftEvent] = ()) -> list[Block]:
    """The drift report's blocks (Markdown and HTML are written from them); ``history``:
    the earlier drift runs of the set, for the EWMA figures."""
    rows = []
    for j in event.judges:
        ci = j.accuracy_diff_ci
        rows.append(
            (
                data(j.name),
                data(j.model),
                j.n,
                j.changed,
                num(j.change_rate),
                num(j.kappa),
                "n/a"
                if j.mcnemar_p is None
                else f"{j.mcnemar_b}/{j.mcnemar_c}, p = {num(j.mcnemar_p)}",
                f"{num(j.accuracy_then)} -> {num(j.accuracy_now)} "
                + ("" if ci is None else f"({num(j.accuracy_diff)} {bounds(ci[0], ci[1])})"),
                f"{num(j.ewma)} (upper {num(j.ewma_upper)}, target {num(j.noise_floor)})",
                Badge("drifted", "fail") if j.drifted else Badge("steady", "pass"),
            )
        )
    return [
        heading(1, "Drift on anchor set ", data(event.anchor)),
        para(
            f"Drift run {event.run}, panel ",
            data(event.panel),
            f": each judge against its own frozen labels. Drifted: McNemar p < {event.max_p}"
            f" or an EWMA alarm (lambda {event.ewma_lambda}, L = {event.ewma_l}) over every"
            " drift run of the set.",
        ),
        table(
            [
                "judge",
                "model",
                "n",
                "changed",
                "share changed",
                "kappa",
                "McNemar",
                "accuracy then -> now (diff, 95% CI)",
                "EWMA",
                "",
            ],
            rows,
        ),
        Figures(
            [f for j in event.judges if (f := ewma_figure([*history, event], j.name)) is not None]
        ),
    ]


def write_drift_report(event: DriftEvent, out_dir: Path, history: Sequence[DriftEvent] = ()) -> str:
    """``report.json``, ``report.md`` and ``report.html`` in ``out_dir``; the sha256 of
    ``report.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = event.model_dump_json(indent=2, exclude={"created_at"}) + "\n"
    (out_dir / "report.json").write_text(text, encoding="utf-8")
    blocks = drift_blocks(event, history)
    (out_dir / "report.md").write_text(to_markdown(blocks), encoding="utf-8")
    title = f"Drift on anchor set {event.anchor}"
    (out_dir / "report.html").write_text(page(title, to_html(blocks)), encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class DriftRun:
    """What a drift run did (its calls) and found; ``result`` is recorded when the
    run completed."""

    summary: RunSummary
    result: DriftEvent


async def run_drift(
    ws: Workspace,
    name: str,
    panel: Panel,
    rubric: Rubric,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
) -> DriftRun:
    """Re-judge anchor set ``name`` with ``panel`` and record the results when the run
    completed (the Python API of ``tiap judge drift``, without its report files)."""
    from tiap.judge.reporting import execute_with_progress

    plan = plan_drift(ws, name, panel, rubric)
    summary = await execute_with_progress(ws, plan.run, max_cost=max_cost, reporter=reporter)
    event = drift_figures(ws, plan)
    if not summary.incomplete and not summary.errors:
        record_event(ws, event)
    return DriftRun(summary, event)
