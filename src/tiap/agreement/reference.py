"""The human reference raters are compared against.

Reference policies (``reference`` argument, ``--reference`` option):

- omitted: *human consensus*. On each case the reference is the label of rater
  ``adjudicated`` when it has a valid one; otherwise the label the human raters
  (kind ``human``) gave when every valid human label on the case is the same.
  Cases where humans disagree and nobody adjudicated are left out and counted
  as ``unresolved``. Human raters are taken from every label in the table,
  whether or not they are included in the agreement figures. Without any human
  label there is no reference.
- ``NAME``: exactly rater NAME's labels (NAME may be ``adjudicated``).
- ``NAME+adjudicated``: NAME's labels, with ``adjudicated`` overriding them on
  the cases it labelled validly.

Raters that make up the reference are not compared against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiap.agreement.formulas import counts_matrix
from tiap.agreement.label_table import LabelTable
from tiap.cases.vocab import ADJUDICATED, HUMAN
from tiap.errors import TiapError


@dataclass(frozen=True)
class Reference:
    policy: str
    raters: list[str]
    codes: np.ndarray  # per case: reference category, or -1
    unresolved: int
    #: per case: the humans disagree and nobody adjudicated (``None``: no such case)
    unresolved_cases: np.ndarray | None = None

    @property
    def n_cases(self) -> int:
        return int((self.codes >= 0).sum())


def _override(base: np.ndarray, adjudicated: np.ndarray | None) -> np.ndarray:
    if adjudicated is None:
        return base
    return np.where(adjudicated >= 0, adjudicated, base)


def resolve_reference(
    table: LabelTable, codes: np.ndarray, spec: str | None, k: int
) -> tuple[Reference | None, str | None]:
    """The reference (or ``None`` and why). ``codes`` has a column per rater of
    ``table`` in table order."""
    col = {name: j for j, name in enumerate(table.rater_names)}
    adj = codes[:, col[ADJUDICATED]] if ADJUDICATED in col else None
    if spec is not None:
        name, _, extra = spec.partition("+")
        if extra and extra != ADJUDICATED:
            raise TiapError(
                f"reference '{spec}': use a rater name, or NAME+{ADJUDICATED} to let "
                f"adjudicated labels override NAME's"
            )
        table.rater(name)
        ref = _override(
            np.where(codes[:, col[name]] >= 0, codes[:, col[name]], -1), adj if extra else None
        )
        raters = [name, ADJUDICATED] if extra and adj is not None else [name]
        policy = f"rater {name}" + (
            (f", overridden by {ADJUDICATED}" if adj is not None else f" (no {ADJUDICATED} labels)")
            if extra
            else ""
        )
        return Reference(policy, raters, ref, 0), None
    humans = [r.name for r in table.raters if r.kind == HUMAN and r.name != ADJUDICATED]
    if not humans and adj is None:
        return None, "no human labels (and no rater 'adjudicated'): nothing to compare against"
    if humans:
        counts = counts_matrix(codes[:, [col[h] for h in humans]], k)
        distinct = (counts > 0).sum(axis=1)
        base = np.where(distinct == 1, counts.argmax(axis=1), -1)
        disagree = distinct > 1
    else:
        base = np.full(len(codes), -1)
        disagree = np.zeros(len(codes), dtype=bool)
    ref = _override(base, adj)
    unresolved_cases = disagree & (ref < 0)
    unresolved = int(unresolved_cases.sum())
    raters = humans + ([ADJUDICATED] if adj is not None else [])
    policy = "human consensus" + (f", overridden by {ADJUDICATED}" if adj is not None else "")
    return Reference(policy, raters, ref, unresolved, unresolved_cases), None
