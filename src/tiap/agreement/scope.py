"""What a report covers: the cases of the rubric's kind, the label categories and the
included raters."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement.label_table import LabelTable
from tiap.cases.vocab import ADJUDICATED, JUDGE
from tiap.errors import TiapError
from tiap.rubric import Rubric


def categories_for(
    table: LabelTable, rubric: Rubric | None
) -> tuple[list[str], list[str], list[int]]:
    """(labels, binary labels, label index -> binary index).

    With a rubric: its labels in its order and its binary collapse (positive
    first). Without: the labels that occur, sorted, and no collapse.
    """
    if rubric is not None:
        cats = rubric.label_names
        bins = rubric.binary_labels
        mapping = [bins.index(rubric.binary[c]) for c in cats] if bins else []
        return cats, bins, mapping
    cats = table.observed_labels()
    if not cats:
        raise TiapError(f"{table.path or 'labels'}: no valid label at all")
    return cats, [], []


def default_included(table: LabelTable) -> list[str]:
    """The judges (raters of kind ``judge``) when there are any, as in the paper's
    figures (and so that a report over every case is not cut down to the few
    cases people labelled); otherwise every rater except ``adjudicated``, which
    only resolves disagreements. Human raters are the reference either way."""
    judges = table.raters_of_kind(JUDGE)
    return judges or [r for r in table.rater_names if r != ADJUDICATED]


def resolve_raters(table: LabelTable, raters: Sequence[str] | None, what: str) -> list[str]:
    """Check named raters exist (keeping the table's order); default: included."""
    if raters is None:
        chosen = default_included(table)
    else:
        wanted = list(dict.fromkeys(raters))
        for name in wanted:
            table.rater(name)
        chosen = [r for r in table.rater_names if r in set(wanted)]
    if not chosen:
        raise TiapError(f"no {what}: no rater has labels on the cases in scope")
    return chosen


def of_rubric_kind(table: LabelTable, rubric: Rubric | None) -> tuple[LabelTable, list[str]]:
    """The table's cases of the rubric's kind (a rubric judges one kind of case), and a
    note on those left out. A table with no case of that kind is kept whole, with a
    note (labels imported under the rubric are still compared)."""
    kinds = table.kinds()
    if rubric is None or not kinds or kinds == [rubric.case_kind]:
        return table, []
    if rubric.case_kind not in kinds:
        return table, [
            f"rubric {rubric.id} judges {rubric.case_kind} cases, but the cases in scope are "
            f"of kind {', '.join(kinds)}"
        ]
    kept = table.of_kind(rubric.case_kind)
    dropped = len(table.cases) - len(kept.cases)
    others = ", ".join(k for k in kinds if k != rubric.case_kind)
    note = (
        f"left out {dropped} case(s) of kind {others}: rubric {rubric.id} judges "
        f"{rubric.case_kind} cases"
    )
    return kept, [note]
