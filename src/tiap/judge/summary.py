"""What a run (or a dry run) reports: per judge and in total. Stable JSON keys."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tiap.judge.panel import JudgeKind


class JudgeTally(BaseModel):
    """One judge's figures for a run."""

    judge: str
    kind: JudgeKind
    model: str
    cases: int = 0
    #: (case, judge) pairs that already had a label for this rubric: skipped.
    already_labelled: int = 0
    #: judgments answered from ``model_calls`` without a request.
    cache_hits: int = 0
    #: logical calls made (each may take several attempts).
    calls: int = 0
    #: retried attempts (429, 5xx, timeouts, connection errors).
    retries: int = 0
    valid: int = 0
    #: label NULL, by reason code (not_json, refusal, timeout, ...).
    invalid: dict[str, int] = Field(default_factory=dict)
    #: pairs left undone because the budget ran out or the judge stopped.
    not_started: int = 0
    cost_usd: float = 0.0
    #: calls whose cost is unknown (no price, none reported).
    cost_unknown: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: why the judge stopped early (an authentication or not-found error), if it did.
    error: str | None = None

    def add_invalid(self, reason: str) -> None:
        code = reason.split(":", 1)[0]
        self.invalid[code] = self.invalid.get(code, 0) + 1


class RunSummary(BaseModel):
    """The outcome of ``tiap judge run``."""

    panel: str
    rubric_id: str
    rubric_hash: str
    subset: str | None
    cases: int
    judges: list[JudgeTally]
    max_cost_usd: float | None = None
    stopped_by_budget: bool = False
    cost_usd: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    valid: int = 0
    invalid: dict[str, int] = Field(default_factory=dict)

    def finish(self) -> RunSummary:
        """Fill the totals from the per-judge figures."""
        self.cost_usd = round(sum(j.cost_usd for j in self.judges), 10)
        self.calls = sum(j.calls for j in self.judges)
        self.cache_hits = sum(j.cache_hits for j in self.judges)
        self.retries = sum(j.retries for j in self.judges)
        self.valid = sum(j.valid for j in self.judges)
        totals: dict[str, int] = {}
        for j in self.judges:
            for reason, n in j.invalid.items():
                totals[reason] = totals.get(reason, 0) + n
        self.invalid = dict(sorted(totals.items()))
        return self

    @property
    def errors(self) -> list[str]:
        return [f"{j.judge}: {j.error}" for j in self.judges if j.error]


class JudgeEstimate(BaseModel):
    """One judge's figures for ``--dry-run``."""

    judge: str
    kind: JudgeKind
    model: str
    cases: int
    already_labelled: int
    cache_hits: int
    calls: int
    est_input_tokens: int
    #: typical cost (about four characters per token, ~100 output tokens), or None
    #: when the judge's price is unknown.
    est_cost_usd: float | None
    #: upper bound (three characters per token, max_tokens of output).
    max_cost_usd: float | None
    missing_key_env: str | None = None


class DryRun(BaseModel):
    """The outcome of ``tiap judge run --dry-run``: nothing was called."""

    panel: str
    rubric_id: str
    rubric_hash: str
    subset: str | None
    cases: int
    judges: list[JudgeEstimate]
    calls: int = 0
    cache_hits: int = 0
    est_cost_usd: float | None = None
    max_cost_usd: float | None = None

    def finish(self) -> DryRun:
        self.calls = sum(j.calls for j in self.judges)
        self.cache_hits = sum(j.cache_hits for j in self.judges)
        typical = [j.est_cost_usd for j in self.judges]
        upper = [j.max_cost_usd for j in self.judges]
        self.est_cost_usd = None if None in typical else round(sum(typical), 6)  # type: ignore[arg-type]
        self.max_cost_usd = None if None in upper else round(sum(upper), 6)  # type: ignore[arg-type]
        return self
