"""The rescoring report (``report.json``) as pydantic models.

Keys are stable; floats are rounded to 10 decimals (p-values to 10
significant digits) and undefined values are ``null``. ``instability`` and
``confound`` cover the nDCG measures and the primary measure; every other
per-measure mapping covers every measure. Target pairs are named ``B-A``
(``canonical-raw`` is Canonical minus Raw); run pairs list ``run_a`` and
``run_b`` and their difference is ``run_a - run_b``. Measures are named ``family@k`` (``ndcg@10``).
``coverage``, ``target_order``, ``saturation``, ``shift_distribution`` and ``answers`` hold
the paper's further analyses (:mod:`tiap.rescore.coverage`, :mod:`tiap.rescore.ordering`,
:mod:`tiap.rescore.shifts`, :mod:`tiap.rescore.answer_analysis`); they are keys of their own, so
every other key is written as before (and a report written before them still reads, as
``null``); ``answers`` is left out altogether when no run carries answers.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from tiap.rescore.answer_models import Answers

Float = float | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Interval(_Model):
    """A paired mean difference with its bootstrap percentile interval."""

    n: int
    mean: Float
    ci_low: Float
    ci_high: Float


class Share(_Model):
    """How many shared queries changed between two targets, and by at least the threshold."""

    n: int
    n_changed: int
    share_changed: Float
    n_large: int
    share_large: Float


class Instability(_Model):
    overall: Share
    by_category: dict[str, Share] = Field(default_factory=dict)


class KShift(_Model):
    """B - A on the shared subset at one cut-off; ``relative_shift`` = shift / mean_a."""

    measure: str
    k: int
    mean_a: Float
    mean_b: Float
    shift: Float
    relative_shift: Float


class TargetSummary(_Model):
    """A target's own query set: queries with a non-empty target."""

    n_evaluated: int
    n_empty_target: int
    mean_target_size: Float
    means: dict[str, Float]


class SharedAll(_Model):
    """Means on the queries where every analysed target is non-empty."""

    n: int
    means: dict[str, dict[str, Float]]


class TargetPair(_Model):
    """Two targets on one run, over their shared subset (both non-empty)."""

    a: str
    b: str
    n_shared: int
    means_a: dict[str, Float]
    means_b: dict[str, Float]
    difference: dict[str, Interval]
    instability: dict[str, Instability]
    k_sensitivity: dict[str, list[KShift]]


class RunReport(_Model):
    run: str
    store: str
    retriever: str | None
    settings: dict[str, Any]
    n_queries: int
    n_missing_queries: int
    n_rankings_with_repeats: int
    n_repeated_memories: int
    targets: dict[str, TargetSummary]
    shared_all: SharedAll
    pairs: dict[str, TargetPair]


class OneAdded(_Model):
    """Shift on the (query, run) pairs where target B has exactly one more memory than A."""

    n: int
    mean_shift: Float
    t: Float
    p_value: Float


class Confound(_Model):
    """Pearson r between |B| - |A| and the B - A shift over (query, run) pairs."""

    n: int
    pearson_r: Float
    p_value: Float
    r_squared: Float
    one_added: OneAdded


class PooledPair(_Model):
    """A target pair over every (query, run) pair of the analysed runs."""

    a: str
    b: str
    n: int
    means_a: dict[str, Float]
    means_b: dict[str, Float]
    instability: dict[str, Instability]
    confound: dict[str, Confound]
    k_sensitivity: dict[str, list[KShift]]


class PooledRuns(_Model):
    """The runs the pooled figures pool over; ``left_out``: the raw-only runs left out
    (none with ``pool_raw_only``); ``n_raw_only``: how many runs are raw-only."""

    runs: list[str]
    left_out: list[str]
    n_raw_only: int
    pool_raw_only: bool
    reason: str


class RunPairTarget(_Model):
    n_shared: int
    means_a: dict[str, Float]
    means_b: dict[str, Float]
    difference: dict[str, Interval]


class RunPair(_Model):
    """Two runs compared under each target; ``winner`` is a run name or ``tie``."""

    #: the queries compared: "matched" (the same for every target) or "per-target"
    subsets: str = "per-target"
    run_a: str
    run_b: str
    targets: dict[str, RunPairTarget]
    winner: dict[str, dict[str, str]]
    winner_flip: dict[str, bool]
    significant_flip: dict[str, bool]


class DesignSetting(_Model):
    run: str
    value: Any
    label: str


class DesignFamily(_Model):
    """Runs equal in every setting but ``key``: the winning setting per target and measure."""

    #: the queries compared: "matched" (the same for every target) or "per-target"
    subsets: str = "per-target"
    key: str
    fixed: dict[str, Any]
    settings: list[DesignSetting]
    n_shared: dict[str, int]
    means: dict[str, dict[str, dict[str, Float]]]
    winner: dict[str, dict[str, list[str]]]
    winner_flip: dict[str, bool]


class Parameters(_Model):
    ks: list[int]
    measures: list[str]
    primary_measure: str
    targets: list[str]
    runs: list[str]
    resamples: int
    seed: int
    confidence: float
    change_tolerance: float
    large_change: float
    #: the queries run pairs and design families compare (``run_pairs``, ``design``)
    subsets: str = "per-target"
    #: whether runs on raw-only stores enter the pooled figures (``pooled_runs``)
    pool_raw_only: bool = True


class Warnings(_Model):
    count: int
    messages: list[str]


class HeadlineFlip(_Model):
    run_a: str
    run_b: str
    winners: dict[str, str]


