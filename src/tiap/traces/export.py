"""A trace bundle -> an LMEB/BEIR retrieval task directory.

Writes, from a bundle's sources (the corpus) and queries (their evidence as
qrels of grade 1):

- ``corpus.jsonl``: ``{"_id", "id", "title", "text"}`` per source (``title`` empty,
  so LMEB's ``title + " " + text`` is the source text, and what a retriever scores is
  unchanged), and beside them what a dialogue turn carries, when the source has it:
  ``speaker``, ``time`` (the turn's or session's timestamp), ``conversation_id``,
  ``session_id`` and ``turn_id`` (from the source's metadata: ``session_id`` or
  ``session``; ``turn_id``, ``dia_id``, ``turn`` or ``message_id``) and the source's
  whole ``metadata``. LMEB's and BEIR's loaders read only the id, title and text;
  ``tiap traces build lmeb`` reads the rest back (:mod:`tiap.traces.lmeb`);
- ``queries.jsonl``: ``{"_id", "id", "text"}`` per query (``_id`` for BEIR, ``id``
  for LMEB and tiap), and, when the query has them, ``answer``, ``category``,
  ``conversation_id`` and ``metadata``;
- ``qrels.tsv``: ``query-id <TAB> corpus-id <TAB> 1``, no header (LMEB, tiap), and
  ``qrels/test.tsv``: the same rows under a ``query-id corpus-id score`` header
  (BEIR's ``GenericDataLoader(split="test")`` skips a header line). An id that a
  spreadsheet would run as a formula (``=x``, ``@x``, ``-x``) is written there with
  a leading single quote (:mod:`tiap.cells`): tiap's qrels reader removes it, other
  tools see it (the summary counts them);
- ``candidates.jsonl``: ``{"scene_id", "candidate_doc_ids"}``. LMEB finds a
  dialogue query's scene as the first two ``_``-separated parts of its id, so
  the scenes are those keys of the query ids, each with the sources of its
  queries' conversations as candidates (the query's own conversation when the
  key is the query id itself). Written only when every query has a
  conversation with sources.

With ``by_category``, each category also gets a subset folder (LMEB's layout:
``single_hop/queries.jsonl`` + ``qrels.tsv``, the corpus and candidates one
level up). Ids are kept as they are, so ``tiap traces build lmeb`` on the
directory gives back the bundle's queries, evidence and sources, with their speakers,
timestamps, session and turn ids and metadata.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tiap.cells import neutral
from tiap.errors import TiapError
from tiap.io import check_apart
from tiap.traces.bundle import Bundle
from tiap.traces.lmeb import scene_of
from tiap.traces.models import Query, Source

CORPUS = "corpus.jsonl"
QUERIES = "queries.jsonl"
QRELS = "qrels.tsv"
BEIR_QRELS = "qrels/test.tsv"
CANDIDATES = "candidates.jsonl"
BEIR_HEADER = "query-id\tcorpus-id\tscore"
_SLUG = re.compile(r"[^a-z0-9]+")


class ExportSummary(BaseModel):
    """What :func:`export_lmeb` wrote."""

    directory: str
    corpus: int
    queries: int
    qrels: int
    scenes: int = Field(description="candidate scenes written (0: no candidates.jsonl)")
    candidates_note: str = ""
    quoted_ids: int = Field(
        default=0, description="ids written to the qrels files with a leading ' (formula starts)"
    )
    subsets: dict[str, int] = Field(default_factory=dict, description="subset folder -> queries")


def subset_name(category: str | None) -> str:
    """A category as an LMEB subset folder name (``multi-hop`` -> ``multi_hop``)."""
    slug = _SLUG.sub("_", (category or "").lower()).strip("_")
    return slug or "uncategorised"


def _line(obj: dict[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _write(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(lines)


def _check_tsv_id(value: str, what: str) -> None:
    if any(c in value for c in "\t\r\n"):
        raise TiapError(f"{what} id {value!r} holds a tab or line break; qrels.tsv cannot hold it")


#: where a source's metadata keeps its session id and its turn id, in order of preference
SESSION_KEYS = ("session_id", "session")
TURN_KEYS = ("turn_id", "dia_id", "turn", "message_id")


def _first(metadata: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((metadata[k] for k in keys if metadata.get(k) is not None), None)


def corpus_row(s: Source) -> dict[str, object]:
    """A source as a corpus line (see the module doc)."""
    row: dict[str, object] = {"_id": s.source_id, "id": s.source_id, "title": "", "text": s.text}
    for key, value in (
        ("speaker", s.speaker),
        ("time", s.time),
        ("conversation_id", s.conversation_id),
        ("session_id", _first(s.metadata, SESSION_KEYS)),
        ("turn_id", _first(s.metadata, TURN_KEYS)),
    ):
        if value is not None:
            row[key] = value
    if s.metadata:
        row["metadata"] = s.metadata
    return row


def query_row(q: Query) -> dict[str, object]:
    """A query as a queries.jsonl line (see the module doc)."""
    row: dict[str, object] = {"_id": q.query_id, "id": q.query_id, "text": q.question}
    for key, value in (
        ("answer", q.answer or None),
        ("category", q.category),
        ("conversation_id", q.conversation_id),
        ("metadata", q.metadata or None),
    ):
        if value is not None:
            row[key] = value
    return row


def _queries_and_qrels(directory: Path, queries: list[Query], beir: bool) -> int:
    _write(directory / QUERIES, (_line(query_row(q)) for q in queries))
    rows = [
        f"{neutral(q.query_id)}\t{neutral(sid)}\t1\n"
        for q in queries
        for sid in dict.fromkeys(q.evidence)
    ]
    _write(directory / QRELS, rows)
    if beir:
        _write(directory / BEIR_QRELS, [BEIR_HEADER + "\n", *rows])
    return len(rows)


def candidate_scenes(bundle: Bundle) -> tuple[dict[str, list[str]], str]:
    """``scene -> candidate source ids`` and, when there are none, why."""
    by_conv: dict[str, list[str]] = {}
    for s in bundle.sources.values():
        if s.conversation_id is not None:
            by_conv.setdefault(s.conversation_id, []).append(s.source_id)
    scene_convs: dict[str, list[str]] = {}
    for q in bundle.queries:
        if q.conversation_id is None:
            return {}, f"query '{q.query_id}' has no conversation"
        if q.conversation_id not in by_conv:
            return {}, f"no source names conversation '{q.conversation_id}'"
        convs = scene_convs.setdefault(scene_of(q.query_id), [])
        if q.conversation_id not in convs:
            convs.append(q.conversation_id)
    scenes = {
        scene: [sid for conv in convs for sid in by_conv[conv]]
        for scene, convs in scene_convs.items()
    }
    shared = sum(len(c) > 1 for c in scene_convs.values())
    note = f"{shared} scenes hold queries of several conversations" if shared else ""
    return scenes, note


def _prepare(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise TiapError(f"{out}: exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise TiapError(f"{out}: directory exists and is not empty (use --force to replace it)")
    for name in (CORPUS, QUERIES, QRELS, CANDIDATES):
        (out / name).unlink(missing_ok=True)
    if (out / "qrels").is_dir():
        shutil.rmtree(out / "qrels")
    for sub in out.iterdir():
        if sub.is_dir() and {p.name for p in sub.iterdir()} <= {QUERIES, QRELS}:
            shutil.rmtree(sub)


def export_lmeb(
    bundle: Bundle, out: str | Path, *, by_category: bool = False, force: bool = False
) -> ExportSummary:
    """Write ``bundle`` as an LMEB/BEIR task directory ``out``."""
    root = Path(out)
    check_apart(out, [("bundle", bundle.root)], option="")  # --force would clear the bundle
    for sid in bundle.sources:
        _check_tsv_id(sid, "source")
    for q in bundle.queries:
        _check_tsv_id(q.query_id, "query")
    _prepare(root, force)
    root.mkdir(parents=True, exist_ok=True)
    _write(root / CORPUS, (_line(corpus_row(s)) for s in bundle.sources.values()))
    n_qrels = _queries_and_qrels(root, bundle.queries, beir=True)
    scenes, note = candidate_scenes(bundle)
    if scenes:
        _write(
            root / CANDIDATES,
            (_line({"scene_id": k, "candidate_doc_ids": v}) for k, v in scenes.items()),
        )
    subsets: dict[str, int] = {}
    if by_category:
        groups: dict[str, list[Query]] = {}
        for q in bundle.queries:
            groups.setdefault(subset_name(q.category), []).append(q)
        for name, qs in groups.items():
            _queries_and_qrels(root / name, qs, beir=False)
            subsets[name] = len(qs)
    ids = {q.query_id for q in bundle.queries} | {s for q in bundle.queries for s in q.evidence}
    return ExportSummary(
        directory=str(root),
        quoted_ids=sum(neutral(i) != i for i in ids),
        corpus=len(bundle.sources),
        queries=len(bundle.queries),
        qrels=n_qrels,
        scenes=len(scenes),
        candidates_note=note if scenes else f"no candidates.jsonl: {note}",
        subsets=subsets,
    )
