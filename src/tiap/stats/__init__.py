"""What every figure's uncertainty shares.

- :mod:`tiap.stats.bootstrap`: the bootstrap's draws in chunks of bounded memory,
  one pass per report (:class:`Draws`, :func:`collect`), with an optional
  progress hook;
- :mod:`tiap.stats.percentile`: percentile intervals of resampled values, exact,
  in memory that does not grow with resamples x units (:class:`ResampleValues`);
- :mod:`tiap.stats.paired`: paired bootstrap intervals on shared subsets
  (:class:`BootstrapBatch`, :func:`paired_bootstrap`);
- :mod:`tiap.stats.intervals`: share intervals that are honest at small n
  (Wilson, Clopper-Pearson) and when a percentile interval can be relied on;
- :mod:`tiap.stats.hypothesis`: Pearson correlation and the one-sample t test;
- :mod:`tiap.stats.exact_tests`: exact McNemar and sign tests of paired changes;
- :mod:`tiap.stats.paired_shares`: the difference of two paired shares with
  Newcombe's interval;
- :mod:`tiap.stats.chance_agreement`: Cohen's kappa and Krippendorff's alpha
  (nominal, ordinal) as point estimates;
- :mod:`tiap.stats.control_chart`: an EWMA control chart of a share over time.
- :mod:`tiap.stats.ppi`: prediction-powered inference for a mean (PPI, PPI++),
  stratified, with the pooling of strata short of labels and the effective n;
- :mod:`tiap.stats.prevalence`: the Rogan-Gladen correction of an apparent
  prevalence by a rater's sensitivity and specificity.
- :mod:`tiap.stats.sample_size`: a kappa's per-case variance (analytic, bootstrap or
  simulated) and the cases its interval needs for a width or to clear a threshold.

A leaf package: it imports nothing from tiap but :mod:`tiap.errors` and
:mod:`tiap.limits`. The names that need numpy are loaded on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tiap.stats.intervals import (
    CONFIDENCE,
    RELIABLE_PERCENTILE_N,
    ShareMethod,
    check_confidence,
    clopper_pearson_interval,
    percentile_reliable,
    share_interval,
    wilson_interval,
)

_EXPORTS = {
    "AlphaLevel": "tiap.stats.chance_agreement",
    "EwmaPoint": "tiap.stats.control_chart",
    "ExactTest": "tiap.stats.exact_tests",
    "PairedDifference": "tiap.stats.paired_shares",
    "cohen_kappa": "tiap.stats.chance_agreement",
    "ewma_chart": "tiap.stats.control_chart",
    "krippendorff_alpha": "tiap.stats.chance_agreement",
    "mcnemar_exact": "tiap.stats.exact_tests",
    "paired_difference": "tiap.stats.paired_shares",
    "sign_test": "tiap.stats.exact_tests",
    "BootstrapBatch": "tiap.stats.paired",
    "BootstrapResult": "tiap.stats.paired",
    "Correlation": "tiap.stats.hypothesis",
    "DEFAULT_RESAMPLES": "tiap.stats.bootstrap",
    "DEFAULT_SEED": "tiap.stats.bootstrap",
    "Draws": "tiap.stats.bootstrap",
    "MeanEstimate": "tiap.stats.ppi",
    "OneSampleT": "tiap.stats.hypothesis",
    "Progress": "tiap.stats.bootstrap",
    "ResampleValues": "tiap.stats.percentile",
    "RoganGladen": "tiap.stats.prevalence",
    "StratifiedEstimate": "tiap.stats.ppi",
    "StratumSample": "tiap.stats.ppi",
    "cases_for_lower_bound": "tiap.stats.sample_size",
    "cases_for_width": "tiap.stats.sample_size",
    "cohen_kappa_variance": "tiap.stats.sample_size",
    "normal_quantile": "tiap.stats.sample_size",
    "sd_at": "tiap.stats.sample_size",
    "simulated_fleiss_variance": "tiap.stats.sample_size",
    "collect": "tiap.stats.bootstrap",
    "effective_n": "tiap.stats.ppi",
    "one_sample_t": "tiap.stats.hypothesis",
    "paired_bootstrap": "tiap.stats.paired",
    "pearson": "tiap.stats.hypothesis",
    "percentile_points": "tiap.stats.percentile",
    "pool_strata": "tiap.stats.ppi",
    "ppi_mean": "tiap.stats.ppi",
    "ratio_of": "tiap.stats.paired",
    "rogan_gladen": "tiap.stats.prevalence",
    "stratified_ppi": "tiap.stats.ppi",
}

__all__ = [
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "RELIABLE_PERCENTILE_N",
    "AlphaLevel",
    "BootstrapBatch",
    "BootstrapResult",
    "Correlation",
    "Draws",
    "EwmaPoint",
    "ExactTest",
    "MeanEstimate",
    "OneSampleT",
    "PairedDifference",
    "Progress",
    "ResampleValues",
    "RoganGladen",
    "ShareMethod",
    "StratifiedEstimate",
    "StratumSample",
    "cases_for_lower_bound",
    "cases_for_width",
    "check_confidence",
    "clopper_pearson_interval",
    "cohen_kappa",
    "cohen_kappa_variance",
    "collect",
    "effective_n",
    "ewma_chart",
    "krippendorff_alpha",
    "mcnemar_exact",
    "normal_quantile",
    "one_sample_t",
    "paired_bootstrap",
    "paired_difference",
    "pearson",
    "percentile_points",
    "percentile_reliable",
    "pool_strata",
    "ppi_mean",
    "ratio_of",
    "rogan_gladen",
    "sd_at",
    "share_interval",
    "sign_test",
    "simulated_fleiss_variance",
    "stratified_ppi",
    "wilson_interval",
]

if TYPE_CHECKING:
    from tiap.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, Draws, Progress, collect
    from tiap.stats.chance_agreement import AlphaLevel, cohen_kappa, krippendorff_alpha
    from tiap.stats.control_chart import EwmaPoint, ewma_chart
    from tiap.stats.exact_tests import ExactTest, mcnemar_exact, sign_test
    from tiap.stats.hypothesis import Correlation, OneSampleT, one_sample_t, pearson
    from tiap.stats.paired import BootstrapBatch, BootstrapResult, paired_bootstrap, ratio_of
    from tiap.stats.paired_shares import PairedDifference, paired_difference
    from tiap.stats.percentile import ResampleValues, percentile_points
    from tiap.stats.ppi import (
        MeanEstimate,
        StratifiedEstimate,
        StratumSample,
        effective_n,
        pool_strata,
        ppi_mean,
        stratified_ppi,
    )
    from tiap.stats.prevalence import RoganGladen, rogan_gladen
    from tiap.stats.sample_size import (
        cases_for_lower_bound,
        cases_for_width,
        cohen_kappa_variance,
        normal_quantile,
        sd_at,
        simulated_fleiss_variance,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tiap.stats' has no attribute '{name}'")
    return getattr(import_module(module), name)
