"""Scoring targets: which stored memories get credit for a query (DESIGN.md).

For query q over store S, with E(q) the query's gold source evidence, a memory
m is *linked* to q when its lineage ``m.source_ids`` meets E(q). Then

- **raw**: linked memories that are the stored raw source turn (``raw``);
- **source**: every linked memory, raw or derived;
- **canonical**: linked memories that are transformed serving memories
  (``canonical`` and not ``raw``).

Relevance is binary (gain 1) for every member of the target. Further targets
can be added with :func:`register_target`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tiap.errors import TiapError
from tiap.traces.bundle import Bundle
from tiap.traces.models import Memory


@dataclass(frozen=True)
class Target:
    """A named scoring target: a predicate on a linked memory."""

    name: str
    description: str
    admits: Callable[[Memory], bool]


TARGETS: dict[str, Target] = {}


def register_target(target: Target) -> Target:
    """Add a target to the registry (names are unique)."""
    if target.name in TARGETS:
        raise TiapError(f"target '{target.name}' is already registered")
    TARGETS[target.name] = target
    return target


register_target(Target("raw", "only the stored raw source turn", lambda m: m.raw))
register_target(Target("source", "any stored memory linked to the source", lambda m: True))
register_target(
    Target(
        "canonical",
        "transformed, non-raw serving memories linked to the source",
        lambda m: m.canonical and not m.raw,
    )
)

DEFAULT_TARGETS: tuple[str, ...] = ("raw", "source", "canonical")


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        known = ", ".join(TARGETS)
        raise TiapError(f"unknown target '{name}' (known: {known})") from None


def source_index(memories: Iterable[Memory]) -> dict[str, list[Memory]]:
    """``source_id -> memories linked to it``, in store order."""
    index: dict[str, list[Memory]] = {}
    for m in memories:
        for sid in dict.fromkeys(m.source_ids):
            index.setdefault(sid, []).append(m)
    return index


def target_sets(
    bundle: Bundle, store: str, targets: Iterable[str] = DEFAULT_TARGETS
) -> dict[str, dict[str, frozenset[str]]]:
    """``target -> query_id -> set of memory ids`` for every query of the bundle on one store.

    Queries whose target is empty map to an empty set; callers exclude and count them.
    """
    chosen = [get_target(t) for t in targets]
    index = source_index(bundle.stores[store])
    out: dict[str, dict[str, frozenset[str]]] = {t.name: {} for t in chosen}
    for q in bundle.queries:
        linked: dict[str, Memory] = {}
        for sid in q.evidence:
            for m in index.get(sid, ()):
                linked.setdefault(m.memory_id, m)
        for t in chosen:
            out[t.name][q.query_id] = frozenset(mid for mid, m in linked.items() if t.admits(m))
    return out
