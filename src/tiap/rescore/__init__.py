"""Rescoring core: scoring targets, metrics@k, shared subsets, bootstrap, flips, reports.

The public API is loaded on first use (``from tiap.rescore import rescore_bundle``)
so that importing the package stays cheap:

- :func:`rescore_bundle`, :class:`RescoreResult`, :func:`write_outputs`,
  :func:`rescore_path` (:mod:`tiap.rescore.api`);
- :func:`score_rankings` (per-query measures from target sets and rankings
  given directly) and :func:`score_runs` (:mod:`tiap.rescore.scores`);
- :func:`parse_measure`, :func:`parse_measures`, :class:`Measure`
  (:mod:`tiap.rescore.metrics`);
- :class:`TargetIndex` and :class:`RunIndex` (:mod:`tiap.rescore.target_index`): a bundle's
  target sets per query and store, the first rank of each target's members in a
  run, and whether a target gets credit within k (what measures and case
  extraction both read);
- :func:`first_occurrences` (:mod:`tiap.rescore.ranking`);
- :func:`paired_bootstrap` (:mod:`tiap.stats.paired`, the bootstrap every report
  shares);
- :func:`register_target`, :func:`get_target` (:mod:`tiap.rescore.targets`);
- :func:`rescore_suite`, :func:`suite_report` (:mod:`tiap.rescore.suite`) and
  :class:`SuiteReport` (:mod:`tiap.rescore.suite_models`): Mean(Dataset) and
  Mean(Type) over several bundles.

The report's figures are SVG strings from :mod:`tiap.rescore.figures`
(``key_figures(report)``, ``forest_plot(report)``, ...), and ``report.html`` comes
from :mod:`tiap.rescore.report_html`; both draw with :mod:`tiap.report`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "rescore_bundle": "tiap.rescore.api",
    "rescore_path": "tiap.rescore.api",
    "write_outputs": "tiap.rescore.api",
    "RescoreResult": "tiap.rescore.api",
    "RescoreReport": "tiap.rescore.report_models",
    "score_rankings": "tiap.rescore.scores",
    "score_runs": "tiap.rescore.scores",
    "parse_measure": "tiap.rescore.metrics",
    "parse_measures": "tiap.rescore.metrics",
    "Measure": "tiap.rescore.metrics",
    "TargetIndex": "tiap.rescore.target_index",
    "RunIndex": "tiap.rescore.target_index",
    "first_occurrences": "tiap.rescore.ranking",
    "paired_bootstrap": "tiap.stats.paired",
    "register_target": "tiap.rescore.targets",
    "get_target": "tiap.rescore.targets",
    "rescore_suite": "tiap.rescore.suite",
    "suite_report": "tiap.rescore.suite",
    "SuiteReport": "tiap.rescore.suite_models",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tiap.rescore' has no attribute '{name}'")
    return getattr(import_module(module), name)
