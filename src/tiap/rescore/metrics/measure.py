"""The measure registry, measure parsing and the per-target relevance matrix.

A *measure family* (``ndcg``, ``recall``, ``mrr``, ``map``, ``p``, ``hit``) is
one small module in this package; a *measure* is a family at a cut-off, written
``family@k`` (``ndcg@10``). :func:`parse_measure` turns such text into a
:class:`Measure`; unknown names raise :class:`~tiap.errors.TiapError`.

Every family computes its values for all queries at once from a
:class:`RankedRelevance`: a boolean matrix ``rel[q, i]`` (the memory at rank
``i + 1`` of query ``q`` is in the target) and the target sizes ``n_rel[q]``.
Conventions are trec_eval's with binary relevance: the ranking is the order
given in the run (a memory listed again later is dropped, so the ranks close
up, as in a TREC run file), positions past the end of a ranking are not
relevant, and queries with an empty target are undefined (callers exclude them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tiap.errors import TiapError
from tiap.limits import MAX_K, show_number

MeasureFn = Callable[["RankedRelevance", int], np.ndarray]


class RankedRelevance:
    """Binary relevance of ranked lists for one target, with shared partial sums.

    ``rel`` is a ``(queries, depth)`` boolean matrix; ``n_rel`` the number of
    target members per query. Values for queries with ``n_rel == 0`` are
    ``nan`` for the measures that divide by it. Derived matrices are computed
    once, on first use, and shared by all measures.
    """

    def __init__(self, rel: np.ndarray, n_rel: np.ndarray) -> None:
        if rel.ndim != 2 or n_rel.shape != (rel.shape[0],):
            raise ValueError("rel must be (queries, depth) and n_rel (queries,)")
        self.rel = rel.astype(bool, copy=False)
        self.n_rel = n_rel.astype(np.int64, copy=False)
        self._hits: dict[int, np.ndarray] = {}

    @property
    def depth(self) -> int:
        return int(self.rel.shape[1])

    def check_depth(self, k: int) -> None:
        if k > self.depth:
            raise ValueError(f"cut-off {k} is deeper than the relevance matrix ({self.depth})")

    @cached_property
    def gains(self) -> np.ndarray:
        """``rel`` as float64 (binary gains)."""
        return self.rel.astype(np.float64)

    @cached_property
    def ranks(self) -> np.ndarray:
        """``1, 2, ..., depth`` as floats."""
        return np.arange(1, self.depth + 1, dtype=np.float64)

    @cached_property
    def discount(self) -> np.ndarray:
        """``1 / log2(rank + 1)`` for ranks ``1..depth``."""
        return 1.0 / np.log2(self.ranks + 1.0)

    @cached_property
    def cum_discount(self) -> np.ndarray:
        """``cum_discount[i]``: ideal DCG of ``i + 1`` relevant memories."""
        return np.cumsum(self.discount)

    @cached_property
    def precision_terms(self) -> np.ndarray:
        """``rel_i * hits_i``: at a relevant rank ``i``, the relevant memories in the top ``i``."""
        return self.gains * np.cumsum(self.rel, axis=1, dtype=np.int64)

    @cached_property
    def first_hit(self) -> np.ndarray:
        """1-based rank of the first relevant memory, ``0`` when there is none in the matrix."""
        found = self.rel.any(axis=1)
        return np.where(found, np.argmax(self.rel, axis=1) + 1, 0)

    def hits_at(self, k: int) -> np.ndarray:
        """Relevant memories in the top ``k``, as floats (shared: do not modify)."""
        self.check_depth(k)
        hits = self._hits.get(k)
        if hits is None:
            hits = self._hits[k] = np.count_nonzero(self.rel[:, :k], axis=1).astype(np.float64)
        return hits

    def dcg_at(self, k: int) -> np.ndarray:
        """DCG of the top ``k`` with binary gains."""
        self.check_depth(k)
        return self.gains[:, :k] @ self.discount[:k]

    def precision_sum_at(self, k: int) -> np.ndarray:
        """Sum of precision at each relevant rank within the top ``k``."""
        self.check_depth(k)
        return self.precision_terms[:, :k] @ (1.0 / self.ranks[:k])

    def per_relevant(self, numerator: np.ndarray) -> np.ndarray:
        """``numerator / n_rel``, ``nan`` where the target is empty."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = numerator / self.n_rel
        out[self.n_rel == 0] = np.nan
        return out


@dataclass(frozen=True)
class MeasureFamily:
    """A registered measure family: ``name`` is what ``family@k`` text uses."""

    name: str
    title: str
    compute: MeasureFn
    pytrec_eval: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, order=True)
