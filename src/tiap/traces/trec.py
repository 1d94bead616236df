"""TREC run files: ``qid Q0 docid rank score tag``, one line per retrieved item.

Reading orders each query's items as trec_eval does: by score descending,
ties broken by docid descending (the rank column is ignored, as trec_eval
ignores it). Writing keeps each docid's first occurrence and gives ranks
1..n in ranking order, with the run's scores when they strictly decrease (so
trec_eval reads back the same order) and descending integers otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tiap.errors import InputError
from tiap.io import read_text_input, text_lines
from tiap.traces.models import RunEntry

TREC_SUFFIXES = (".trec", ".run", ".txt", ".tsv")


@dataclass(frozen=True)
class TrecEntry:
    """One query's ranking read from a TREC run, with where it came from: the line
    the query first appears on, and the line of each docid (for errors)."""

    entry: RunEntry
    line: int
    doc_lines: dict[str, int]


def read_trec_entries(path: str | Path) -> list[TrecEntry]:
    """Parse a TREC run file into run entries (with their lines), in first-seen
    query order. Every error names the file and the line."""
    p = Path(path)
    text = read_text_input(p)
    items: dict[str, list[tuple[float, str]]] = {}
    seen: dict[str, dict[str, int]] = {}
    for lineno, line in text_lines(text):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 6:
            raise InputError(
                p, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}", lineno
            )
        qid, _q0, docid, rank, score, _tag = parts
        try:
            int(rank)
        except ValueError:
            raise InputError(p, f"rank {_shown(rank)} is not an integer", lineno) from None
        try:
            value = float(score)
        except ValueError:
            raise InputError(p, f"score {_shown(score)} is not a number", lineno) from None
        if not math.isfinite(value):
            raise InputError(p, f"score {_shown(score)} is not a finite number", lineno)
        first = seen.setdefault(qid, {}).setdefault(docid, lineno)
        if first != lineno:
            raise InputError(
                p, f"docid '{docid}' listed twice for query '{qid}' (first at line {first})", lineno
            )
        items.setdefault(qid, []).append((value, docid))
    entries = []
    for qid, pairs in items.items():
        # trec_eval: sort by score descending, then by docid descending.
        pairs.sort(key=lambda sd: (sd[0], sd[1]), reverse=True)
        entry = RunEntry(query_id=qid, ranking=[d for _, d in pairs], scores=[s for s, _ in pairs])
        doc_lines = seen[qid]
        entries.append(TrecEntry(entry, min(doc_lines.values()), doc_lines))
    return entries


def read_trec_run(path: str | Path) -> list[RunEntry]:
    """Parse a TREC run file into run entries, in first-seen query order."""
    return [e.entry for e in read_trec_entries(path)]


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


def trec_id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a column of a TREC run (which is split at
    whitespace), or ``None`` when it can."""
    if not value:
        return "is empty"
    if any(c.isspace() for c in value):
        return "holds whitespace"
    return None


def format_trec_run(entries: Iterable[RunEntry], tag: str = "tiap") -> str:
    """Render entries as TREC run text (ranks from 1, in ranking order)."""
    lines: list[str] = []
    for entry in entries:
        # TREC runs cannot list a docid twice: keep each memory's first occurrence.
        first = dict.fromkeys(range(len(entry.ranking)))
        seen: set[str] = set()
        for i, docid in enumerate(entry.ranking):
            if docid in seen:
                del first[i]
            seen.add(docid)
        keep = list(first)
        n = len(keep)
        scores = [entry.scores[i] for i in keep] if entry.scores is not None else None
        if scores is None or any(a <= b for a, b in itertools.pairwise(scores)):
            scores = [float(n - j) for j in range(n)]
        for j, i in enumerate(keep):
            lines.append(f"{entry.query_id} Q0 {entry.ranking[i]} {j + 1} {scores[j]!r} {tag}")
    return "".join(line + "\n" for line in lines)


def write_trec_run(path: str | Path, entries: Iterable[RunEntry], tag: str = "tiap") -> None:
    """Write entries as a TREC run file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(format_trec_run(entries, tag), encoding="utf-8", newline="\n")
