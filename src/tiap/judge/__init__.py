"""LLM judge panels: panels, litellm calls, retries, cache, resume, offline judges.

Python API::

    from tiap.cases import Workspace
    from tiap.judge import load_panel, plan_run, dry_run, run_panel
    from tiap.rubric import load_rubric

    with Workspace("audit.db") as ws:
        summary = run_panel(ws, load_panel("offline"), load_rubric("contested-credit"))

litellm is imported only when a model is actually called.
"""

from tiap.judge.panel import JudgeSpec, Panel, builtin_panels, load_panel, parse_panel
from tiap.judge.plan import dry_run, plan_run
from tiap.judge.runner import execute, run_panel
from tiap.judge.summary import DryRun, JudgeEstimate, JudgeTally, RunSummary

__all__ = [
    "DryRun",
    "JudgeEstimate",
    "JudgeSpec",
    "JudgeTally",
    "Panel",
    "RunSummary",
    "builtin_panels",
    "dry_run",
    "execute",
    "load_panel",
    "parse_panel",
    "plan_run",
    "run_panel",
]
