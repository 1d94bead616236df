"""Models of the agreement figures counted as the paper counts them (Tables 6 and 14,
and the validation kappa over five raters); see :mod:`tiap.agreement.paper_counts`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PluralityVote(_Model):
    """Per case, the label most voters gave (``tie_rule`` breaks ties); a case without a
    valid label is counted under ``no_valid_label``. ``counts`` and ``shares`` are over
    all ``n_cases`` cases, so the shares add up to 1."""

    policy: str
    tie_rule: str
    n_cases: int
    n_ties_broken: int
    counts: dict[str, int]
    shares: dict[str, float | None]


class CompleteCaseAgreement(_Model):
    """Mean pairwise percent agreement of the included raters on the ``n`` cases where
    every one of them gave a valid label (of ``n_cases``), beside the pairwise-deletion
    figure of the report's agreement table."""

    value: float | None
    ci: list[float] | None = None
    n: int
    n_cases: int
    reason: str | None = None


class ReferenceFleiss(_Model):
    """Fleiss' kappa over ``raters`` (the judges and the human reference's raters
    together, or the judges alone), on the ``n`` cases every one of them labelled
    validly."""

    raters: list[str]
    value: float | None
    ci: list[float] | None = None
    n: int
    reason: str | None = None


class PaperCounts(_Model):
    """The paper-compatible rows of the agreement report, per scale (``labels``, and
    ``binary`` when the rubric has one)."""

    plurality: dict[str, PluralityVote]
    complete_case_agreement: dict[str, CompleteCaseAgreement]
    #: with human labels only (the paper's five-rater validation kappa)
    fleiss_judges_and_reference: dict[str, ReferenceFleiss] | None = None
    #: beside it, with human labels only: the same kappa over the judges alone (the
    #: gate's figure under ``--gate-raters judges``)
    fleiss_judges: dict[str, ReferenceFleiss] | None = None
