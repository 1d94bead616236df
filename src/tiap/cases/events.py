"""Typed workspace events: the scale gate's verdict, and a decision to go past it.

An event is a row of the workspace's ``events`` table: a kind, the time it was
recorded and a JSON payload. The agreement report records a :class:`GateEvent`
when its verdict applies (a validation subset); judging beyond that subset
reads the latest one, and going on without a passed gate (``force``) records a
:class:`GateForceEvent`. Both are written with :func:`record_event` and read
with :func:`read_events` / :func:`events_newest_first`, on top of the
workspace's ``record_event(kind, payload)`` and ``events(kind)``.

Reading is strict: a payload that does not validate (a field missing or of the
wrong type, a threshold that is not a finite kappa, a verdict ``passed`` that its
own figures contradict) raises one :class:`~tiap.errors.TiapError` naming the
workspace and the event. A bad record is never taken as a pass.

Events recorded by earlier versions of tiap stay readable: their gate payloads
name the judges as a list and their models in ``judge_models``, and say nothing
about the request settings the labels came from; those read as
``settings_hashes=None`` (unknown), which does not satisfy a check of the
settings. Gate payloads of an earlier tiap also say nothing of the evidence the
verdict rested on (the minimum of complete cases and of each judge's valid share,
the subset's size, each judge's valid labels, the reference's rubric hash); those
read as ``None`` (unknown), and judging does not take such a pass as one
(:mod:`tiap.judge.scale_gate`). Nor do they say the bundle version of their cases
(``bundle_fingerprint=None``): such a gate holds only while the subset's cases
are of no recorded version either.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from tiap.errors import TiapError
from tiap.io import describe_validation_error

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

#: A kappa threshold lies in this closed interval (a kappa cannot exceed 1, and a
#: threshold below -1 lets every figure pass).
KAPPA_MIN, KAPPA_MAX = -1.0, 1.0

ScaleName = Literal["binary", "labels"]
#: what the gate compares with its thresholds: the point estimates (the paper's rule) or
#: the 95% interval lower bounds (:mod:`tiap.agreement.gate_intervals`)
GateOn = Literal["point", "lower"]
GATE_ON: tuple[GateOn, ...] = ("point", "lower")
DEFAULT_GATE_ON: GateOn = "point"
#: whom the gate's Fleiss' kappa is over: the judges alone (tiap's default), or the
#: judges and the human reference's raters (the paper's validation kappa over five
#: raters, the human and four LLMs)
GateRaters = Literal["judges", "judges+reference"]
GATE_RATERS: tuple[GateRaters, ...] = ("judges", "judges+reference")
DEFAULT_GATE_RATERS: GateRaters = "judges"


class EventKind(StrEnum):
    """The ``kind`` column of the workspace's events."""

    GATE = "gate"
    GATE_FORCE = "gate_force"
    #: probe and drift results (:mod:`tiap.cases.diagnostic_events`)
    PROBE = "probe"
    DRIFT_START = "drift_start"
    DRIFT = "drift"


def kappa_threshold_problem(value: object) -> str | None:
    """Why ``value`` is not a usable kappa threshold, or ``None`` when it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number (got {value!r})"
    if not math.isfinite(value):
        return f"must be a finite number (got {value})"
    if not KAPPA_MIN <= value <= KAPPA_MAX:
        return f"must lie between {KAPPA_MIN:g} and {KAPPA_MAX:g}, as a kappa does (got {value})"
    return None


def check_kappa_threshold(name: str, value: float) -> float:
    """``value`` when it is a finite number in [-1, 1]; otherwise a one-line
    :class:`TiapError` naming ``name`` (an option or a parameter)."""
    problem = kappa_threshold_problem(value)
    if problem is not None:
        raise TiapError(f"{name} {problem}")
    return float(value)


def check_gate_on(name: str, value: object) -> GateOn:
    """``point`` or ``lower``; otherwise a one-line :class:`TiapError` naming ``name``."""
    for rule in GATE_ON:
        if value == rule:
            return rule
    raise TiapError(f"{name} must be one of {', '.join(GATE_ON)} (got {value!r})")


def check_gate_raters(name: str, value: object) -> GateRaters:
    """``judges`` or ``judges+reference``; otherwise a one-line :class:`TiapError`
    naming ``name``."""
    for raters in GATE_RATERS:
        if value == raters:
            return raters
    raise TiapError(f"{name} must be one of {', '.join(GATE_RATERS)} (got {value!r})")


def _finite(value: float | None, what: str) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{what} must be finite or null (got {value})")
    return value


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def share_threshold_problem(value: object) -> str | None:
    """Why ``value`` is not a usable threshold on a share, or ``None`` when it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number in [0, 1] (got {value!r})"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"must be a finite number in [0, 1] (got {value!r})"
    return None


