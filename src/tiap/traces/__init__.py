"""Trace bundles: the bundle format, dataset adapters, native stores and baseline retrievers."""

from tiap.traces.bundle import Bundle, read_bundle, write_bundle
from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source

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
