"""Shared helpers of the rescoring analysis: parameters, rounding, means, shares."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tiap.rescore.metrics import Measure
from tiap.rescore.report_models import Float, Instability, Interval, Share
from tiap.stats.paired import BootstrapResult

#: Decimals kept for every float in report.json.
DECIMALS = 10
#: Two values closer than this count as unchanged.
CHANGE_TOLERANCE = 1e-9
#: A per-query change at least this large counts as large.
LARGE_CHANGE = 0.1
NO_CATEGORY = "(none)"


@dataclass(frozen=True)
class Settings:
    """Analysis parameters shared by every part of the report."""

    measures: tuple[Measure, ...]
    targets: tuple[str, ...]
    primary: Measure
    resamples: int
    seed: int
    confidence: float
    change_tolerance: float = CHANGE_TOLERANCE
    large_change: float = LARGE_CHANGE
    #: the queries run pairs and design families compare (``tiap.rescore.subsets``)
    subsets: str = "matched"
    #: pool runs on raw-only stores too (``tiap.rescore.pooling``)
    pool_raw_only: bool = False

    @property
    def names(self) -> list[str]:
        return [str(m) for m in self.measures]

    def focus(self) -> list[int]:
        """Columns of the instability and confound analyses: every nDCG measure and the
        primary measure."""
        return [i for i, m in enumerate(self.measures) if m.name == "ndcg" or m == self.primary]

    def families(self) -> dict[str, list[int]]:
        """Family -> column positions of its measures, by ascending cut-off."""
        out: dict[str, list[int]] = {}
        for i, m in enumerate(self.measures):
            out.setdefault(m.name, []).append(i)
        return {f: sorted(cols, key=lambda c: self.measures[c].k) for f, cols in out.items()}


def rnd(value: float | np.floating | None) -> Float:
    """A JSON-safe float: rounded, ``None`` for missing or non-finite values."""
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v):
        return None
    r = round(v, DECIMALS)
    return 0.0 if r == 0 else r


def rnd_sig(value: float | None, digits: int = 10) -> Float:
    """Like :func:`rnd` but keeps ``digits`` significant digits (for p-values)."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(f"{float(value):.{digits}g}")


def target_pairs(targets: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``(name, a, b)`` for every pair of targets in order; the difference is ``b - a``."""
    return [(f"{b}-{a}", a, b) for i, a in enumerate(targets) for b in targets[i + 1 :]]


def column_means(values: np.ndarray, names: list[str]) -> dict[str, Float]:
    """Mean of each column over the rows given (``None`` when there are none)."""
    if values.shape[0] == 0:
        return dict.fromkeys(names)
    return {n: rnd(v) for n, v in zip(names, values.mean(axis=0), strict=True)}


def intervals(result: BootstrapResult, names: list[str]) -> dict[str, Interval]:
    return {
        n: Interval(
            n=result.n,
            mean=rnd(result.mean[i]),
            ci_low=rnd(result.low[i]),
            ci_high=rnd(result.high[i]),
        )
        for i, n in enumerate(names)
    }


def _share(n: int, changed: int, large: int) -> Share:
    return Share(
        n=n,
        n_changed=changed,
        share_changed=rnd(changed / n) if n else None,
        n_large=large,
        share_large=rnd(large / n) if n else None,
    )


@dataclass(frozen=True)
class Categories:
    """Query categories as integer codes (``labels[codes[i]]`` is query ``i``'s category)."""

    labels: tuple[str, ...]
    codes: np.ndarray

    @classmethod
    def of(cls, categories: tuple[str | None, ...]) -> Categories | None:
        """``None`` when no query has a category."""
        if all(c is None for c in categories):
            return None
        names = [NO_CATEGORY if c is None else c for c in categories]
        labels = tuple(sorted(set(names)))
        position = {label: i for i, label in enumerate(labels)}
        codes = np.fromiter((position[c] for c in names), dtype=np.int64, count=len(names))
        return cls(labels, codes)

    def subset(self, mask: np.ndarray) -> Categories:
        return Categories(self.labels, self.codes[mask])


def instability(
    diff: np.ndarray, names: list[str], categories: Categories | None, settings: Settings
) -> dict[str, Instability]:
    """Per column of ``diff`` (``n x m``): how many entries changed at all, and by at least
    ``large_change``, overall and per category (``categories`` aligned with the rows)."""
    mag = np.abs(diff)
    changed = mag > settings.change_tolerance
    large = mag >= settings.large_change - settings.change_tolerance
    n = int(diff.shape[0])
    tot_changed, tot_large = changed.sum(axis=0), large.sum(axis=0)
    per_cat: list[tuple[str, int, np.ndarray, np.ndarray]] = []
    if categories is not None:
        onehot = np.zeros((len(categories.labels), n))
        onehot[categories.codes, np.arange(n)] = 1.0
        cat_n = onehot.sum(axis=1)
        cat_changed, cat_large = onehot @ changed, onehot @ large
        per_cat = [
            (label, int(cat_n[i]), cat_changed[i], cat_large[i])
            for i, label in enumerate(categories.labels)
            if cat_n[i] > 0
        ]
    return {
        name: Instability(
            overall=_share(n, int(tot_changed[j]), int(tot_large[j])),
            by_category={
                label: _share(cn, int(ch[j]), int(lg[j])) for label, cn, ch, lg in per_cat
            },
        )
        for j, name in enumerate(names)
    }
