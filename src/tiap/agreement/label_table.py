"""The label table every agreement figure is computed from.

A :class:`LabelTable` holds the cases in scope (with the dataset, run and
category used for prevalence), the raters with their kind, and at most one
label per (case, rater): the latest one. ``label`` ``None`` is an invalid
label (an abstention); a (case, rater) with no entry is unlabelled. Both count
as missing for every agreement figure; they are reported apart per rater.

Tables come from a workspace (:func:`labels_from_workspace`) or a file
(:func:`tiap.agreement.files.labels_from_file`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from tiap.cases.vocab import ADJUDICATED as ADJUDICATED  # the name, for agreement users
from tiap.cases.vocab import HUMAN, JUDGE, RaterKind
from tiap.errors import TiapError

if TYPE_CHECKING:
    import pandas as pd

    from tiap.cases.models import LabelRecord, RaterKind
    from tiap.cases.workspace import Workspace

RaterKindOrNone = RaterKind | None

#: Codes in a label matrix for what is not a label.
INVALID = -1
ABSENT = -2

_KIND_ORDER = {JUDGE: 0, HUMAN: 1, None: 2}
_QRELS_META = ("kind", "grade", "pair")
#: fields of a case's meta left out of its dump when unset
_OPTIONAL_META = (*_QRELS_META, "bundle_version", "stratum")


class CaseMeta(BaseModel):
    """A case in scope and the strata prevalence is broken down by; for a qrels pair
    also its kind, qrels grade (``None``: no qrels line) and how it was drawn
    (``annotated`` or ``negative``), which the qrels figures need; from a workspace,
    the bundle version the case is of (:mod:`tiap.cases.versions`); ``stratum``: its
    stratum in the sampling design of validation subsets (:func:`tiap.cases.sample.stratum`),
    which the calibrated prevalence is stratified by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str = Field(min_length=1)
    dataset: str | None = None
    run: str | None = None
    category: str | None = None
    kind: str | None = None
    grade: int | None = None
    pair: str | None = None
    bundle_version: str | None = None
    stratum: str | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """The qrels fields and the version only when set (a contested case's meta is
        as it was)."""
        data: dict[str, object] = handler(self)
        for key in _OPTIONAL_META:
            if data.get(key) is None:
                data.pop(key, None)
        return data


class RaterInfo(BaseModel):
    """A rater: its kind (``None`` when a labels file does not say) and where its
    labels came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: RaterKindOrNone = None
    panels: list[str] = Field(default_factory=list)
    rubric_ids: list[str] = Field(default_factory=list)
    rubric_hashes: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    #: request-settings hashes of a judge's labels (``tiap.judge.request.settings_hash``)
    settings_hashes: list[str] = Field(default_factory=list)
    #: a judge's labels that carry no settings hash (made before tiap kept it)
    labels_without_settings: int = Field(default=0, ge=0)


class LabelEntry(BaseModel):
    """The current label of one rater on one case; ``None`` is an abstention.
    ``rubric_id`` and ``rubric_hash``: the rubric (and its version) the label was
    made under, when known."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    rater: str
    label: str | None
    rubric_id: str | None = None
    rubric_hash: str | None = None