def required_cases(min_cases: int, cases: int) -> int:
    """The complete cases a gate needs on a subset of ``cases``: ``min_cases``, and
    at least half of the subset."""
    return max(min_cases, math.ceil(cases / 2))


class GateThresholds(_Record):
    """The thresholds a verdict was reached with. ``min_cases`` and ``min_valid``
    are ``None`` in a record of an earlier tiap, which had none."""

    min_fleiss: float
    min_judge_kappa: float
    #: the fewest complete cases (every judge labelled validly) a pass needs, with at
    #: least half of the subset (:func:`required_cases`)
    min_cases: int | None = Field(default=None, ge=1)
    #: the smallest share of the subset's cases each judge labelled validly
    min_valid: float | None = None

    @model_validator(mode="after")
    def _kappas(self) -> GateThresholds:
        for name in ("min_fleiss", "min_judge_kappa"):
            problem = kappa_threshold_problem(getattr(self, name))
            if problem is not None:
                raise ValueError(f"{name} {problem}")
        if self.min_valid is not None:
            problem = share_threshold_problem(self.min_valid)
            if problem is not None:
                raise ValueError(f"min_valid {problem}")
        if (self.min_cases is None) != (self.min_valid is None):
            raise ValueError("min_cases and min_valid are recorded together")
        return self


class GateFigures(_Record):
    """The figures of a verdict: Fleiss' kappa over the judges (on ``fleiss_n``
    complete cases), each judge's kappa against the human reference (empty without
    one), on ``scale``; the cases in scope and each judge's valid labels on them
    (``None`` in a record of an earlier tiap)."""

    scale: ScaleName
    fleiss_kappa: float | None
    fleiss_n: int = Field(ge=0)
    judge_kappa: dict[str, float | None]
    judge_n: dict[str, int]
    cases: int | None = Field(default=None, ge=0)
    judge_valid: dict[str, int] | None = None
    #: the 95% intervals of the figures (``None``: none, or a record of an earlier tiap)
    fleiss_ci: list[float] | None = Field(default=None, min_length=2, max_length=2)
    judge_ci: dict[str, list[float] | None] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _finite_figures(self) -> GateFigures:
        _finite(self.fleiss_kappa, "fleiss_kappa")
        for judge, value in self.judge_kappa.items():
            _finite(value, f"judge_kappa of {judge}")
        for what, ci in [("fleiss_ci", self.fleiss_ci), *self.judge_ci.items()]:
            if ci is None:
                continue
            if len(ci) != 2 or not all(math.isfinite(v) for v in ci) or ci[0] > ci[1]:
                raise ValueError(f"the interval of {what} must be two finite bounds, low first")
        return self

    def lower_bound(self, judge: str | None = None) -> float | None:
        """The interval's lower bound of Fleiss' kappa (``judge`` ``None``) or of a judge's
        kappa; ``None`` without an interval."""
        ci = self.fleiss_ci if judge is None else self.judge_ci.get(judge)
        return ci[0] if ci else None


class GatedJudge(_Record):
    """A judge as the gated report saw it: the models and the request settings
    (:func:`tiap.judge.request.settings_hash`) its labels came from."""

    name: str = Field(min_length=1)
    models: list[str] = Field(default_factory=list)
    #: ``None``: unknown (recorded by an earlier tiap, which did not say).
    settings_hashes: list[str] | None = None
    #: labels of the report that carry no settings hash (made before tiap kept it).
    labels_without_settings: int = Field(default=0, ge=0)


class ReportRef(_Record):
    """The written report a verdict belongs to."""

    out_dir: str
    report_json_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class WorkspaceEvent(_Record):
    """Base of the typed events; ``created_at`` is the time the workspace recorded."""

    KIND: ClassVar[EventKind]

    created_at: str | None = None

    def payload(self) -> dict[str, Any]:
        """What :meth:`Workspace.record_event` stores (the time is the workspace's)."""
        return self.model_dump(mode="json", exclude={"created_at"})


