"""Constant raters: a rater that gives every case the same label.

A judge that labels all 115 validation cases ``does_not_support`` agrees with
nobody by design, not by judgment: its Cohen's kappa with anyone is 0 or
undefined by construction (its expected agreement equals its observed one), and
it drags Fleiss' kappa and alpha down. The report says so instead of showing
0.00 as if it were a measured agreement: ``raters[].constant`` (and
``constant_binary`` on the binary collapse), a note, a summary line, and the
gate's failure text when a judge is constant.

A rater is constant on a scale when it has at least two valid labels and they
are all the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: what a constant rater's agreement figures mean, in every message about one
MEANING = "kappa undefined or 0 by construction"


def constant_label(codes: np.ndarray, categories: Sequence[str]) -> str | None:
    """The one label of a rater's codes (``INVALID``/``ABSENT`` are negative), or
    ``None`` when it gives fewer than two valid labels or more than one label."""
    valid = codes[codes >= 0]
    if len(valid) < 2 or not (valid == valid[0]).all():
        return None
    return categories[int(valid[0])]


def rater_note(name: str, n_valid: int, label: str, *, binary: bool = False) -> str:
    """The report's note about a constant rater."""
    if binary:
        return (
            f"constant rater {name} on the binary scale: its {n_valid} valid labels all "
            f"collapse to '{label}' (binary {MEANING})"
        )
    return (
        f"constant rater {name}: all {n_valid} valid labels are '{label}' ({MEANING}; "
        "its agreement figures measure no agreement)"
    )


def gate_failure(judge: str, label: str) -> str:
    """The gate's failure text for a constant judge."""
    return f"judge {judge} is a constant rater (every valid label '{label}'): {MEANING}"
