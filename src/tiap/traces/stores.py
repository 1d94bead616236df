"""Native stores: the raw turns plus one family of derived memories, each with its lineage.

Store names and what they hold (every store but ``raw`` also holds the raw turns,
as a memory system's native store does):

- ``raw``: one raw memory per source.
- ``observations``: + the benchmark's observation facts (LoCoMo), canonical.
- ``summaries``: + the benchmark's session summaries (LoCoMo), derived and not
  canonical, each linked to every turn of its session.
- ``parser-D<N>``: + the extractive parser's facts, at most N per turn, canonical
  (``parser_max_facts = N`` in ``bundle.toml``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tiap.errors import TiapError
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.models import Memory, StoreConfig
from tiap.traces.parser import DENSITIES, parse_turns, parser_store_name

_PARSER_STORE = re.compile(r"parser-D([1-9]\d*)")


@dataclass(frozen=True)
class StoreKind:
    """A family of stores: which datasets have it and how its derived memories are made."""

    description: str
    available: Callable[[DatasetTraces], bool]


STORE_KINDS: dict[str, StoreKind] = {
    "raw": StoreKind("raw turns only", lambda ds: True),
    "observations": StoreKind(
        "raw turns + the benchmark's observation facts (canonical)",
        lambda ds: "observations" in ds.derived,
    ),
    "summaries": StoreKind(
        "raw turns + the benchmark's session summaries (derived, not canonical)",
        lambda ds: "summaries" in ds.derived,
    ),
    "parser": StoreKind(
        "raw turns + extractive parser facts, at most parser_max_facts per turn (canonical)",
        lambda ds: bool(ds.turns),
    ),
}


def default_stores(ds: DatasetTraces) -> list[str]:
    """Every store the dataset supports, in the standard order."""
    names = ["raw"]
    if STORE_KINDS["observations"].available(ds):
        names.append("observations")
    if STORE_KINDS["parser"].available(ds):
        names.extend(parser_store_name(n) for n in DENSITIES)
    if STORE_KINDS["summaries"].available(ds):
        names.append("summaries")
    return names


def store_kind(name: str) -> tuple[str, int | None]:
    """``(kind, parser_max_facts)`` of a store name; unknown names raise TiapError."""
    m = _PARSER_STORE.fullmatch(name)
    if m:
        return "parser", int(m.group(1))
    if name in STORE_KINDS and name != "parser":
        return name, None
    known = ", ".join([*(k for k in STORE_KINDS if k != "parser"), "parser-D<N>"])
    raise TiapError(f"unknown store '{name}' (known: {known})")


@dataclass
class BuiltStores:
    memories: dict[str, list[Memory]]
    configs: dict[str, StoreConfig]
    turns_without_facts: list[str] = field(default_factory=list)


def build_stores(ds: DatasetTraces, names: list[str]) -> BuiltStores:
    """Build the named stores (raw turns + each store's derived memories)."""
    kinds = {name: store_kind(name) for name in dict.fromkeys(names)}
    for name, (kind, _) in kinds.items():
        if not STORE_KINDS[kind].available(ds):
            raise TiapError(f"store '{name}' is not available for dataset '{ds.dataset}'")
    raw = ds.raw_memories()
    densities = [n for kind, n in kinds.values() if kind == "parser" and n is not None]
    parsed = parse_turns(ds.turns, densities) if densities else None
    memories: dict[str, list[Memory]] = {}
    configs: dict[str, StoreConfig] = {}
    for name, (kind, n) in kinds.items():
        config: dict[str, Any] = {}
        if kind == "raw":
            derived: list[Memory] = []
        elif kind == "parser" and parsed is not None and n is not None:
            derived = parsed.memories[n]
            config["parser_max_facts"] = n
        else:
            derived = ds.derived[kind]
        memories[name] = [*raw, *derived]
        configs[name] = StoreConfig(description=STORE_KINDS[kind].description, config=config)
    return BuiltStores(
        memories=memories,
        configs=configs,
        turns_without_facts=parsed.turns_without_facts if parsed else [],
    )