class GateEvent(WorkspaceEvent):
    """The scale gate's verdict of an agreement report on a validation subset."""

    KIND: ClassVar[EventKind] = EventKind.GATE

    subset: str = Field(min_length=1)
    panel: str = Field(min_length=1)
    rubric_id: str | None
    rubric_hash: str = Field(min_length=1)
    judges: list[GatedJudge]
    thresholds: GateThresholds
    figures: GateFigures
    passed: StrictBool
    failures: list[str]
    report: ReportRef | None = None
    #: the rubric hash of the human reference's labels (``None``: no reference, or a
    #: record of an earlier tiap, which did not say)
    reference_rubric_hash: str | None = None
    #: the gate was on the judges alone, human labels left out by choice (``--no-humans``)
    no_humans: StrictBool = False
    #: rater -> labels left out of the figures: made under another rubric hash
    other_version_labels: dict[str, int] = Field(default_factory=dict)
    #: the bundle version of the subset's cases (``None``: recorded by an earlier
    #: tiap, or cases of no single recorded version)
    bundle_fingerprint: str | None = None
    #: the anchor set frozen with this gate: on its subset, under its rubric, from the
    #: labels its judges gave with the settings it saw (``None``: none was, or a
    #: record of an earlier tiap, which did not say)
    anchor: str | None = None
    #: what the thresholds were compared with: point estimates (an earlier tiap's
    #: records, which did not say, were) or interval lower bounds
    gate_on: GateOn = DEFAULT_GATE_ON
    #: whom the Fleiss' kappa in ``figures`` is over: the judges (an earlier tiap's
    #: records, which did not say, were) or the judges and the human reference
    gate_raters: GateRaters = DEFAULT_GATE_RATERS
    #: every figure's interval wholly on one side of its threshold (``None``: a record
    #: of an earlier tiap, which did not say)
    conclusive: StrictBool | None = None

    @model_validator(mode="before")
    @classmethod
    def _earlier_format(cls, data: Any) -> Any:
        """An earlier tiap wrote ``judges`` as names and ``judge_models`` beside them."""
        if not isinstance(data, dict) or "judge_models" not in data:
            return data
        models, judges = data["judge_models"], data.get("judges")
        if not (
            isinstance(models, dict)
            and isinstance(judges, list)
            and all(isinstance(j, str) for j in judges)
        ):
            return data  # not the earlier format: validation names what is wrong
        rest = {k: v for k, v in data.items() if k != "judge_models"}
        rest["judges"] = [{"name": j, "models": models.get(j) or []} for j in judges]
        return rest

    @model_validator(mode="after")
    def _consistent(self) -> GateEvent:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError("a judge is listed twice")
        if self.passed == bool(self.failures):
            raise ValueError(
                "passed is true with failures listed"
                if self.passed
                else "passed is false and no failure is listed"
            )
        if self.passed:
            self._figures_support_a_pass()
        return self

    def _figures_support_a_pass(self) -> None:
        f, t = self.figures, self.thresholds
        if not self.judges:
            raise ValueError("passed is true with no judge")
        if self.gate_raters == "judges+reference" and (self.no_humans or not f.judge_kappa):
            raise ValueError(
                "passed is true with Fleiss' kappa over the judges and the human reference, "
                "but no human reference"
            )
        lower = self.gate_on == "lower"
        fleiss = f.lower_bound() if lower and f.fleiss_kappa is not None else f.fleiss_kappa
        if fleiss is None or fleiss < t.min_fleiss:
            raise ValueError(
                f"passed is true but Fleiss' kappa {fleiss} ({self.gate_on}) is not at least "
                f"{t.min_fleiss}"
            )
        for judge, value in f.judge_kappa.items():
            shown = f.lower_bound(judge) if lower and value is not None else value
            if shown is None or shown < t.min_judge_kappa:
                raise ValueError(
                    f"passed is true but judge {judge}'s kappa {shown} ({self.gate_on}) is not "
                    f"at least {t.min_judge_kappa}"
                )
        if t.min_cases is not None:
            self._evidence_supports_a_pass(t.min_cases, t.min_valid or 0.0)

    @property
    def evidence_recorded(self) -> bool:
        """Does the record say how much evidence the verdict rested on (an earlier
        tiap's does not)?"""
        f = self.figures
        return self.thresholds.min_cases is not None and f.cases is not None

    def _evidence_supports_a_pass(self, min_cases: int, min_valid: float) -> None:
        f = self.figures
        if f.cases is None or f.judge_valid is None:
            raise ValueError("passed is true but the subset's cases or valid labels are missing")
        need = required_cases(min_cases, f.cases)
        if f.cases < min_cases or f.fleiss_n < need:
            raise ValueError(
                f"passed is true on {f.fleiss_n} complete case(s) of {f.cases}, fewer than {need}"
            )
        for judge in self.judge_names:
            valid = f.judge_valid.get(judge)
            if valid is None or valid / f.cases < min_valid:
                raise ValueError(
                    f"passed is true but judge {judge} labelled {valid} of {f.cases} validly"
                )
        for judge, n in f.judge_n.items():
            if judge in f.judge_kappa and n < need:
                raise ValueError(f"passed is true but judge {judge}'s kappa rests on {n} case(s)")
        if f.judge_kappa and self.reference_rubric_hash != self.rubric_hash:
            raise ValueError(
                f"passed is true but the reference's rubric hash {self.reference_rubric_hash} "
                f"is not the judges' {self.rubric_hash}"
            )

    def judge(self, name: str) -> GatedJudge | None:
        return next((j for j in self.judges if j.name == name), None)

    @property
    def judge_names(self) -> list[str]:
        return [j.name for j in self.judges]


