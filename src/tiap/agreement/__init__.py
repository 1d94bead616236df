"""Agreement among raters: majority votes, kappas, alpha, confusion against a
human reference, prevalence, reports and the scale gate's verdict (judging
enforces it: :mod:`tiap.judge.scale_gate`).

Names are imported lazily, so ``import tiap.agreement`` costs nothing until a
function is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AgreementReport": "tiap.agreement.models",
    "CaseMeta": "tiap.agreement.label_table",
    "Diagnostics": "tiap.agreement.diagnostics_models",
    "LabelEntry": "tiap.agreement.label_table",
    "LabelTable": "tiap.agreement.label_table",
    "MajorityVote": "tiap.agreement.votes",
    "RaterInfo": "tiap.agreement.label_table",
    "SamplePlan": "tiap.agreement.beyond_models",
    "compute_report": "tiap.agreement.compute",
    "hand_plan": "tiap.agreement.case_plan",
    "labels_from_file": "tiap.agreement.files",
    "labels_from_workspace": "tiap.agreement.label_table",
    "majority_votes": "tiap.agreement.votes",
    "record_gate": "tiap.agreement.gate",
    "write_report": "tiap.agreement.write",
    "with_diagnostics": "tiap.agreement.diagnostics",
    "write_report_and_record_gate": "tiap.agreement.write",
}

__all__ = [
    "AgreementReport",
    "CaseMeta",
    "Diagnostics",
    "LabelEntry",
    "LabelTable",
    "MajorityVote",
    "RaterInfo",
    "SamplePlan",
    "compute_report",
    "hand_plan",
    "labels_from_file",
    "labels_from_workspace",
    "majority_votes",
    "record_gate",
    "with_diagnostics",
    "write_report",
    "write_report_and_record_gate",
]

if TYPE_CHECKING:
    from tiap.agreement.beyond_models import SamplePlan
    from tiap.agreement.case_plan import hand_plan
    from tiap.agreement.compute import compute_report
    from tiap.agreement.diagnostics import with_diagnostics
    from tiap.agreement.diagnostics_models import Diagnostics
    from tiap.agreement.files import labels_from_file
    from tiap.agreement.gate import record_gate
    from tiap.agreement.label_table import (
        CaseMeta,
        LabelEntry,
        LabelTable,
        RaterInfo,
        labels_from_workspace,
    )
    from tiap.agreement.models import AgreementReport
    from tiap.agreement.votes import MajorityVote, majority_votes
    from tiap.agreement.write import write_report, write_report_and_record_gate


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tiap.agreement' has no attribute '{name}'")
    return getattr(import_module(module), name)
