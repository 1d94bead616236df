"""The parts of a report that describe rather than measure: the rubric, each rater's
label distribution, prevalence of the majority labels per stratum, and the notes on
what the figures cover."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from tiap.agreement import constant
from tiap.agreement.label_table import ABSENT, INVALID, LabelTable
from tiap.agreement.models import Prevalence, PrevalenceGroup, RaterSummary, RubricInfo
from tiap.agreement.reference import Reference
from tiap.agreement.scale import Scale
from tiap.agreement.votes import distribution
from tiap.rubric import Rubric

NO_VALUE = "(none)"
STRATA = ("dataset", "run", "category")


def rubric_info(rubric: Rubric | None) -> RubricInfo | None:
    if rubric is None:
        return None
    return RubricInfo(
        id=rubric.id,
        version=rubric.version,
        hash=rubric.content_hash,
        labels=rubric.label_names,
        binary=dict(sorted(rubric.binary.items())),
        binary_positive=rubric.binary_positive,
        ordinal=rubric.ordinal,
    )


def rater_summaries(
    table: LabelTable, scales: list[Scale], included: list[str], ref: Reference | None
) -> list[RaterSummary]:
    out = []
    lab = scales[0]
    for info in table.raters:
        col = lab.column(info.name)
        valid = int((col >= 0).sum())
        counts = {c: int((col == i).sum()) for i, c in enumerate(lab.cats)}
        binary_counts = None
        constant_binary = None
        if len(scales) > 1:
            bcol = scales[1].column(info.name)
            binary_counts = {c: int((bcol == i).sum()) for i, c in enumerate(scales[1].cats)}
            constant_binary = constant.constant_label(bcol, scales[1].cats)
        label = constant.constant_label(col, lab.cats)
        out.append(
            RaterSummary(
                name=info.name,
                kind=info.kind,
                panels=info.panels,
                included=info.name in included,
                reference=ref is not None and info.name in ref.raters,
                n_valid=valid,
                n_invalid=int((col == INVALID).sum()),
                n_missing=int((col == ABSENT).sum()),
                counts=counts,
                shares={c: (v / valid if valid else None) for c, v in counts.items()},
                binary_counts=binary_counts,
                constant=label is not None,
                constant_label=label,
                constant_binary=constant_binary is not None,
            )
        )
    return out


def prevalence(table: LabelTable, scales: list[Scale]) -> Prevalence:
    groups: dict[str, dict[str, PrevalenceGroup]] = {}
    for field in STRATA:
        values = np.array([getattr(c, field) or NO_VALUE for c in table.cases], dtype=object)
        groups[field] = {}
        for value in sorted(set(values.tolist())):
            mask = values == value
            groups[field][value] = PrevalenceGroup(
                labels=distribution(scales[0].votes, scales[0].cats, mask),
                binary=distribution(scales[1].votes, scales[1].cats, mask)
                if len(scales) > 1
                else None,
            )
    return Prevalence(
        by_dataset=groups["dataset"], by_run=groups["run"], by_category=groups["category"]
    )


def other_rubric_raters(
    table: LabelTable, rubric: Rubric | None, cats: Sequence[str], named: Collection[str]
) -> list[str]:
    """Raters nobody named whose labels were all made under another rubric and are not
    labels of this one: they cannot be compared, so the report leaves them out (a
    rater ``named`` as a rater, voter or the reference is kept, and its foreign labels
    are an error)."""
    if rubric is None:
        return []
    out = []
    for name in table.uncodable(cats):
        hashes = table.rater(name).rubric_hashes
        if name not in named and hashes and rubric.content_hash not in hashes:
            out.append(name)
    return out


def report_notes(
    table: LabelTable,
    rubric: Rubric | None,
    included: list[str],
    scales: list[Scale],
    ref: Reference | None,
    left_out: list[str],
) -> list[str]:
    """What the figures cover and leave out, and what to read them with."""
    notes = []
    versions = table.bundle_versions()
    if len(versions) > 1:
        shown = ", ".join(v[:12] if v else "not recorded" for v in versions)
        notes.append(f"the cases in scope are of {len(versions)} bundle versions: {shown}")
    if left_out and rubric is not None:
        notes.append(
            f"left out rater(s) {', '.join(left_out)}: their labels are not labels of rubric "
            f"{rubric.id} (made under another rubric)"
        )
    lab = scales[0]
    for r in included:
        if not (lab.column(r) >= 0).any():
            notes.append(f"rater {r} has no valid label on the cases in scope")
    notes += constant_notes(table, scales)
    if rubric is not None:
        for info in table.raters:
            other = [h for h in info.rubric_hashes if h != rubric.content_hash]
            if other:
                notes.append(
                    f"rater {info.name} has labels made under rubric hash "
                    f"{', '.join(h[:12] for h in other)}, not this report's rubric "
                    f"{rubric.id} ({rubric.content_hash[:12]})"
                )
    complete = int((lab.codes >= 0).all(axis=1).sum())
    if complete < len(table.cases):
        notes.append(
            f"Fleiss' kappa uses the {complete} of {len(table.cases)} cases that every "
            "included rater labelled validly; Krippendorff's alpha and the pairwise "
            "figures use every valid label"
        )
    if ref is not None and ref.unresolved:
        notes.append(
            f"{ref.unresolved} case(s) have disagreeing human labels and no adjudicated "
            "label: they are left out of the comparison with the reference"
        )
    return notes


def constant_notes(table: LabelTable, scales: list[Scale]) -> list[str]:
    """A note per constant rater (:mod:`tiap.agreement.constant`), on its labels or,
    when only those vary, on the binary collapse."""
    notes = []
    for info in table.raters:
        col = scales[0].column(info.name)
        label = constant.constant_label(col, scales[0].cats)
        if label is not None:
            notes.append(constant.rater_note(info.name, int((col >= 0).sum()), label))
        elif len(scales) > 1:
            bcol = scales[1].column(info.name)
            blabel = constant.constant_label(bcol, scales[1].cats)
            if blabel is not None:
                n = int((bcol >= 0).sum())
                notes.append(constant.rater_note(info.name, n, blabel, binary=True))
    return notes