class ForcedJudge(_Record):
    """A judge of the panel that went past the gate, as it was then."""

    name: str
    model: str
    settings_hash: str


class GateForceEvent(WorkspaceEvent):
    """Judging went on beyond a validation subset without a passed gate (``force``)."""

    KIND: ClassVar[EventKind] = EventKind.GATE_FORCE

    panel: str = Field(min_length=1)
    rubric_id: str
    rubric_hash: str = Field(min_length=1)
    subset: str | None
    #: why the gate did not let the run through
    message: str
    #: ``None`` in events of an earlier tiap
    judges: list[ForcedJudge] | None = None


E = TypeVar("E", bound=WorkspaceEvent)


def record_event(ws: Workspace, event: WorkspaceEvent) -> int:
    """Record ``event`` in the workspace; returns its id."""
    return ws.record_event(event.KIND.value, event.payload())


def _parse(ws: Workspace, model: type[E], payload: dict[str, Any], number: int) -> E:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        when = payload.get("created_at") if isinstance(payload, dict) else None
        recorded = f", recorded {when}" if when else ""
        raise TiapError(
            f"{ws.path}: {model.KIND.value} event {number}{recorded} is not a valid record "
            f"({describe_validation_error(exc)}); it is not taken as a verdict: run tiap "
            f"agreement report --db {ws.path} --subset {validation_subset_hint(ws)} --out DIR "
            "to record a new one"
        ) from None


def events_newest_first(ws: Workspace, model: type[E]) -> Iterator[E]:
    """The events of ``model``'s kind, newest first, each validated as it is reached
    (an invalid one raises :class:`TiapError`; a caller that stops early never reads
    older ones)."""
    payloads = ws.events(model.KIND.value)
    for number in range(len(payloads), 0, -1):
        yield _parse(ws, model, payloads[number - 1], number)


def read_events(ws: Workspace, model: type[E]) -> list[E]:
    """Every event of ``model``'s kind, oldest first; any invalid one raises."""
    return list(reversed(list(events_newest_first(ws, model))))


#: The subset kind a gate is recorded on (``tiap cases sample`` draws it).
VALIDATION_KIND = "validation"


def is_validation_subset(ws: Workspace, subset: str | None) -> bool:
    """Is ``subset`` a subset of kind validation (``None``: all cases, no)?"""
    return subset is not None and ws.subset_params(subset).get("kind") == VALIDATION_KIND


def validation_subset_hint(ws: Workspace) -> str:
    """The workspace's validation subset when there is exactly one, for messages."""
    names = [s for s in ws.subsets() if is_validation_subset(ws, s)]
    return names[0] if len(names) == 1 else VALIDATION_KIND
