"""Baseline retrievers that rank a store's memories for each query (BM25, dense).

Retrievers are looked up by name in :data:`RETRIEVERS` and imported only when
used, so the dense retriever's heavy dependencies load only for dense runs; a
retriever module's ``check_available()`` (if it has one) says, without loading
them, whether its optional extra is installed (:func:`require_retrievers`: before
any work starts).
"""

from __future__ import annotations

import importlib

from tiap.errors import TiapError
from tiap.traces.retrieve.retriever import Retriever, ScopeGroup, rank_store, scope_groups

#: name -> (module, class, description)
RETRIEVERS: dict[str, tuple[str, str, str]] = {
    "bm25": ("tiap.traces.retrieve.bm25", "BM25Retriever", "BM25 (bm25s, Lucene variant)"),
    "dense": (
        "tiap.traces.retrieve.dense",
        "DenseRetriever",
        "all-MiniLM-L6-v2 sentence embeddings, cosine similarity (extra 'dense')",
    ),
}


def make_retriever(name: str) -> Retriever:
    """A fresh retriever by name; unknown names raise TiapError."""
    try:
        module, cls, _ = RETRIEVERS[name]
    except KeyError:
        raise TiapError(f"unknown retriever '{name}' (known: {', '.join(RETRIEVERS)})") from None
    return getattr(importlib.import_module(module), cls)()


def require_retrievers(names: list[str]) -> None:
    """TiapError now, before any work, if a retriever in ``names`` is unknown or its
    optional extra is missing (nothing heavy is imported)."""
    for name in dict.fromkeys(names):
        try:
            module = RETRIEVERS[name][0]
        except KeyError:
            known = ", ".join(RETRIEVERS)
            raise TiapError(f"unknown retriever '{name}' (known: {known})") from None
        check = getattr(importlib.import_module(module), "check_available", None)
        if check is not None:
            check()


__all__ = [
    "RETRIEVERS",
    "Retriever",
    "ScopeGroup",
    "make_retriever",
    "rank_store",
    "require_retrievers",
    "scope_groups",
]
