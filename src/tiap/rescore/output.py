"""``per_query.csv``: one row per (run, query, target), measures as columns.

Columns: ``run, query_id, target, target_size`` then one per measure
(``ndcg@10`` ...). Rows go by run (sorted by name), then query (bundle order),
then target. A query whose target is empty keeps its row, with
``target_size`` 0 and empty measure cells. Floats are written with Python's
shortest round-trip ``repr``, so the file is byte-stable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tiap.rescore.scores import ScoreTable

FIXED_COLUMNS = ("run", "query_id", "target", "target_size")


def columns(table: ScoreTable) -> list[str]:
    return [*FIXED_COLUMNS, *(str(m) for m in table.measures)]


def iter_rows(table: ScoreTable) -> Iterator[tuple[str, str, str, int, list[float]]]:
    """``(run, query_id, target, target_size, values)``; values are ``nan`` for empty targets."""
    for run, scores in table.runs.items():
        sizes = {t: scores.sizes[t].tolist() for t in table.targets}
        values = {t: scores.values[t].tolist() for t in table.targets}
        for i, qid in enumerate(table.query_ids):
            for t in table.targets:
                yield run, qid, t, sizes[t][i], values[t][i]


def _quote(text: str) -> str:
    """A CSV field as the ``csv`` module writes it (minimal quoting)."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_per_query_csv(table: ScoreTable, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    empty = "," * len(table.measures)
    qids = [_quote(q) for q in table.query_ids]
    with p.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(_quote(c) for c in columns(table)) + "\n")
        for run, scores in table.runs.items():
            lines = []
            heads = {t: f"{_quote(run)},{{}},{_quote(t)}," for t in table.targets}
            sizes = {t: scores.sizes[t].tolist() for t in table.targets}
            values = {t: scores.values[t].tolist() for t in table.targets}
            for i, qid in enumerate(qids):
                for t in table.targets:
                    size = sizes[t][i]
                    cells = ("," + ",".join(map(repr, values[t][i]))) if size else empty
                    lines.append(heads[t].format(qid) + str(size) + cells + "\n")
            fh.write("".join(lines))
    return p


def per_query_frame(table: ScoreTable) -> Any:
    """The per-query table as a pandas DataFrame (imports pandas)."""
    import numpy as np
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
