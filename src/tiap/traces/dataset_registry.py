"""The benchmark datasets tiap reads: each adapter's loader and the stores it supports.

:data:`DATASETS` maps a dataset name to its :class:`DatasetInfo`: a one-line
description, the stores a build can make from it, and the import path of its
loader (imported only when used). ``tiap traces build``/``import`` and their
help read it, so a new adapter is one entry here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.traces.adapter_output import DatasetTraces

PARSER_STORES = ("parser-D1", "parser-D5", "parser-D8")
#: BEAM messages longer than this many characters are cut (``--max-chars``; 0: no cap)
BEAM_MAX_CHARS = 20_000


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    description: str
    #: stores built by default, in order (every one a build of this dataset supports)
    default_stores: tuple[str, ...]
    #: ``module:function`` of the loader: ``(path, **options) -> DatasetTraces``
    loader: str
    #: how any parser density is named, when the dataset has turns for the parser
    parser: bool = True

    @property
    def stores_help(self) -> str:
        fixed = [s for s in self.default_stores if not s.startswith("parser-")]
        return ", ".join([*fixed, "parser-D<N>"] if self.parser else fixed)

    def load(self, path: Any, **options: Any) -> DatasetTraces:
        module, func = self.loader.split(":")
        read: Callable[..., DatasetTraces] = getattr(importlib.import_module(module), func)
        return read(path, **options)


DATASETS: dict[str, DatasetInfo] = {
    "locomo": DatasetInfo(
        "locomo",
        "LoCoMo: turns as sources, QA items as queries",
        ("raw", "observations", *PARSER_STORES, "summaries"),
        "tiap.traces.locomo:load_locomo",
    ),
    "longmemeval": DatasetInfo(
        "longmemeval",
        "LongMemEval: one haystack per question, turns or sessions as sources",
        ("raw", *PARSER_STORES),
        "tiap.traces.longmemeval:load_longmemeval",
    ),
    "beam": DatasetInfo(
        "beam",
        "BEAM: messages as sources, probing questions as queries",
        ("raw", *PARSER_STORES),
        "tiap.traces.beam:load_beam",
    ),
    "lmeb": DatasetInfo(
        "lmeb",
        "LMEB/BEIR retrieval data: corpus items as raw memories, qrels > 0 as evidence",
        ("raw",),
        "tiap.traces.lmeb:load_lmeb",
        parser=False,
    ),
}


def dataset_info(name: str) -> DatasetInfo:
    try:
        return DATASETS[name]
    except KeyError:
        raise TiapError(f"unknown dataset '{name}' (known: {', '.join(DATASETS)})") from None
