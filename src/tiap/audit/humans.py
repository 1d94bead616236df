"""The human-readiness rule: may the audit go on to the gate?

The validation subset is ready when at least one person (a rater of kind
``human``, other than ``adjudicated``) has a valid latest label on every one of
its cases. Retracted labels do not count; labels of other people are progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.audit.figures import HumanFigures
from tiap.rubric import DEFAULT_RUBRIC

if TYPE_CHECKING:
    from tiap.cases import Workspace

#: the rater name of adjudicated labels (decisions, not a person's ratings).
ADJUDICATED = "adjudicated"


def human_progress(ws: Workspace, subset: str, *, required: bool = True) -> HumanFigures:
    """Each person's valid labels on ``subset`` and who has labelled all of it;
    when not ``required`` (``--no-humans``), also every human rater with labels
    there (the reports leave them out)."""
    cases = ws.case_ids(subset=subset)
    done: dict[str, int] = {}
    seen: set[str] = set()
    for rec in ws.latest_labels(case_ids=cases, rater_kind="human"):
        seen.add(rec.rater)
        if rec.label is not None and rec.rater != ADJUDICATED:
            done[rec.rater] = done.get(rec.rater, 0) + 1
    complete = sorted(r for r, n in done.items() if n >= len(cases))
    return HumanFigures(
        required=required,
        cases=len(cases),
        progress=dict(sorted(done.items())),
        complete=complete,
        left_out=[] if required else sorted(seen),
    )


def progress_text(figures: HumanFigures) -> str:
    """``ann 5/6, bob 2/6``, or ``none yet``."""
    return ", ".join(f"{r} {n}/{figures.cases}" for r, n in figures.progress.items()) or "none yet"


def annotate_command(workspace: str, subset: str, rubric: str = DEFAULT_RUBRIC) -> str:
    """The command a person runs to label the subset (with ``--rubric`` unless the
    rubric is the default one)."""
    command = f"tiap annotate tui --db {workspace} --rater YOUR_NAME --subset {subset}"
    return command if rubric == DEFAULT_RUBRIC else f"{command} --rubric {rubric}"
