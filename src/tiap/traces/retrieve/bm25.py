"""BM25 with bm25s: one index per candidate pool, all of the pool's queries scored at once.

Texts are tokenised once (bm25s' tokenizer, English stopwords, no stemming)
and cached, so the raw turns shared by every store are tokenised once per
build. The vocabulary is built in sorted order and scores are summed in
float64, so results do not depend on hash seeds. A memory that shares no term
with the query scores 0 and is not retrieved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_BATCH = 4096


@dataclass
class _Index:
    vocab: dict[str, int]
    matrix: Any  # scipy.sparse csr, vocab x docs, float64


class BM25Retriever:
    name = "bm25"
    digits = 4
    drop_nonpositive = True

    def __init__(self, k1: float = 1.5, b: float = 0.75, method: str = "lucene") -> None:
        self.k1 = k1
        self.b = b
        self.method = method
        self._tokens: dict[str, list[str]] = {}

    def config(self) -> dict[str, Any]:
        return {
            "library": "bm25s",
            "method": self.method,
            "k1": self.k1,
            "b": self.b,
            "stopwords": "en",
            "digits": self.digits,
        }

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        import bm25s

        missing = [t for t in dict.fromkeys(texts) if t not in self._tokens]
        for start in range(0, len(missing), _BATCH):
            chunk = missing[start : start + _BATCH]
            toks = bm25s.tokenize(chunk, stopwords="en", return_ids=False, show_progress=False)
            self._tokens.update(zip(chunk, toks, strict=True))
        return [self._tokens[t] for t in texts]

    def prepare(self, texts: Sequence[str], advance: Callable[[int], None]) -> None:
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), _BATCH):
            self.tokens(unique[start : start + _BATCH])
            advance(len(unique[start : start + _BATCH]))

    def index(self, docs: Sequence[str]) -> _Index | None:
        import bm25s
        import scipy.sparse as sp

        doc_tokens = self.tokens(docs)
        vocab = {tok: i for i, tok in enumerate(sorted({t for ts in doc_tokens for t in ts}))}
        if not vocab:
            return None
        ids = [[vocab[t] for t in ts] for ts in doc_tokens]
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index((ids, dict(vocab)), show_progress=False)
        s = model.scores
        n_vocab = len(s["indptr"]) - 1
        csc = sp.csc_matrix(
            (np.asarray(s["data"], dtype=np.float64), s["indices"], s["indptr"]),
            shape=(int(s["num_docs"]), n_vocab),
        )
        return _Index(vocab=vocab, matrix=csc.T.tocsr())

    def score(self, index: _Index | None, queries: Sequence[str]) -> np.ndarray:
        import scipy.sparse as sp

        if index is None:
            return np.zeros((len(queries), 0))
        rows: list[int] = []
        cols: list[int] = []
        for r, toks in enumerate(self.tokens(queries)):
            for t in toks:
                c = index.vocab.get(t)
                if c is not None:
                    rows.append(r)
                    cols.append(c)
        q = sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(queries), index.matrix.shape[0])
        )
        return np.asarray((q @ index.matrix).todense())