class LabelTable(BaseModel):
    """Cases, raters and their labels (at most one per case and rater)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["workspace", "file", "memory"] = "memory"
    path: str | None = None
    subset: str | None = None
    subset_kind: str | None = None
    cases: list[CaseMeta]
    raters: list[RaterInfo]
    labels: list[LabelEntry]

    @model_validator(mode="after")
    def _consistent(self) -> LabelTable:
        case_ids = [c.case_id for c in self.cases]
        if len(set(case_ids)) != len(case_ids):
            raise ValueError("case ids must be unique")
        names = [r.name for r in self.raters]
        if len(set(names)) != len(names):
            raise ValueError("rater names must be unique")
        known_cases, known_raters = set(case_ids), set(names)
        seen: set[tuple[str, str]] = set()
        for e in self.labels:
            if e.case_id not in known_cases:
                raise ValueError(f"label for unknown case '{e.case_id}'")
            if e.rater not in known_raters:
                raise ValueError(f"label by unknown rater '{e.rater}'")
            if (e.case_id, e.rater) in seen:
                raise ValueError(f"two labels for case '{e.case_id}' by rater '{e.rater}'")
            seen.add((e.case_id, e.rater))
        return self

    # ------------------------------------------------------------------ helpers

    @property
    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases]

    @property
    def rater_names(self) -> list[str]:
        return [r.name for r in self.raters]

    def rater(self, name: str) -> RaterInfo:
        for r in self.raters:
            if r.name == name:
                return r
        known = ", ".join(self.rater_names) or "none"
        raise TiapError(f"unknown rater '{name}' (raters with labels: {known})")

    def without(self, names: Collection[str]) -> LabelTable:
        """A copy without these raters and their labels (the caller's table is unchanged)."""
        drop = set(names)
        return self.model_copy(
            update={
                "raters": [r for r in self.raters if r.name not in drop],
                "labels": [e for e in self.labels if e.rater not in drop],
            }
        )

    def bundle_versions(self) -> list[str | None]:
        """The bundle versions of the cases in scope (``None``: not recorded), in
        first-seen order."""
        return list(dict.fromkeys(c.bundle_version for c in self.cases))

    def kinds(self) -> list[str]:
        """The case kinds in scope (those the table knows), sorted."""
        return sorted({c.kind for c in self.cases if c.kind is not None})

    def of_kind(self, kind: str) -> LabelTable:
        """A copy with only the cases of ``kind`` and their labels (raters kept)."""
        keep = [c for c in self.cases if c.kind == kind]
        ids = {c.case_id for c in keep}
        return self.model_copy(
            update={"cases": keep, "labels": [e for e in self.labels if e.case_id in ids]}
        )

    def uncodable(self, categories: Collection[str]) -> list[str]:
        """Raters with a valid label outside ``categories`` (labels of another rubric)."""
        known = set(categories)
        bad = {e.rater for e in self.labels if e.label is not None and e.label not in known}
        return [r for r in self.rater_names if r in bad]

    def raters_of_kind(self, kind: RaterKindOrNone) -> list[str]:
        return [r.name for r in self.raters if r.kind == kind]

    def observed_labels(self) -> list[str]:
        """Every valid label that occurs, sorted."""
        return sorted({e.label for e in self.labels if e.label is not None})

    def codes(self, categories: Sequence[str], raters: Sequence[str]) -> np.ndarray:
        """A cases x raters matrix of category indices (``INVALID``/``ABSENT`` for
        abstentions and missing labels). Labels outside ``categories`` are errors."""
        index = {c: i for i, c in enumerate(categories)}
        case_pos = {c: i for i, c in enumerate(self.case_ids)}
        rater_pos = {r: j for j, r in enumerate(raters)}
        out = np.full((len(self.cases), len(raters)), ABSENT, dtype=np.int64)
        for e in self.labels:
            j = rater_pos.get(e.rater)
            if j is None:
                continue
            if e.label is None:
                out[case_pos[e.case_id], j] = INVALID
                continue
            code = index.get(e.label)
            if code is None:
                raise TiapError(
                    f"case '{e.case_id}', rater '{e.rater}': label '{e.label}' is not one of "
                    f"{', '.join(categories)}"
                )
            out[case_pos[e.case_id], j] = code
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per (case, rater) label: case_id, rater, rater_kind, label,
        dataset, run, category."""
        import pandas as pd

        meta = {c.case_id: c for c in self.cases}
        kinds = {r.name: r.kind for r in self.raters}
        rows = [
            {
                "case_id": e.case_id,
                "rater": e.rater,
                "rater_kind": kinds[e.rater],
                "label": e.label,
                "dataset": meta[e.case_id].dataset,
                "run": meta[e.case_id].run,
                "category": meta[e.case_id].category,
            }
            for e in self.labels
        ]
        columns = ["case_id", "rater", "rater_kind", "label", "dataset", "run", "category"]
        return pd.DataFrame(rows, columns=columns)


class _RaterSources:
    """Where one rater's labels came from, gathered over its label rows."""

    def __init__(self, kind: RaterKind) -> None:
        self.kind = kind
        self.panels: set[str] = set()
        self.rubric_ids: set[str] = set()
        self.rubric_hashes: set[str] = set()
        self.models: set[str] = set()
        self.settings_hashes: set[str] = set()
        self.labels_without_settings = 0

    def add(self, rec: LabelRecord) -> None:
        for values, value in (
            (self.panels, rec.panel),
            (self.rubric_ids, rec.rubric_id),
            (self.rubric_hashes, rec.rubric_hash),
            (self.models, rec.model),
            (self.settings_hashes, rec.settings_hash),
        ):
            if value is not None:
                values.add(value)
        if rec.rater_kind == "judge" and rec.settings_hash is None:
            self.labels_without_settings += 1

    def info(self, name: str) -> RaterInfo:
        return RaterInfo(
            name=name,
            kind=self.kind,
            panels=sorted(self.panels),
            rubric_ids=sorted(self.rubric_ids),
            rubric_hashes=sorted(self.rubric_hashes),
            models=sorted(self.models),
            settings_hashes=sorted(self.settings_hashes),
            labels_without_settings=self.labels_without_settings,
        )


def sort_raters(raters: Iterable[RaterInfo]) -> list[RaterInfo]:
    """Judges first, then humans, then raters of unknown kind; by name within each."""
    return sorted(raters, key=lambda r: (_KIND_ORDER[r.kind], r.name))


def labels_from_workspace(
    ws: Workspace, subset: str | None = None, raters: Sequence[str] | None = None
) -> LabelTable:
    """The latest label per (case, rater) on a subset's cases (or every case).

    Only live cases and labels are read: those of retired bundle versions are left
    out, and a stale subset is an error (:mod:`tiap.cases.versions`). Retracted
    human labels are left out (the case is unlabelled by that rater); invalid judge
    outputs stay as abstentions (``label`` ``None``).
    """
    from tiap.cases.sample import stratum

    case_rows = ws.cases(subset=subset)
    if not case_rows:
        where = f"subset '{subset}'" if subset else "the workspace"
        raise TiapError(f"{ws.path}: {where} has no cases")
    versions = ws.case_versions_of([c.case_id for c in case_rows])
    cases = [
        CaseMeta(
            case_id=c.case_id,
            dataset=c.dataset,
            run=c.run,
            category=c.category,
            kind=c.kind,
            grade=c.grade,
            pair=c.pair,
            bundle_version=versions.get(c.case_id),
            stratum=stratum(c),
        )
        for c in case_rows
    ]
    if raters is not None:
        missing = sorted(set(raters) - set(ws.raters()))
        if missing:
            known = ", ".join(ws.raters()) or "none"
            raise TiapError(
                f"{ws.path}: no labels by rater(s) {', '.join(missing)} (known: {known})"
            )
    records = ws.latest_labels(case_ids=[c.case_id for c in cases], raters=raters)
    sources: dict[str, _RaterSources] = {}
    for rec in records:
        src = sources.setdefault(rec.rater, _RaterSources(rec.rater_kind))
        if src.kind != rec.rater_kind:
            raise TiapError(
                f"{ws.path}: rater '{rec.rater}' has labels both as judge and as human; "
                "use distinct rater names"
            )
        src.add(rec)
    rater_infos = sort_raters(src.info(name) for name, src in sources.items())
    subset_kind = None
    if subset is not None:
        kind = ws.subset_params(subset).get("kind")
        subset_kind = str(kind) if kind is not None else None
    return LabelTable(
        source="workspace",
        path=str(ws.path),
        subset=subset,
        subset_kind=subset_kind,
        cases=cases,
        raters=rater_infos,
        labels=[
            LabelEntry(
                case_id=r.case_id,
                rater=r.rater,
                label=r.label,
                rubric_id=r.rubric_id,
                rubric_hash=r.rubric_hash,
            )
            for r in records
        ],
    )
