"""What shapes an audit (:class:`AuditSettings`) and where its files go."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tiap.cases.events import kappa_threshold_problem, share_threshold_problem
from tiap.errors import TiapError
from tiap.io import update_with_file
from tiap.limits import (
    MAX_RESAMPLES,
    MAX_RESCORE_RESAMPLES,
    LimitError,
    check_cases,
    check_cost,
    check_int,
    check_k,
    check_resamples,
    check_seed,
)

T = TypeVar("T")

STATE_FILE = "audit_state.json"
WORKSPACE_FILE = "workspace.sqlite"
RESCORE_DIR = "rescore"
VALIDATION_DIR = "validation"
FINAL_DIR = "final"
#: the probe report's directory (``--probes``)
PROBE_DIR = "probe"
INDEX_MD = "index.md"
INDEX_HTML = "index.html"


AuditMode = Literal["contested", "qrels"]

#: the rubric of each mode, unless one is given.
MODE_RUBRICS: dict[str, str] = {"contested": "contested-credit", "qrels": "qrels-relevance"}


class AuditSettings(BaseModel):
    """Everything that shapes an audit. Defaults are the paper's.

    ``humans="skip"`` (``--no-humans``) does not wait for human labels, and the
    agreement reports then leave every human label out: the gate is on judge
    agreement only (and the recorded gate says so). ``min_cases`` and ``min_valid``
    are the gate's evidence minimums (:mod:`tiap.agreement.gate`).

    ``mode="qrels"`` audits relevance annotations instead (the LMEB procedure):
    ``bundle`` is then any SOURCE of ``tiap cases from-qrels`` (an LMEB/BEIR task
    directory, a tree of them, or a trace bundle); ``per_dataset``, ``negatives``
    and ``run`` shape the draw of pairs (stored as subset ``qrels_subset``), and
    ``min_confirmed`` / ``max_missed`` / ``min_decided`` are the thresholds of each
    dataset's verdict.
    """

    model_config = ConfigDict(extra="forbid")

    bundle: Path
    out: Path
    panel: str
    mode: AuditMode = "contested"
    db: Path | None = None
    #: the rubric's name or file; default: the mode's (``MODE_RUBRICS``)
    rubric: str | None = None
    k: int | None = None
    ks: str = "10,60"
    subset: str = "validation"
    n: int = 115
    overlap: int | None = None
    seed: int = 1337
    from_runs: list[str] | None = None
    humans: Literal["required", "skip"] = "required"
    reference: str | None = None
    min_fleiss: float = 0.80
    min_judge_kappa: float = 0.60
    min_cases: int = 30
    min_valid: float = 0.90
    #: the gate's thresholds on the point estimates or the intervals' lower bounds
    gate_on: Literal["point", "lower"] = "point"
    #: the gate's Fleiss' kappa over the judges, or the judges and the human reference
    gate_raters: Literal["judges", "judges+reference"] = "judges"
    rescore_resamples: int = 3000
    agreement_resamples: int = 1000
    max_cost: float | None = None
    force: bool = False
    #: retire the workspace's cases of an earlier bundle version (``--replace-stale``)
    replace_stale: bool = False
    progress: bool = True
    #: a labels file (the format of ``tiap labels import``) imported as human labels
    #: before the audit checks for them, each run (adds nothing when it is in already):
    #: ``tiap demo``'s illustrative reference (:mod:`tiap.audit.demo`)
    human_labels: Path | None = None
    #: probe kinds run on the validation subset after the gate, when the audit goes on
    #: (``--probes``; empty: none; :mod:`tiap.audit.probe_step`)
    probes: list[str] = Field(default_factory=list)
    #: identical requests of the ``repeat`` probe (2 to 20)
    probe_repeats: int = 3
    # qrels mode
    per_dataset: int = 100
    #: what a dataset is: LMEB's dataset (its tasks together) or each task
    group_by: Literal["dataset", "task"] = "dataset"
    negatives: int = 0
    run: str | None = None
    qrels_subset: str = "qrels"
    min_confirmed: float = 0.90
    max_missed: float = 0.10
    min_decided: float = 0.80

    # Every number goes through the checks the command line and the steps' own APIs
    # use (tiap.limits), so a bad setting fails here, before any step runs.
    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: object) -> int | None:
        return None if value is None else _checked(check_k, value)

    @field_validator("ks")
    @classmethod
    def _ks(cls, value: str) -> str:
        from tiap.rescore.metrics import parse_ks

        try:
            parse_ks(value)
        except TiapError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("n", mode="before")
    @classmethod
    def _n(cls, value: object) -> int:
        return _checked(check_cases, value)

    @field_validator("overlap", mode="before")
    @classmethod
    def _overlap(cls, value: object) -> int | None:
        return None if value is None else _checked(check_cases, value, minimum=0)

    @field_validator("per_dataset", mode="before")
    @classmethod
    def _per_dataset(cls, value: object) -> int:
        return _checked(check_cases, value)

    @field_validator("negatives", mode="before")
    @classmethod
    def _negatives(cls, value: object) -> int:
        return _checked(check_cases, value, minimum=0)

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, value: object) -> int:
        return _checked(check_seed, value)

    @field_validator("min_fleiss", "min_judge_kappa", mode="before")
    @classmethod
    def _kappa(cls, value: object) -> float:
        problem = kappa_threshold_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return float(value)  # type: ignore[arg-type]

    @field_validator("min_valid", "min_confirmed", "max_missed", "min_decided", mode="before")
    @classmethod
    def _share(cls, value: object) -> float:
        problem = share_threshold_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return float(value)  # type: ignore[arg-type]

    @field_validator("min_cases", mode="before")
    @classmethod
    def _min_cases(cls, value: object) -> int:
        return _checked(check_cases, value)

    @field_validator("rescore_resamples", mode="before")
    @classmethod
    def _rescore_resamples(cls, value: object) -> int:
        return _checked(check_resamples, value, minimum=1, maximum=MAX_RESCORE_RESAMPLES)

    @field_validator("agreement_resamples", mode="before")
    @classmethod
    def _agreement_resamples(cls, value: object) -> int:
        return _checked(check_resamples, value, minimum=0, maximum=MAX_RESAMPLES)

    @field_validator("probes")
    @classmethod
    def _probes(cls, value: list[str]) -> list[str]:
        from tiap.cases.probe_models import PROBE_KINDS

        unknown = [k for k in value if k not in PROBE_KINDS]
        if unknown:
            raise ValueError(
                f"unknown probe kind {', '.join(map(repr, unknown))}; known: "
                + ", ".join(PROBE_KINDS)
            )
        return [k for k in PROBE_KINDS if k in value]

    @field_validator("probe_repeats", mode="before")
    @classmethod
    def _probe_repeats(cls, value: object) -> int:
        from tiap.probe.probe_plan import MAX_REPEATS, MIN_REPEATS

        return _checked(check_int, value, minimum=MIN_REPEATS, maximum=MAX_REPEATS)

    @field_validator("max_cost", mode="before")
    @classmethod
    def _max_cost(cls, value: object) -> float | None:
        return None if value is None else _checked(check_cost, value)

    @model_validator(mode="after")
    def _overlap_within_n(self) -> AuditSettings:
        if self.overlap is not None and self.overlap > self.n:
            raise ValueError(f"overlap ({self.overlap}) cannot exceed n ({self.n})")
        if self.humans == "skip" and self.gate_raters == "judges+reference":
            raise ValueError(
                "gate_raters judges+reference needs the human reference, and humans='skip' "
                "(--no-humans) leaves human labels out: use one of them"
            )
        if self.human_labels is not None and self.humans == "skip":
            raise ValueError("human_labels are human labels, and humans='skip' leaves them out")
        return self

    @property
    def workspace(self) -> Path:
        return self.db if self.db is not None else self.out / WORKSPACE_FILE

    @property
    def rubric_name(self) -> str:
        """The rubric given, or the mode's."""
        return self.rubric if self.rubric is not None else MODE_RUBRICS[self.mode]

    def context_key(self) -> str:
        """A hash of the settings that decide *what* the steps work on: the bundle,
        the workspace, the panel, the rubric, the cut-off and the subset's name.
        Step records kept for other values are dropped. The rest only change later
        verdicts (thresholds, the reference, ``humans``, ``force``, the budget,
        ``replace_stale``, which the extraction records in the workspace),
        the draw of a subset that is kept once drawn (``n``, ``overlap``, ``seed``,
        ``from_runs``) or the rescore, which has a fingerprint of its own."""
        data: dict[str, object] = {
            "bundle": str(self.bundle),
            "workspace": str(self.workspace),
            "panel": self.panel,
            "rubric": self.rubric_name,
            "k": self.k,
            "subset": self.subset,
        }
        if self.mode != "contested":  # the contested audit's key is as it was
            data["mode"] = self.mode
            data["qrels_subset"] = self.qrels_subset
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _checked(check: Callable[..., T], value: object, **limits: Any) -> T:
    """``check("", value, **limits)`` with its problem as the ``ValueError`` pydantic
    reports under the field's name."""
    try:
        return check("", value, **limits)
    except LimitError as exc:
        raise ValueError(exc.problem) from None


def rescore_fingerprint(settings: AuditSettings) -> str:
    """sha256 over the bundle's files and the rescoring settings."""
    h = hashlib.sha256()
    root = settings.bundle
    for p in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(p.relative_to(root)).encode())
        h.update(b"\0")
        update_with_file(h, p)
    h.update(f"{settings.ks}|{settings.rescore_resamples}|{settings.seed}".encode())
    return h.hexdigest()
