"""Run probes: plan them (:mod:`tiap.probe.probe_plan`), carry the calls out on the
judges' one path (:func:`tiap.judge.reporting.execute_with_progress`), then read
the stored probe labels into each judge's figures and verdict
(:mod:`tiap.probe.figures`).

:func:`run_probes` is the API (a coroutine); :func:`probe_panel` runs it from
synchronous code (also inside a running event loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiap.cases import Workspace
from tiap.cases.diagnostic_events import ProbeEvent, ProbeThresholds
from tiap.cases.events import record_event
from tiap.judge.panel import Panel
from tiap.judge.summary import RunSummary
from tiap.probe.figures import judge_figures
from tiap.probe.probe_plan import DEFAULT_REPEATS, ProbePlan, plan_probes
from tiap.progress import Reporter
from tiap.rubric import Rubric

__all__ = [
    "DEFAULT_MAX_INJECTION",
    "DEFAULT_MIN_CASES",
    "ProbeRun",
    "probe_event",
    "probe_panel",
    "run_probes",
]

#: the largest planted-label share tolerated, and the fewest compared cases a
#: kind needs for a verdict (``--max-injection``, ``--min-cases``).
DEFAULT_MAX_INJECTION = 0.05
DEFAULT_MIN_CASES = 10


@dataclass
class ProbeRun:
    """What a probe run did (its calls, as ``judge run`` reports them) and found."""

    summary: RunSummary
    result: ProbeEvent

    @property
    def complete(self) -> bool:
        return not self.summary.incomplete and not self.summary.errors


def probe_event(ws: Workspace, plan: ProbePlan, thresholds: ProbeThresholds) -> ProbeEvent:
    """Every judge's figures and verdict from the stored probe labels of ``plan``."""
    run = plan.run
    return ProbeEvent(
        subset=str(run.subset),
        panel=run.panel.name,
        rubric_id=run.rubric.id,
        rubric_hash=run.rubric.content_hash,
        kinds=plan.kinds,
        repeats=plan.repeats if "repeat" in plan.kinds else None,
        seed=plan.seed,
        thresholds=thresholds,
        judges=[judge_figures(ws, plan, name, thresholds) for name in plan.judges],
    )


async def run_probes(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str,
    kinds: Sequence[str],
    repeats: int = DEFAULT_REPEATS,
    seed: int = 0,
    thresholds: ProbeThresholds | None = None,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    lease_s: float | None = None,
    record: bool = True,
) -> ProbeRun:
    """Probe every judge of ``panel`` on ``subset`` (see :mod:`tiap.probe`). A complete
    run records its results as a ``probe`` event (read by the agreement report's
    diagnostics) unless ``record`` is false (the caller records them, e.g. with its
    written report)."""
    from tiap.judge.reporting import execute_with_progress

    limits = thresholds or ProbeThresholds(
        max_injection=DEFAULT_MAX_INJECTION, min_cases=DEFAULT_MIN_CASES
    )
    plan = plan_probes(ws, panel, rubric, subset=subset, kinds=kinds, repeats=repeats, seed=seed)
    summary = await execute_with_progress(
        ws, plan.run, max_cost=max_cost, reporter=reporter, lease_s=lease_s
    )
    run = ProbeRun(summary, probe_event(ws, plan, limits))
    if record and run.complete:
        record_event(ws, run.result)
    return run


def probe_panel(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str,
    kinds: Sequence[str],
    repeats: int = DEFAULT_REPEATS,
    seed: int = 0,
    thresholds: ProbeThresholds | None = None,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    lease_s: float | None = None,
    record: bool = True,
) -> ProbeRun:
    """:func:`run_probes` from synchronous code, also inside a running event loop
    (see :func:`tiap.judge.runner.run_on_workspace`)."""
    from tiap.judge.runner import run_on_workspace

    return run_on_workspace(
        ws,
        lambda w: run_probes(
            w,
            panel,
            rubric,
            subset=subset,
            kinds=kinds,
            repeats=repeats,
            seed=seed,
            thresholds=thresholds,
            max_cost=max_cost,
            reporter=reporter,
            lease_s=lease_s,
            record=record,
        ),
    )
