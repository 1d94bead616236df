"""Comparisons between runs: paired differences per target, winner flips, and the
design recommendation for runs that differ in one setting.

For runs A and B and a target, the compared queries are the *matched* subset
(the default: the same queries for every target, where every compared target is
non-empty on both runs' stores) or the *per-target* one (where that target is
non-empty on both), see :mod:`tiap.rescore.subsets`; the difference is ``A - B``. A
*winner flip* is a measure on which A is ahead under one target and behind
under another; it is *significant* when both of those intervals exclude zero.

A run's *settings* are its store's ``config``, its own ``config`` (which wins)
and its ``retriever``, from ``bundle.toml``. Runs equal in every setting but
one key form a *design family*; per target and measure the setting with the
highest mean over the family's compared queries (matched or per-target, for
every run in the family) is the recommended one.
"""

from __future__ import annotations

import json
from itertools import combinations
from typing import Any

from tiap.rescore.common import Settings, column_means, intervals
from tiap.rescore.report_models import (
    DesignFamily,
    DesignSetting,
    RunPair,
    RunPairTarget,
)
from tiap.rescore.scores import ScoreTable
from tiap.rescore.subsets import masks
from tiap.stats.paired import BootstrapBatch
from tiap.traces.bundle import Bundle

TIE = "tie"


def run_settings(bundle: Bundle, run: str) -> dict[str, Any]:
    """Store config, then run config, then ``retriever`` (later ones win)."""
    rc = bundle.config.runs[run]
    store_cfg = bundle.config.stores.get(rc.store)
    settings: dict[str, Any] = dict(store_cfg.config) if store_cfg else {}
    settings.update(rc.config)
    if rc.retriever is not None:
        settings["retriever"] = rc.retriever
    return settings


def plan_bootstrap(table: ScoreTable, batch: BootstrapBatch, subsets: str) -> None:
    for a, b in combinations(table.runs, 2):
        compared = masks(table, [a, b], subsets)
        for t in table.targets:
            batch.add(
                ("run_pair", subsets, a, b, t),
                compared[t],
                (("values", a, t), table.runs[a].values[t]),
                (("values", b, t), table.runs[b].values[t]),
            )


def _sign(value: float | None, tol: float) -> int:
    if value is None or abs(value) <= tol:
        return 0
    return 1 if value > 0 else -1


def run_pair_reports(
    table: ScoreTable, batch: BootstrapBatch, settings: Settings, subsets: str
) -> list[RunPair]:
    out = []
    names = settings.names
    for a, b in combinations(table.runs, 2):
        per_target = {}
        compared = masks(table, [a, b], subsets)
        for t in table.targets:
            mask = compared[t]
            per_target[t] = RunPairTarget(
                n_shared=int(mask.sum()),
                means_a=column_means(table.runs[a].values[t][mask], names),
                means_b=column_means(table.runs[b].values[t][mask], names),
                difference=intervals(batch[("run_pair", subsets, a, b, t)], names),
            )
        winner: dict[str, dict[str, str]] = {}
        flip: dict[str, bool] = {}
        significant: dict[str, bool] = {}
        for m in names:
            signs = {}
            for t, res in per_target.items():
                if res.n_shared:
                    signs[t] = _sign(res.difference[m].mean, settings.change_tolerance)
            winner[m] = {t: {1: a, -1: b, 0: TIE}[s] for t, s in signs.items()}
            flip[m] = 1 in signs.values() and -1 in signs.values()
            above = any(
                (iv := per_target[t].difference[m]).ci_low is not None and iv.ci_low > 0
                for t in signs
            )
            below = any(
                (iv := per_target[t].difference[m]).ci_high is not None and iv.ci_high < 0
                for t in signs
            )
            significant[m] = above and below
        out.append(
            RunPair(
                subsets=subsets,
                run_a=a,
                run_b=b,
                targets=per_target,
                winner=winner,
                winner_flip=flip,
                significant_flip=significant,
            )
        )
    return out


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _label(value: Any) -> str:
    return value if isinstance(value, str) else _canon(value)


def _order(value: Any) -> tuple[int, float, str]:
    if isinstance(value, bool):
        return (1, float(value), _canon(value))
    if isinstance(value, int | float):
        return (0, float(value), _canon(value))
    return (2, 0.0, _canon(value))


def fixed_label(fixed: dict[str, Any]) -> str:
    """The settings a design family holds fixed, as ``key=value, ...`` (``retriever``
    first, then by key; ``""`` when none): what tells two families of the same key
    apart, e.g. the ``parser_max_facts`` family of the BM25 runs (``retriever=bm25``)
    from that of the dense runs."""
    keys = sorted(fixed, key=lambda k: (k != "retriever", k))
    return ", ".join(f"{k}={_label(fixed[k])}" for k in keys)


def telling_apart(fixed: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """The settings of ``fixed`` (a design family's) that are not the same in every
    family of ``others`` (all families of the same key, this one among them): what a
    one-line summary needs to tell the families apart; the rest is the same for all of
    them (the report lists it)."""
    return {
        k: v
        for k, v in fixed.items()
        if any(k not in o or _canon(o[k]) != _canon(v) for o in others)
    }


def design_families(bundle: Bundle, runs: list[str]) -> list[tuple[str, dict[str, Any], list[str]]]:
    """``(key, fixed settings, runs ordered by setting)`` for every design family."""
    settings = {r: run_settings(bundle, r) for r in runs}
    keys = sorted({k for s in settings.values() for k in s})
    families = []
    for key in keys:
        groups: dict[str, list[str]] = {}
        for r in runs:
            if key not in settings[r]:
                continue
            rest = {k: v for k, v in settings[r].items() if k != key}
            groups.setdefault(_canon(rest), []).append(r)
        for rest_key in sorted(groups):
            members = groups[rest_key]
            values = {_canon(settings[r][key]) for r in members}
            if len(values) < 2:
                continue
            ordered = sorted(members, key=lambda r: (_order(settings[r][key]), r))
            families.append((key, json.loads(rest_key), ordered))
    return families


def design_reports(
    bundle: Bundle, table: ScoreTable, settings: Settings, subsets: str
) -> list[DesignFamily]:
    out = []
    names = settings.names
    for key, fixed, members in design_families(bundle, list(table.runs)):
        compared = masks(table, members, subsets)
        values = {r: run_settings(bundle, r)[key] for r in members}
        n_shared: dict[str, int] = {}
        means: dict[str, dict[str, dict[str, float | None]]] = {}
        winner: dict[str, dict[str, list[str]]] = {}
        for t in table.targets:
            mask = compared[t]
            n_shared[t] = int(mask.sum())
            per_run = {r: column_means(table.runs[r].values[t][mask], names) for r in members}
            means[t] = {m: {r: per_run[r][m] for r in members} for m in names}
            winner[t] = {}
            for m in names:
                scored = {r: v for r, v in means[t][m].items() if v is not None}
                if not scored:
                    winner[t][m] = []
                    continue
                best = max(scored.values())
                tops = [r for r, v in scored.items() if v >= best - settings.change_tolerance]
                winner[t][m] = list(dict.fromkeys(_label(values[r]) for r in tops))
        flip = {
            m: len({tuple(winner[t][m]) for t in table.targets if winner[t][m]}) > 1 for m in names
        }
        out.append(
            DesignFamily(
                subsets=subsets,
                key=key,
                fixed=fixed,
                settings=[
                    DesignSetting(run=r, value=values[r], label=_label(values[r])) for r in members
                ],
                n_shared=n_shared,
                means=means,
                winner=winner,
                winner_flip=flip,
            )
        )
    return out