class HeadlineDesign(_Model):
    key: str
    fixed: dict[str, Any]
    winner: dict[str, list[str]]
    winner_flip: bool


class Headline(_Model):
    """The figures an audit quotes, on the primary measure."""

    measure: str
    instability: dict[str, Share]
    differences: dict[str, dict[str, Interval]]
    winner_flips: list[HeadlineFlip]
    n_winner_flips_all_measures: int
    design: list[HeadlineDesign]
    #: the subsets the winner flips and design winners are on
    subsets: str = "per-target"


class OtherSubsets(_Model):
    """Run pairs and design families on the subsets the report does not use by choice
    (``subsets``); ``differs`` is whether any of their compared queries differ from
    those of the report's ``run_pairs`` and ``design``."""

    subsets: str
    differs: bool
    run_pairs: list[RunPair]
    design: list[DesignFamily]


# --- the paper's further analyses: coverage control (Section 5.1), target ordering
# (Table 7), saturation of the set-size effect (Appendix I), per-query shifts (Figure 3)


class CategoryMix(_Model):
    """Queries of one category among the covered and the excluded ones."""

    n_covered: int
    n_excluded: int


class CoverageRun(_Model):
    """One run: its Raw scores on queries with and without a Canonical target.

    ``n_raw`` queries have a Raw target; ``n_covered`` of them also have a Canonical
    target (they enter the Canonical comparisons), ``n_excluded`` do not.
    ``gap[m]`` is mean Raw ``m`` of the covered minus that of the excluded, with its
    bootstrap interval over the run's ``n_raw`` queries (``n`` = ``n_raw``).
    """

    n_raw: int
    n_covered: int
    n_excluded: int
    means_covered: dict[str, Float]
    means_excluded: dict[str, Float]
    gap: dict[str, Interval]
    categories: dict[str, CategoryMix] = Field(default_factory=dict)


class MeanGap(_Model):
    """The mean of the run-level gaps over the ``n_runs`` runs where both groups are
    non-empty, with its bootstrap interval (every run resampled over the same queries)."""

    n_runs: int
    n_queries: int
    mean: Float
    ci_low: Float
    ci_high: Float


class Coverage(_Model):
    """Coverage control: does leaving out queries without a ``target`` move the figures?"""

    target: str
    measured_on: str
    method: str
    runs: dict[str, CoverageRun] = Field(default_factory=dict)
    mean_gap: dict[str, MeanGap] = Field(default_factory=dict)


class TargetOrder(_Model):
    """One run and measure: the targets from best to worst on the run's shared subset.

    ``monotone`` is the paper's (Table 7): the scores follow Raw, Canonical, Source
    (Source >= Canonical >= Raw); ``containment_consistent`` is tiap's: no target below
    one it contains (Source >= max(Raw, Canonical))."""

    n: int
    order: str | None
    monotone: bool | None
    containment_consistent: bool | None = None


class TargetOrdering(_Model):
    """Per run and measure, the ordering of the targets, whether it is monotone (the
    paper) and whether it is containment consistent (tiap); ``counts[m][order]`` is how
    many runs have that ordering."""

    basis: str
    method: str
    runs: dict[str, dict[str, TargetOrder]] = Field(default_factory=dict)
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    n_not_monotone: dict[str, int] = Field(default_factory=dict)
    n_not_containment_consistent: dict[str, int] = Field(default_factory=dict)


class Saturation(_Model):
    """Mean ``pair`` shift by how many memories the broader target adds (``1``, ``2``,
    ``3``, ``4+``), over every (query, run) pair of the shared subsets."""

    pair: str
    method: str
    n: int
    n_none_added: int
    bins: dict[str, dict[str, Interval]] = Field(default_factory=dict)


class ShiftHistogram(_Model):
    """Per-query ``B - A`` shifts of one run and target pair: counts per bin, quartiles."""

    n: int
    n_down: int
    n_zero: int
    n_up: int
    mean: Float
    min: Float
    q1: Float
    median: Float
    q3: Float
    max: Float
    counts: list[int]


class ShiftDistribution(_Model):
    """The distribution of per-query shifts of ``measure`` (bins between ``edges``)."""

    measure: str
    method: str
    edges: list[float]
    runs: dict[str, dict[str, ShiftHistogram]] = Field(default_factory=dict)


class RescoreReport(_Model):
    schema_version: int = 1
    dataset: str
    bundle_name: str | None
    n_queries: int
    categories: dict[str, int]
    parameters: Parameters
    conventions: dict[str, str]
    warnings: Warnings
    exclusions: dict[str, dict[str, int]]
    runs: dict[str, RunReport]
    pooled: dict[str, PooledPair]
    run_pairs: list[RunPair]
    design: list[DesignFamily]
    #: run pairs and design families on the other subsets (matched or per-target)
    other_subsets: OtherSubsets | None = None
    #: the runs ``pooled`` pools over (absent from reports written before)
    pooled_runs: PooledRuns | None = None
    headline: Headline
    #: the paper's further analyses (absent from reports written before they existed)
    coverage: Coverage | None = None
    target_order: TargetOrdering | None = None
    saturation: Saturation | None = None
    shift_distribution: ShiftDistribution | None = None
    #: the answer-level analysis (:mod:`tiap.rescore.answer_analysis`); absent from report.json
    #: when no run carries answers, so such a report is written as before it existed
    answers: Answers | None = None

    @model_serializer(mode="wrap")
    def _without_absent_answers(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("answers", False) is None:
            del data["answers"]
        return data
