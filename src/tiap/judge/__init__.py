"""LLM judge panels: panels, litellm calls, retries, cache, resume, offline judges.

Python API::

    from tiap.cases import Workspace
    from tiap.judge import load_panel, plan_run, dry_run, run_panel
    from tiap.rubric import load_rubric

    with Workspace("audit.db") as ws:
        rubric = load_rubric("contested-credit")
        run_panel(ws, load_panel("offline"), rubric, subset="validation")
        # beyond the validation subset: after a passed gate (tiap agreement report),
        # or with force=True, recorded
        summary = run_panel(ws, load_panel("offline"), rubric)
        # through the providers' batch APIs, without waiting (run again to collect)
        run_panel(ws, load_panel("my-panel.toml"), rubric, batch=BatchOptions(wait=False))

Several runs may judge one workspace at once: pairs are claimed (leased) before
they are called, and again right before each request is sent, and ``max_cost`` is
one ledger for the runs that overlap (see :mod:`tiap.judge.claims`). Calls take
their judge's route, registered by name (:mod:`tiap.judge.routes`); litellm is
imported only when a judge's route needs it (``run_panel(...,
on_route_load=...)`` is told first). What a run stores is committed in groups by
one writer (:mod:`tiap.cases.group_commit`).
"""

from tiap.judge.batch_api import BatchLimits
from tiap.judge.batch_run import BatchOptions
from tiap.judge.panel import JudgeSpec, Panel, builtin_panels, load_panel, parse_panel
from tiap.judge.plan import dry_run, plan_run
from tiap.judge.runner import execute, run_panel
from tiap.judge.scale_gate import (
    GateCheck,
    GateDecision,
    JudgeIdentity,
    check_scale_gate,
    latest_gate,
    panel_identity,
    require_scale_gate,
)
from tiap.judge.summary import BatchReport, DryRun, JudgeEstimate, JudgeTally, RunSummary

__all__ = [
    "BatchLimits",
    "BatchOptions",
    "BatchReport",
    "DryRun",
    "GateCheck",
    "GateDecision",
    "JudgeEstimate",
    "JudgeIdentity",
    "JudgeSpec",
    "JudgeTally",
    "Panel",
    "RunSummary",
    "builtin_panels",
    "check_scale_gate",
    "dry_run",
    "execute",
    "latest_gate",
    "load_panel",
    "panel_identity",
    "parse_panel",
    "plan_run",
    "require_scale_gate",
    "run_panel",
]
