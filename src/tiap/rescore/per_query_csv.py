"""``per_query.csv``: one row per (run, query, target), measures as columns.

Columns: ``run, query_id, target, target_size`` then one per measure
(``ndcg@10`` ...). Rows go by run (sorted by name), then query (bundle order),
then target. A query whose target is empty keeps its row, with
``target_size`` 0 and empty measure cells. Floats are written with Python's
shortest round-trip ``repr``, so the file is byte-stable. A run or query id that
a spreadsheet would run as a formula gets a leading single quote
(:mod:`tiap.cells`; numbers, like ``-0.5``, are numbers).
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from tiap.cells import field
from tiap.rescore.scores import ScoreTable

FIXED_COLUMNS = ("run", "query_id", "target", "target_size")


def columns(table: ScoreTable) -> list[str]:
    return [*FIXED_COLUMNS, *(str(m) for m in table.measures)]


def _quote(text: str) -> str:
    """A text field of the CSV file (:func:`tiap.cells.field`: neutralised when a
    spreadsheet would run it as a formula, quoted as the ``csv`` module quotes)."""
    return field(text)


def _cell_text(values: np.ndarray) -> list[str]:
    """``",v1,v2,..."`` per row, each value written as ``repr()`` writes it.

    A run's values take few distinct floats, so each distinct one is
    formatted once (``-0.0``, which sorts with ``0.0``, takes the plain path).
    """
    flat = values.reshape(-1)
    if not flat.size or bool(np.any((flat == 0) & np.signbit(flat))):
        return ["".join("," + repr(v) for v in row) for row in values.tolist()]
    distinct, codes = np.unique(flat, return_inverse=True)
    text = np.array(["," + repr(v) for v in distinct.tolist()], dtype=object)
    return ["".join(row) for row in text[codes.reshape(values.shape)].tolist()]


def write_per_query_csv(table: ScoreTable, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    empty = "," * len(table.measures)
    qids = [_quote(q) for q in table.query_ids]
    with p.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(_quote(c) for c in columns(table)) + "\n")
        for run, scores in table.runs.items():
            per_target = []
            lead = f"{_quote(run)},"
            for t in table.targets:
                mid = f",{_quote(t)},"
                sizes = scores.sizes[t].tolist()
                cells = [
                    text if size else empty
                    for text, size in zip(_cell_text(scores.values[t]), sizes, strict=True)
                ]
                per_target.append(
                    [
                        f"{lead}{q}{mid}{size}{c}\n"
                        for q, size, c in zip(qids, sizes, cells, strict=True)
                    ]
                )
            fh.write("".join(chain.from_iterable(zip(*per_target, strict=True))))
    return p


def per_query_frame(table: ScoreTable) -> Any:
    """The per-query table as a pandas DataFrame (imports pandas)."""
    import pandas as pd

    frames = []
    n = len(table.query_ids)
    for run, scores in table.runs.items():
        for t in table.targets:
            data: dict[str, Any] = {
                "run": [run] * n,
                "query_id": list(table.query_ids),
                "target": [t] * n,
                "target_size": scores.sizes[t].astype(np.int64),
            }
            for j, m in enumerate(table.measures):
                data[str(m)] = scores.values[t][:, j]
            frame = pd.DataFrame(data)
            frame["_q"] = np.arange(n)
            frame["_t"] = table.targets.index(t)
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=columns(table))
    out = pd.concat(frames, ignore_index=True)
    out["_r"] = out["run"].map({r: i for i, r in enumerate(table.runs)})
    out = out.sort_values(["_r", "_q", "_t"], kind="stable").drop(columns=["_r", "_q", "_t"])
    return out.reset_index(drop=True)
