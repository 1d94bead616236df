"""Trace bundles: the bundle format, dataset adapters, native stores and baseline retrievers.

The names below are imported when first used, so that importing a light submodule
(``tiap.traces.dataset_registry``, which the command line reads for its help) does not load
the bundle reader and its models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiap.traces.bundle import Bundle, read_bundle, write_bundle
    from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source

_WHERE = {
    "Bundle": "tiap.traces.bundle",
    "read_bundle": "tiap.traces.bundle",
    "write_bundle": "tiap.traces.bundle",
    "BundleConfig": "tiap.traces.models",
    "Memory": "tiap.traces.models",
    "Query": "tiap.traces.models",
    "RunConfig": "tiap.traces.models",
    "RunEntry": "tiap.traces.models",
    "Source": "tiap.traces.models",
}

__all__ = [
    "Bundle",
    "BundleConfig",
    "Memory",
    "Query",
    "RunConfig",
    "RunEntry",
    "Source",
    "read_bundle",
    "write_bundle",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tiap.traces' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
