"""Scoring targets: which stored memories get credit for a query (DESIGN.md).

For query q over store S, with E(q) the query's gold source evidence, a memory
m is *linked* to q when its lineage ``m.source_ids`` meets E(q). Then

- **raw**: linked memories that are the stored raw source turn (``raw``);
- **source**: every linked memory, raw or derived;
- **canonical**: linked memories that are transformed serving memories
  (``canonical`` and not ``raw``).

Relevance is binary (gain 1) for every member of the target. Further targets
can be added with :func:`register_target`. The sets themselves are built by
:mod:`tiap.rescore.lineage` and read through :class:`tiap.rescore.TargetIndex`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tiap.errors import TiapError
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


#: The paper's three targets, by name.
RAW, SOURCE, CANONICAL = "raw", "source", "canonical"

register_target(Target(RAW, "only the stored raw source turn", lambda m: m.raw))
register_target(Target(SOURCE, "any stored memory linked to the source", lambda m: True))
register_target(
    Target(
        CANONICAL,
        "transformed, non-raw serving memories linked to the source",
        lambda m: m.canonical and not m.raw,
    )
)

DEFAULT_TARGETS: tuple[str, ...] = (RAW, SOURCE, CANONICAL)


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        known = ", ".join(TARGETS)
        raise TiapError(f"unknown target '{name}' (known: {known})") from None
