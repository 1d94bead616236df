"""Names shared by every package that reads or writes the workspace: rater kinds,
reserved rater names, label reasons and origins, subset kinds.

Use these names instead of spelling the strings out; the strings are what the
workspace stores, so they never change.
"""

from __future__ import annotations

from typing import Final, Literal

CaseKind = Literal["contested", "qrels", "answer"]
"""``cases.kind``: a contested credit (Raw missed, Source and Canonical credited a
memory), an annotated (query, document) pair of a qrels file, or a run's generated
answer to a query (judged against the gold answer)."""

CONTESTED: Final = "contested"
QRELS: Final = "qrels"
ANSWER: Final = "answer"
CASE_KINDS: Final[tuple[CaseKind, ...]] = (CONTESTED, QRELS, ANSWER)

QrelsPairOrigin = Literal["annotated", "negative"]
"""How a ``qrels`` case was drawn: an annotated pair of the qrels file, or a
top-ranked document of a run that the qrels file gives no positive grade (a
sampled negative, the check for missing relevance labels)."""

ANNOTATED: Final = "annotated"
NEGATIVE: Final = "negative"

RaterKind = Literal["judge", "human"]
"""``labels.rater_kind``. Rater names are one namespace per workspace: a name is a
judge or a human, never both."""

JUDGE: Final = "judge"
HUMAN: Final = "human"
RATER_KINDS: Final[tuple[RaterKind, ...]] = (JUDGE, HUMAN)

ADJUDICATED: Final = "adjudicated"
"""The (human) rater name under which adjudicated labels are stored; reserved."""

RETRACTED: Final = "retracted"
"""``labels.reason`` of a row that withdraws a human rater's label (``label`` NULL)."""

# ``labels.origin``: which part of tiap wrote a label row.
ORIGIN_JUDGE: Final = "judge"
"""a judge's answer (``tiap judge run``)"""
ORIGIN_TUI: Final = "tui"
"""a label given in ``tiap annotate tui``"""
ORIGIN_TUI_NOTE: Final = "tui-note"
"""a label given again with a note in ``tiap annotate tui``"""
ORIGIN_TUI_UNDO: Final = "tui-undo"
"""a label restored by undo in ``tiap annotate tui``"""
ORIGIN_LABELSTUDIO: Final = "labelstudio"
"""an annotation pulled from Label Studio"""
ORIGIN_RETRACT: Final = "retract"
"""a ``retracted`` row (:meth:`tiap.cases.workspace.Workspace.retract_label`)"""
LABEL_ORIGINS: Final = (
    ORIGIN_JUDGE,
    ORIGIN_TUI,
    ORIGIN_TUI_NOTE,
    ORIGIN_TUI_UNDO,
    ORIGIN_LABELSTUDIO,
    ORIGIN_RETRACT,
)

# ``subsets.params_json["kind"]``.
SUBSET_VALIDATION: Final = "validation"
"""a stratified validation subset (``tiap cases sample``): the scale gate's subset"""
SUBSET_QRELS_SAMPLE: Final = "qrels-sample"
"""the (query, document) pairs drawn from qrels files (``tiap cases from-qrels``)"""
SUBSET_KINDS: Final = (SUBSET_VALIDATION, SUBSET_QRELS_SAMPLE)


_KIND_NOUNS: Final = {
    QRELS: "qrels pair (an annotated query-document pair)",
    ANSWER: "answer (a run's generated answer to a query)",
}


def case_kind_noun(kind: str) -> str:
    """``contested credit`` / ``qrels pair`` (an annotated query-document pair) /
    ``answer`` (a run's generated answer), for messages."""
    return _KIND_NOUNS.get(kind, "contested credit")


def other_kind(kind: RaterKind) -> RaterKind:
    """The rater kind that is not ``kind``."""
    return HUMAN if kind == JUDGE else JUDGE


def kind_noun(kind: RaterKind) -> str:
    """``judge`` / ``human rater``, for messages."""
    return "judge" if kind == JUDGE else "human rater"
