"""The answer-level analysis of ``report.json`` (key ``answers``; the paper's Section 5.5
and Appendix E) as pydantic models; see :mod:`tiap.rescore.answer_analysis` for the figures."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

Float = float | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MeanF1(_Model):
    """A mean answer F1 over ``n`` queries with its bootstrap percentile interval."""

    n: int
    mean: Float
    ci_low: Float
    ci_high: Float


class ExactMatch(_Model):
    """Queries whose answer matches the gold answer exactly, with a Wilson interval."""

    n: int
    n_exact: int
    share: Float
    ci_low: Float
    ci_high: Float


class AnswerCorrelation(_Model):
    """Per-query target score against answer F1, over the queries with that target."""

    n: int
    pearson: Float
    pearson_ci_low: Float
    pearson_ci_high: Float
    spearman: Float
    spearman_ci_low: Float
    spearman_ci_high: Float


class CorrelationMargin(_Model):
    """The best target's Pearson r minus another target's, paired on the queries where
    every compared target is non-empty."""

    n: int
    difference: Float
    ci_low: Float
    ci_high: Float


class AnswerGap(_Model):
    """The coverage control on answer F1: covered minus excluded, beside the Raw gap."""

    n_covered: int
    n_excluded: int
    f1_covered: Float
    f1_excluded: Float
    gap: Float
    ci_low: Float
    ci_high: Float
    score_gap: Float
    score_ci_low: Float
    score_ci_high: Float


class AnswerRun(_Model):
    """One run's answers scored against the gold answers."""

    n_queries: int
    n_answers: int
    #: how the answers were made (``answers/RUN.json``, when it describes the run file
    #: as it is); ``None``: not recorded (a system's own, or changed since)
    method: str | None = None
    n_scored: int
    n_no_gold: int
    n_abstention: int
    f1: MeanF1
    exact_match: ExactMatch
    correlations: dict[str, AnswerCorrelation] = Field(default_factory=dict)
    best_target: str | None = None
    best_margin: dict[str, CorrelationMargin] = Field(default_factory=dict)
    hits: dict[str, MeanF1] = Field(default_factory=dict)
    coverage: AnswerGap | None = None


class Answers(_Model):
    """Answer quality per run and how each target's score relates to it."""

    scoring: str
    measure: str
    hit_measure: str
    method: str
    runs: dict[str, AnswerRun] = Field(default_factory=dict)
    runs_without_answers: list[str] = Field(default_factory=list)
