"""Target sensitivity of each run: target means, shared subsets, paired differences,
query-level instability, the set-size confound and cut-off sensitivity.

For targets A and B of a run, the *shared subset* is the queries where both
targets are non-empty; differences are ``B - A`` per query. Pooled figures
stack every (query, run) pair of the analysed runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tiap.rescore.common import (
    Categories,
    Settings,
    column_means,
    instability,
    intervals,
    rnd,
    rnd_sig,
    target_pairs,
)
from tiap.rescore.report_models import (
    Confound,
    KShift,
    OneAdded,
    PooledPair,
    SharedAll,
    TargetPair,
    TargetSummary,
)
from tiap.rescore.scores import RunScores, ScoreTable
from tiap.stats.hypothesis import one_sample_t, pearson
from tiap.stats.paired import BootstrapBatch


@dataclass(frozen=True)
class PairData:
    """One run's shared subset for a target pair."""

    mask: np.ndarray
    values_a: np.ndarray
    values_b: np.ndarray
    size_a: np.ndarray
    size_b: np.ndarray

    @property
    def diff(self) -> np.ndarray:
        return self.values_b - self.values_a


def pair_data(scores: RunScores, a: str, b: str) -> PairData:
    mask = (scores.sizes[a] > 0) & (scores.sizes[b] > 0)
    return PairData(
        mask=mask,
        values_a=scores.values[a][mask],
        values_b=scores.values[b][mask],
        size_a=scores.sizes[a][mask],
        size_b=scores.sizes[b][mask],
    )


def k_sensitivity(
    values_a: np.ndarray, values_b: np.ndarray, settings: Settings
) -> dict[str, list[KShift]]:
    """Per family: mean of A and B, B - A and (B - A) / A at each cut-off."""
    out: dict[str, list[KShift]] = {}
    n = values_a.shape[0]
    for family, cols in settings.families().items():
        rows = []
        for c in cols:
            ma = float(values_a[:, c].mean()) if n else None
            mb = float(values_b[:, c].mean()) if n else None
            shift = None if ma is None or mb is None else mb - ma
            rel = None if shift is None or not ma else shift / ma
            rows.append(
                KShift(
                    measure=str(settings.measures[c]),
                    k=settings.measures[c].k,
                    mean_a=rnd(ma),
                    mean_b=rnd(mb),
                    shift=rnd(shift),
                    relative_shift=rnd(rel),
                )
            )
        out[family] = rows
    return out


def plan_bootstrap(table: ScoreTable, batch: BootstrapBatch) -> None:
    """Register every run's target-pair differences with the bootstrap batch."""
    for run, scores in table.runs.items():
        for name, a, b in target_pairs(table.targets):
            mask = (scores.sizes[a] > 0) & (scores.sizes[b] > 0)
            batch.add(
                ("target_pair", run, name),
                mask,
                (("values", run, b), scores.values[b]),
                (("values", run, a), scores.values[a]),
            )


def target_summaries(scores: RunScores, settings: Settings) -> dict[str, TargetSummary]:
    out = {}
    for t in settings.targets:
        sizes = scores.sizes[t]
        mask = sizes > 0
        n = int(mask.sum())
        out[t] = TargetSummary(
            n_evaluated=n,
            n_empty_target=int(sizes.size - n),
            mean_target_size=rnd(sizes[mask].mean()) if n else None,
            means=column_means(scores.values[t][mask], settings.names),
        )
    return out


def shared_all(scores: RunScores, settings: Settings) -> SharedAll:
    mask = np.logical_and.reduce([scores.sizes[t] > 0 for t in settings.targets])
    return SharedAll(
        n=int(mask.sum()),
        means={t: column_means(scores.values[t][mask], settings.names) for t in settings.targets},
    )


def run_pairs_report(
    table: ScoreTable, run: str, batch: BootstrapBatch, settings: Settings
) -> dict[str, TargetPair]:
    scores = table.runs[run]
    cats = Categories.of(table.categories)
    focus = settings.focus()
    focus_names = [settings.names[i] for i in focus]
    out = {}
    for name, a, b in target_pairs(table.targets):
        data = pair_data(scores, a, b)
        diff = data.diff
        sub_cats = None if cats is None else cats.subset(data.mask)
        out[name] = TargetPair(
            a=a,
            b=b,
            n_shared=int(data.mask.sum()),
            means_a=column_means(data.values_a, settings.names),
            means_b=column_means(data.values_b, settings.names),
            difference=intervals(batch[("target_pair", run, name)], settings.names),
            instability=instability(diff[:, focus], focus_names, sub_cats, settings),
            k_sensitivity=k_sensitivity(data.values_a, data.values_b, settings),
        )
    return out


def confound(size_diff: np.ndarray, shift: np.ndarray) -> Confound:
    """Pearson r of the size difference and the shift; the shift where B adds one memory."""
    corr = pearson(size_diff, shift)
    one = one_sample_t(shift[size_diff == 1])
    return Confound(
        n=corr.n,
        pearson_r=rnd(corr.r),
        p_value=rnd_sig(corr.p_value),
        r_squared=rnd(corr.r_squared),
        one_added=OneAdded(
            n=one.n, mean_shift=rnd(one.mean), t=rnd(one.t), p_value=rnd_sig(one.p_value)
        ),
    )


def pooled_report(
    table: ScoreTable, settings: Settings, runs: Sequence[str] | None = None
) -> dict[str, PooledPair]:
    """Every target pair over all (query, run) pairs of ``runs`` (default: every
    analysed run)."""
    cats = Categories.of(table.categories)
    focus = settings.focus()
    focus_names = [settings.names[i] for i in focus]
    out = {}
    m = len(settings.measures)
    for name, a, b in target_pairs(table.targets):
        parts = [pair_data(table.runs[r], a, b) for r in (table.runs if runs is None else runs)]
        va = np.vstack([p.values_a for p in parts]) if parts else np.empty((0, m))
        vb = np.vstack([p.values_b for p in parts]) if parts else np.empty((0, m))
        size_diff = np.concatenate([p.size_b - p.size_a for p in parts]) if parts else np.empty(0)
        pooled_cats = (
            None
            if cats is None
            else Categories(cats.labels, np.concatenate([cats.codes[p.mask] for p in parts]))
        )
        diff = vb - va
        out[name] = PooledPair(
            a=a,
            b=b,
            n=int(va.shape[0]),
            means_a=column_means(va, settings.names),
            means_b=column_means(vb, settings.names),
            instability=instability(diff[:, focus], focus_names, pooled_cats, settings),
            confound={settings.names[i]: confound(size_diff, diff[:, i]) for i in focus},
            k_sensitivity=k_sensitivity(va, vb, settings),
        )
    return out
