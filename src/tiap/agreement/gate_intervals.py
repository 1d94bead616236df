"""The gate's figures with their intervals: which number is compared with a threshold
(``gate_on``) and whether the verdict is ``conclusive``.

- ``point`` (the default, the paper's rule): each figure's point estimate must reach
  its threshold;
- ``lower``: each figure's 95% interval lower bound must reach it. A figure without an
  interval (``--resamples 0``, or too few resamples where it is defined) cannot show it,
  and fails.

The verdict is ``conclusive`` when the interval of every figure it rests on (Fleiss'
kappa over the judges; each judge's kappa against the human reference) lies wholly on
one side of its threshold: its lower bound at least the threshold (clears it whatever
the resampling says) or its upper bound below it (misses it). A figure that is
undefined or has no interval leaves the verdict inconclusive. The evidence rules (cases,
valid labels, rubric versions) are counts, not estimates, and do not enter.
"""

from __future__ import annotations

from collections.abc import Mapping

from tiap.agreement.figure_model import Figure
from tiap.cases.events import GateOn
from tiap.report.numbers import bounds, num

__all__ = ["conclusive", "lower_failure", "side"]


def side(f: Figure | None, threshold: float) -> bool | None:
    """``True`` when ``f``'s interval lies at or above ``threshold``, ``False`` when it
    lies below, ``None`` when it straddles it or there is no interval."""
    if f is None or f.value is None or not f.ci:
        return None
    low, high = f.ci
    if low >= threshold:
        return True
    if high < threshold:
        return False
    return None


def conclusive(
    fleiss: Figure | None,
    kappas: Mapping[str, Figure],
    min_fleiss: float,
    min_judge_kappa: float,
) -> bool:
    """Does every gate figure's interval lie wholly on one side of its threshold?"""
    sides = [side(fleiss, min_fleiss), *(side(f, min_judge_kappa) for f in kappas.values())]
    return all(s is not None for s in sides)


def lower_failure(what: str, f: Figure, threshold: float, gate_on: GateOn) -> str | None:
    """Under ``gate_on = lower``, why a defined figure does not clear ``threshold`` with
    its lower bound (``None``: it does, or the rule is ``point``)."""
    if gate_on != "lower" or f.value is None:
        return None
    if not f.ci:
        return (
            f"{what} {num(f.value)} has no interval (n={f.n}; --resamples 0, or too few "
            "resamples where it is defined): --gate-on lower needs one"
        )
    low, high = f.ci
    if low >= threshold:
        return None
    return (
        f"{what} {num(f.value)} {bounds(low, high)}: lower bound {num(low)} < "
        f"{threshold:.2f} (n={f.n}, --gate-on lower)"
    )
