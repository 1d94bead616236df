"""The audit's steps as typed records.

A :class:`StepRecord` is a step's history across invocations of the same audit:
every :class:`StepRun` that did its work (or found something new, such as more
human labels), with its status, its figures and when it ran, and when a later
invocation last found the step already done and did nothing. The records live
in the audit's state file, so the index of a resumed audit still shows the
figures of the run that did each step's work.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.audit.step_figures import StepFigures


class StepName(StrEnum):
    """The audit's steps, in the order they run."""

    RESCORE = "rescore"
    #: the cases: contested credits extracted, or (qrels mode) qrels pairs drawn
    EXTRACT = "extract"
    SAMPLE = "sample"
    JUDGE_SUBSET = "judge_subset"
    HUMANS = "humans"
    VALIDATION = "validation"
    #: probes of the judges on the validation subset (``--probes``)
    PROBES = "probes"
    JUDGE_ALL = "judge_all"
    FINAL = "final"


#: ``done``: the step's work is complete; ``skipped``: not needed with these
#: settings; ``waiting``: needs people (human labels); ``stopped``: the budget ran
#: out; ``failed``: it ran and its verdict is negative (a failed scale gate).
StepStatus = Literal["done", "skipped", "waiting", "stopped", "failed"]


def step_title(step: StepName, subset: str, mode: str = "contested") -> str:
    """How the step is named in messages and in the index."""
    titles = {
        StepName.RESCORE: "rescore",
        StepName.EXTRACT: "draw qrels pairs" if mode == "qrels" else "extract contested credits",
        StepName.SAMPLE: "validation subset",
        StepName.JUDGE_SUBSET: f"judge subset '{subset}'",
        StepName.HUMANS: "human labels",
        StepName.VALIDATION: "validation agreement and gate",
        StepName.PROBES: f"probe the judges on '{subset}'",
        StepName.JUDGE_ALL: "judge every sampled pair" if mode == "qrels" else "judge every case",
        StepName.FINAL: "final report",
    }
    return titles[step]


def utc_now() -> datetime:
    """Now, in UTC, to the second (how step times are recorded)."""
    return datetime.now(UTC).replace(microsecond=0)


def shown_time(at: datetime) -> str:
    """A step time as the index shows it: ``2026-11-28 10:15:03 UTC``."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepRun(_Model):
    """What one invocation of the audit did on a step."""

    at: datetime
    status: StepStatus
    detail: str = ""
    figures: StepFigures | None = None


class StepRecord(_Model):
    """One step's history (see the module doc)."""

    step: StepName
    title: str
    runs: list[StepRun] = Field(default_factory=list)
    #: when a later invocation last found the step already done, and why it did nothing.
    found_done_at: datetime | None = None
    found_done: str | None = None

    @property
    def latest(self) -> StepRun | None:
        return self.runs[-1] if self.runs else None

    @property
    def status(self) -> StepStatus | None:
        return self.runs[-1].status if self.runs else None

    @property
    def figures(self) -> StepFigures | None:
        """The figures of the latest run that has any."""
        for run in reversed(self.runs):
            if run.figures is not None:
                return run.figures
        return None

    def add(self, run: StepRun) -> None:
        """Append a run that did the step's work (or found something new)."""
        self.runs.append(run)
        self.found_done_at = None
        self.found_done = None

    def mark_found_done(self, at: datetime, why: str) -> None:
        """A later invocation found the step already done and did nothing."""
        self.found_done_at = at
        self.found_done = why
