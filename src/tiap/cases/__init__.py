"""Contested cases: extraction, stratified sampling, and the workspace (SQLite).

Only this package issues SQL: every query is a method of :class:`Workspace`."""

from tiap.cases.models import Case, EvidenceItem, LabelMark, LabelRecord, ModelCall, rank_bucket
from tiap.cases.workspace import Workspace

__all__ = [
    "Case",
    "EvidenceItem",
    "LabelMark",
    "LabelRecord",
    "ModelCall",
    "Workspace",
    "rank_bucket",
]
