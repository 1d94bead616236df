"""Which queries a comparison between runs uses: the *matched* subset or *per-target* ones.

Winner flips (run pairs) and design recommendations (design families) compare the
means of several runs under each target. Two readings of "the queries they share":

- **matched** (the paper, Section 5.3 and its winner comparisons): one fixed subset for
  every target, the queries where every compared target is non-empty for every run
  compared, so each target's means are over the same queries (the paper's n = 453 on
  LoCoMo's density sweep). The compared targets are those non-empty on at least one
  query for every run compared: a raw-only store's run (no Canonical memory at all)
  is still compared with others under Raw and Source, and has no Canonical figure
  either way.
- **per-target** (tiap's earlier choice): for each target, the queries where that
  target is non-empty for every run compared, so each target keeps all the queries it
  can score and the targets' figures are over different queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tiap.errors import TiapError
from tiap.rescore.scores import ScoreTable

MATCHED = "matched"
PER_TARGET = "per-target"
#: the readings, the default first
SUBSETS: tuple[str, ...] = (MATCHED, PER_TARGET)
DEFAULT_SUBSETS = MATCHED

#: how tables and figures name the queries compared
LABEL: dict[str, str] = {MATCHED: "matched subset", PER_TARGET: "per-target subsets"}

DESCRIPTION: dict[str, str] = {
    MATCHED: (
        "the queries where every compared target (one non-empty somewhere for every run "
        "compared) is non-empty for every run compared, the same queries for every target"
    ),
    PER_TARGET: (
        "for each target, the queries where that target is non-empty for every run compared"
    ),
}


def check_subsets(value: str, option: str = "--subsets") -> str:
    """``value`` when it names a reading; otherwise a one-line error."""
    if value not in SUBSETS:
        raise TiapError(f"{option} must be one of {', '.join(SUBSETS)} (got {value!r})")
    return value


def other(subsets: str) -> str:
    """The reading that is not ``subsets``."""
    return PER_TARGET if subsets == MATCHED else MATCHED


def per_target_mask(table: ScoreTable, runs: Sequence[str], target: str) -> np.ndarray:
    """Queries where ``target`` is non-empty for every run of ``runs``."""
    return np.logical_and.reduce([table.runs[r].sizes[target] > 0 for r in runs])


def masks(table: ScoreTable, runs: Sequence[str], subsets: str) -> dict[str, np.ndarray]:
    """``target -> queries compared`` for the runs ``runs`` under the reading ``subsets``."""
    own = {t: per_target_mask(table, runs, t) for t in table.targets}
    if subsets == PER_TARGET:
        return own
    compared = [
        m for t, m in own.items() if all(bool((table.runs[r].sizes[t] > 0).any()) for r in runs)
    ]
    common = (
        np.logical_and.reduce(compared) if compared else np.zeros(len(table.query_ids), dtype=bool)
    )
    return {t: m & common for t, m in own.items()}
