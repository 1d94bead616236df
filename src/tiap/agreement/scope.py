"""What a report covers: the label categories and the included raters."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement.table import LabelTable
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