class Measure:
    """A measure family at a cut-off; ``str(m)`` is its column name (``ndcg@10``)."""

    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @property
    def family(self) -> MeasureFamily:
        return get_family(self.name)

    def compute(self, relevance: RankedRelevance) -> np.ndarray:
        """Per-query values (``nan`` for queries with an empty target)."""
        relevance.check_depth(self.k)
        values = np.array(self.family.compute(relevance, self.k), dtype=np.float64)  # a copy
        values[relevance.n_rel == 0] = np.nan
        return values


MEASURES: dict[str, MeasureFamily] = {}
_ALIASES: dict[str, str] = {}

#: Family order of the default metric set and of report columns.
DEFAULT_FAMILIES: tuple[str, ...] = ("ndcg", "recall", "mrr", "map", "p", "hit")
DEFAULT_KS: tuple[int, ...] = (10, 60)


def register_measure(family: MeasureFamily) -> MeasureFamily:
    """Add a family to the registry (names and aliases are unique, lower case)."""
    for alias in (family.name, *family.aliases):
        if alias in _ALIASES:
            raise TiapError(f"measure name '{alias}' is already registered")
    MEASURES[family.name] = family
    for alias in (family.name, *family.aliases):
        _ALIASES[alias] = family.name
    return family


def get_family(name: str) -> MeasureFamily:
    """The family registered under ``name`` or one of its aliases."""
    key = _ALIASES.get(name.strip().lower())
    if key is None:
        known = ", ".join(MEASURES)
        raise TiapError(f"unknown measure '{name}' (known: {known})")
    return MEASURES[key]


_CUTOFF_RE = re.compile(r"[+-]?[0-9]+")
_CUTOFF_DIGITS = 1000
_MEASURE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:@\s*(\S+))?\s*$")


def parse_k(text: str) -> int:
    """A cut-off: an integer from 1 to :data:`tiap.limits.MAX_K`."""
    digits = text.strip()
    if not _CUTOFF_RE.fullmatch(digits):
        raise TiapError(f"cut-off {show_number(digits[:40])} is not an integer")
    if len(digits) > _CUTOFF_DIGITS:  # beyond Python's int-from-text limit: surely too large
        k = 0 if digits.startswith("-") else MAX_K + 1
    else:
        k = int(digits)
    if k < 1:
        raise TiapError(f"cut-off {show_number(k)} must be at least 1")
    if k > MAX_K:
        shown = digits if len(digits) <= 40 else digits[:40] + "..."
        raise TiapError(f"cut-off {shown} must be at most {MAX_K:,}")
    return k


def parse_ks(text: str | Iterable[int]) -> tuple[int, ...]:
    """Cut-offs from ``"10,60"`` or a sequence, sorted and without repeats."""
    parts = [p for p in text.split(",") if p.strip()] if isinstance(text, str) else list(text)
    ks = sorted({parse_k(str(p)) for p in parts})
    if not ks:
        raise TiapError("no cut-off given (e.g. --k 10,60)")
    return tuple(ks)


def parse_measure(text: str) -> Measure:
    """``"ndcg@10"`` -> ``Measure("ndcg", 10)``; aliases such as ``P@5`` or ``MRR@60`` work."""
    match = _MEASURE_RE.match(text)
    if not match or match.group(2) is None:
        raise TiapError(f"cannot read measure '{text.strip()}' (expected NAME@K, e.g. ndcg@10)")
    family = get_family(match.group(1))
    return Measure(family.name, parse_k(match.group(2)))


def parse_measures(
    spec: str | Sequence[str] | None = None, ks: str | Iterable[int] = DEFAULT_KS
) -> tuple[Measure, ...]:
    """Measures from ``"ndcg,recall@60,p"``: a bare family expands to every cut-off in ``ks``.

    ``None`` means every default family at every cut-off. The result keeps the
    order given (families first-seen, then cut-off ascending) without repeats.
    """
    cutoffs = parse_ks(ks)
    if spec is None:
        items: list[str] = list(DEFAULT_FAMILIES)
    elif isinstance(spec, str):
        items = [p for p in spec.split(",") if p.strip()]
    else:
        items = [str(p) for p in spec]
    if not items:
        raise TiapError("no measure given (e.g. --metrics ndcg,recall@60)")
    out: dict[Measure, None] = {}
    for item in items:
        if "@" in item:
            out[parse_measure(item)] = None
        else:
            family = get_family(item)
            for k in cutoffs:
                out[Measure(family.name, k)] = None
    return tuple(out)
