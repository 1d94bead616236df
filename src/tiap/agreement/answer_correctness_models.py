"""The answer-correctness figure of an agreement report (``report.json`` key
``answer_correctness``; computed by :mod:`tiap.agreement.answer_correctness`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

POLICY = (
    "per run: the share of its answer cases whose panel majority is the positive label, "
    "among the cases with a majority; undecided cases (ties, no majority, no quorum) are "
    "counted and left out of the share; 95% Wilson score interval"
)
NO_DECIDED = "no answer of the run has a majority label"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunCorrectness(_Model):
    """One run's answers: ``correct`` of the ``decided`` ones (a majority label), out of
    ``cases`` in scope; ``undecided`` = ``cases - decided``."""

    cases: int
    decided: int
    undecided: int
    correct: int
    value: float | None
    ci: list[float] | None = None
    ci_method: Literal["wilson"] | None = None
    reason: str | None = None


class AnswerCorrectness(_Model):
    """Per run, the share of answers judged correct by the panel majority."""

    policy: str = POLICY
    #: the label counted as correct, and the scale the majority was taken on
    label: str
    scale: Literal["labels", "binary"]
    runs: dict[str, RunCorrectness]
