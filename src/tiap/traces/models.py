"""Pydantic models for the trace bundle files (see DESIGN.md, "Trace bundle").

One model per line type, plus :class:`BundleConfig` for ``bundle.toml``.
Unknown fields are rejected so that a typo is an error, not a silent default;
free-form extras go in ``metadata``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, field_validator, model_validator

from tiap.limits import LimitError, check_k


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def _as_text(value: Any) -> Any:
    """Benchmarks store some answers as integers; the bundle keeps them as text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return str(value)
    return value


class Query(_Strict):
    """A benchmark question with its gold source evidence (``queries.jsonl``)."""

    query_id: str = Field(min_length=1)
    question: str
    answer: str = ""
    evidence: list[str]
    category: str | None = None
    conversation_id: str | None = None
    abstention: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)

    _coerce_answer = field_validator("answer", mode="before")(_as_text)
    _coerce_category = field_validator("category", mode="before")(_as_text)


class Source(_Strict):
    """A benchmark evidence fixture: what a judge sees as source evidence (``sources.jsonl``)."""

    source_id: str = Field(min_length=1)
    text: str
    speaker: str | None = None
    time: str | None = None
    conversation_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Memory(_Strict):
    """One stored memory with its lineage (``stores/NAME.jsonl``).

    ``raw`` marks the stored raw source turn; ``canonical`` marks a transformed
    serving memory. ``source_ids`` lists every source the memory derives from;
    a memory with none (imported without resolvable lineage) is *unlinked*: it
    can be ranked but is in no target. A raw memory needs its source.
    """

    memory_id: str = Field(min_length=1)
    text: str
    source_ids: list[str]
    raw: bool
    canonical: bool
    conversation_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _raw_has_source(self) -> Memory:
        if self.raw and not self.source_ids:
            raise ValueError("a raw memory needs its source in 'source_ids'")
        return self


class RunEntry(_Strict):
    """One query's ranked output in a run (``runs/NAME.jsonl``), best first.

    ``answer`` is the answer the system generated from its ranking, when the run
    carries one (an import maps it from the export; ``tiap answers extract`` writes
    extractive ones); a TREC run carries none. It defines no contested credit: it is
    not in their content or their version's fingerprint. ``tiap cases from-answers``
    makes answers cases of their own (kind ``answer``, :mod:`tiap.cases.from_answers`).
    """

    query_id: str = Field(min_length=1)
    ranking: list[str]
    scores: list[FiniteFloat] | None = None
    answer: str | None = None

    _coerce_answer = field_validator("answer", mode="before")(_as_text)

    @model_validator(mode="after")
    def _scores_match(self) -> RunEntry:
        if self.scores is not None and len(self.scores) != len(self.ranking):
            raise ValueError(
                f"'scores' has {len(self.scores)} values but 'ranking' has {len(self.ranking)}"
            )
        return self


class StoreConfig(_Strict):
    """A store entry in ``bundle.toml`` (optional: stores are also found on disk)."""

    file: str | None = None
    description: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class RunConfig(_Strict):
    """A run entry in ``bundle.toml``: which store it ranked, with which retriever."""

    store: str = Field(min_length=1)
    retriever: str | None = None
    file: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class BundleConfig(_Strict):
    """``bundle.toml``."""

    name: str | None = None
    dataset: str = Field(min_length=1)
    #: the benchmark's memory type (LMEB: Episodic, Dialogue, Semantic, Procedural)
    memory_type: str | None = None
    k: int = 60
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    stores: dict[str, StoreConfig] = Field(default_factory=dict)
    runs: dict[str, RunConfig] = Field(default_factory=dict)

    @field_validator("k", mode="before")
    @classmethod
    def _cutoff(cls, value: object) -> int:
        return cutoff(value)


def cutoff(value: object) -> int:
    """A pydantic check of a cut-off (:func:`tiap.limits.check_k`): an integer from
    1 to :data:`tiap.limits.MAX_K`, not a bool, a float or a string."""
    try:
        return check_k("", value)
    except LimitError as exc:
        raise ValueError(exc.problem) from None
