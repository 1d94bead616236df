"""Names shared by every package that reads or writes the workspace: rater kinds,
reserved rater names, label reasons and origins, subset kinds.

Use these names instead of spelling the strings out; the strings are what the
workspace stores, so they never change.
"""

from __future__ import annotations

from typing import Final, Literal

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
SUBSET_KINDS: Final = (SUBSET_VALIDATION,)


def other_kind(kind: RaterKind) -> RaterKind:
    """The rater kind that is not ``kind``."""
    return HUMAN if kind == JUDGE else JUDGE


def kind_noun(kind: RaterKind) -> str:
    """``judge`` / ``human rater``, for messages."""
    return "judge" if kind == JUDGE else "human rater"
