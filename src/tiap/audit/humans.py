"""The human-readiness rule: may the audit go on to the gate?

The validation subset is ready when at least one person (a rater of kind
``human``, other than ``adjudicated``) has a valid latest label on every one of
its cases, made under the audit's rubric version (its content hash: the judges').
Retracted labels do not count, nor do labels made under another version of the
rubric (counted apart: the reports leave them out); labels of other people are
progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.audit.step_figures import HumanFigures
from tiap.rubric import DEFAULT_RUBRIC

if TYPE_CHECKING:
    from pathlib import Path

    from tiap.cases import Workspace
    from tiap.rubric import Rubric

#: the rater name of adjudicated labels (decisions, not a person's ratings).
ADJUDICATED = "adjudicated"


def human_progress(
    ws: Workspace, subset: str, *, required: bool = True, rubric_hash: str | None = None
) -> HumanFigures:
    """Each person's valid labels on ``subset`` (under ``rubric_hash`` when given; a
    label that names no hash counts) and who has labelled all of it; the labels made
    under another hash, per person; when not ``required`` (``--no-humans``), also
    every human rater with labels there (the reports leave them out)."""
    cases = ws.case_ids(subset=subset)
    done: dict[str, int] = {}
    other: dict[str, int] = {}
    seen: set[str] = set()
    for rec in ws.latest_labels(case_ids=cases, rater_kind="human"):
        seen.add(rec.rater)
        if rec.label is None or rec.rater == ADJUDICATED:
            continue
        if rubric_hash is not None and rec.rubric_hash not in (None, rubric_hash):
            other[rec.rater] = other.get(rec.rater, 0) + 1
        else:
            done[rec.rater] = done.get(rec.rater, 0) + 1
    complete = sorted(r for r, n in done.items() if n >= len(cases))
    return HumanFigures(
        required=required,
        cases=len(cases),
        progress=dict(sorted(done.items())),
        complete=complete,
        left_out=[] if required else sorted(seen),
        other_version=dict(sorted(other.items())),
    )


def import_human_labels(ws: Workspace, path: Path, rubric: Rubric) -> int:
    """Import a labels file as human labels under ``rubric`` (``tiap labels import
    --kind human``; rows in already add nothing); the rows added."""
    from tiap.agreement.label_import import import_labels

    return import_labels(ws, path, rater_kind="human", rubric=rubric).added


def progress_text(figures: HumanFigures) -> str:
    """``ann 5/6, bob 2/6``, or ``none yet``; then the labels of another rubric
    version, which do not count (``; not counted, made under another version of the
    rubric: carl 6``)."""
    text = ", ".join(f"{r} {n}/{figures.cases}" for r, n in figures.progress.items())
    text = text or "none yet"
    if figures.other_version:
        others = ", ".join(f"{r} {n}" for r, n in figures.other_version.items())
        text += f"; not counted, made under another version of the rubric: {others}"
    return text


def waiting_detail(figures: HumanFigures) -> str:
    """The step line while the audit waits: each person's progress and what it waits
    for (``carol 3/115; waiting for one person's label on each of the 115 cases``)."""
    return (
        f"{progress_text(figures)}; waiting for one person's label on each of the "
        f"{figures.cases} cases"
    )


def waiting_message(figures: HumanFigures, overlap: int) -> str:
    """Why the audit paused for people, what it waits for and how to go on without
    them, with what that costs the gate."""
    second = (
        f"; a second person's labels on the {overlap} overlap cases are optional (they "
        "measure agreement between people)"
        if overlap
        else ""
    )
    return (
        f"the gate waits for one person to label every one of the validation subset's "
        f"{figures.cases} cases{second}; label them, then run the same audit command "
        "again. To go on without people, run it with --no-humans: the gate then rests "
        "on the judges' agreement with each other only (no judge is checked against a "
        "person), and the recorded gate says so"
    )


def annotate_command(workspace: str, subset: str, rubric: str = DEFAULT_RUBRIC) -> str:
    """The command a person runs to label the subset (with ``--rubric`` unless the
    rubric is the default one)."""
    command = f"tiap annotate tui --db {workspace} --rater YOUR_NAME --subset {subset}"
    return command if rubric == DEFAULT_RUBRIC else f"{command} --rubric {rubric}"
