"""Typed workspace events of a judge's fitness: the results of a probe run, and the
start and results of a drift run.

- :class:`ProbeEvent`: ``tiap judge probe`` recorded its figures (each judge's flip
  rate per probe kind with its interval, the planted-label share of the injection
  probe, and its verdict);
- :class:`DriftStartEvent`: a drift run of an anchor set began; its event id is the
  **drift-run id** (in the cache key of each of its calls, and on its judgments);
- :class:`DriftEvent`: a drift run ended with every anchor judged; its figures per
  judge and whether the judge drifted.

The agreement report reads the latest of each for its judges (its ``diagnostics``
section). Reading is strict, as for gate events (:mod:`tiap.cases.events`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, StrictBool

from tiap.cases.events import EventKind, ReportRef, WorkspaceEvent, _Record

__all__ = [
    "DriftEvent",
    "DriftStartEvent",
    "DriftedJudge",
    "ProbeEvent",
    "ProbeThresholds",
    "ProbedJudge",
    "ProbedKind",
]


class ProbedKind(_Record):
    """One probe kind's figures for one judge, on the cases where the unperturbed
    and the probe judgment are both valid (``n``)."""

    kind: str
    n: int = Field(ge=0)
    flips: int = Field(ge=0)
    #: share of the ``n`` cases whose label changed, with its Wilson 95% interval
    flip_rate: float | None = None
    flip_ci: list[float] | None = None
    #: the direction of the changes: on the binary collapse, ``toward`` = negative
    #: then positive and ``away`` = positive then negative, with the exact McNemar
    #: test (``direction_test = "mcnemar"``); with three labels or more, moved toward
    #: and away from the rubric's first label (``supports``), with the sign test
    direction_test: str | None = None
    toward: int | None = None
    away: int | None = None
    direction_p: float | None = None
    #: injection: cases where the judge gave the planted label, with its share
    planted: int | None = None
    planted_share: float | None = None
    planted_ci: list[float] | None = None
    #: repeat: share of cases whose repeats all agree, and alpha over the repeats
    unanimous_share: float | None = None
    alpha: float | None = None
    #: ``stable``, ``sensitive``, ``inconclusive`` (``reason`` says why) or, for
    #: ``repeat``, ``noise floor``
    status: str
    reason: str | None = None


class ProbedJudge(_Record):
    """A judge as probed: its model and request settings, its verdict (``stable``,
    ``sensitive to KIND[, KIND]`` or ``inconclusive``) and its figures per kind."""

    name: str = Field(min_length=1)
    model: str
    settings_hash: str
    verdict: str
    kinds: list[ProbedKind]


class ProbeThresholds(_Record):
    """What a verdict was reached with: the largest planted-label share tolerated
    (the interval's lower bound must not exceed it) and the fewest cases a kind's
    figures need to give a verdict."""

    max_injection: float = Field(ge=0, le=1)
    min_cases: int = Field(ge=1)


class ProbeEvent(WorkspaceEvent):
    """The results of a probe run (``tiap judge probe``)."""

    KIND: ClassVar[EventKind] = EventKind.PROBE

    subset: str
    panel: str
    rubric_id: str
    rubric_hash: str
    kinds: list[str]
    repeats: int | None = None
    seed: int
    thresholds: ProbeThresholds
    judges: list[ProbedJudge]
    report: ReportRef | None = None

    def judge(self, name: str) -> ProbedJudge | None:
        return next((j for j in self.judges if j.name == name), None)


class DriftStartEvent(WorkspaceEvent):
    """A drift run of an anchor set began (its event id is the drift-run id)."""

    KIND: ClassVar[EventKind] = EventKind.DRIFT_START

    anchor: str
    panel: str
    rubric_hash: str
    judges: list[str]


class DriftedJudge(_Record):
    """One judge's figures in a drift run."""

    name: str = Field(min_length=1)
    #: the models and settings of its frozen labels, and its own now
    frozen_models: list[str]
    frozen_settings: list[str]
    model: str
    settings_hash: str
    #: anchors where the frozen and the new label are both valid, and how many changed
    n: int = Field(ge=0)
    changed: int = Field(ge=0)
    change_rate: float | None = None
    #: Cohen's kappa of the new labels against the frozen ones (labels scale)
    kappa: float | None = None
    #: exact McNemar test on the binary collapse (``None``: the rubric has none)
    mcnemar_b: int | None = None
    mcnemar_c: int | None = None
    mcnemar_p: float | None = None
    #: accuracy against the human reference then (frozen) and now, on the ``accuracy_n``
    #: anchors where the reference and both labels are valid; now minus then with
    #: Newcombe's interval
    accuracy_n: int = Field(default=0, ge=0)
    accuracy_then: float | None = None
    accuracy_now: float | None = None
    accuracy_diff: float | None = None
    accuracy_diff_ci: list[float] | None = None
    #: the EWMA chart over every drift run of the anchor set, at this run
    noise_floor: float
    noise_source: str
    ewma: float | None = None
    ewma_upper: float | None = None
    alarm: StrictBool = False
    drifted: StrictBool = False
    reasons: list[str] = Field(default_factory=list)


class DriftEvent(WorkspaceEvent):
    """A drift run's results (``tiap judge drift``)."""

    KIND: ClassVar[EventKind] = EventKind.DRIFT

    run: int = Field(ge=1)
    anchor: str
    panel: str
    rubric_hash: str
    max_p: float
    ewma_lambda: float
    ewma_l: float
    judges: list[DriftedJudge]
    report: ReportRef | None = None

    def judge(self, name: str) -> DriftedJudge | None:
        return next((j for j in self.judges if j.name == name), None)

    @property
    def drifted(self) -> list[str]:
        """The judges that drifted in this run."""
        return [j.name for j in self.judges if j.drifted]
