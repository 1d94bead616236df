"""Contested cases: extraction, stratified sampling, and the workspace (SQLite)."""

from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace

__all__ = ["Case", "EvidenceItem", "LabelRecord", "Workspace", "rank_bucket"]
