"""Which runs the pooled figures (pooled instability, the set-size confound and the
pooled cut-off sensitivity) pool over.

The paper pools over its runs on stores with derived memories. A run on a store
without any (a raw-only control run) has Source = Raw on every query and no Canonical
target, so it adds only unchanged (query, run) pairs to the pooled Source-Raw figures.
Such runs are left out of the pooled figures by default, with their names and count
in the report; ``pool_raw_only`` (``--pool-raw-only``) pools them too. When every run
is raw-only there is nothing to leave them out for, and all are pooled.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiap.rescore.report_models import PooledRuns
from tiap.traces.bundle import Bundle

REASON = "raw-only store (no derived memory): Source = Raw on every query, no Canonical target"


def raw_only_runs(bundle: Bundle, runs: Sequence[str]) -> list[str]:
    """The runs of ``runs`` whose store holds raw memories only."""
    raw_only: dict[str, bool] = {}
    out = []
    for run in runs:
        store = bundle.config.runs[run].store
        if store not in raw_only:
            raw_only[store] = all(m.raw for m in bundle.stores[store])
        if raw_only[store]:
            out.append(run)
    return out


def pooled_runs(bundle: Bundle, runs: Sequence[str], pool_raw_only: bool) -> PooledRuns:
    """The runs pooled, and those left out (raw-only ones, unless ``pool_raw_only`` or
    every run is raw-only)."""
    raw_only = raw_only_runs(bundle, runs)
    left_out = [] if pool_raw_only or len(raw_only) == len(runs) else raw_only
    return PooledRuns(
        runs=[r for r in runs if r not in left_out],
        left_out=left_out,
        n_raw_only=len(raw_only),
        pool_raw_only=pool_raw_only,
        reason=REASON,
    )
