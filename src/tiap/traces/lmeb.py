"""LMEB / BEIR-style retrieval data -> sources and queries (no lineage).

Reads a directory holding

- ``queries.jsonl``: ``{"id", "text"}`` per line;
- ``corpus.jsonl``: ``{"id", "title", "text"}`` per line (title and text joined
  with a space, as LMEB does);
- ``qrels.tsv``: ``query-id <TAB> corpus-id <TAB> score`` lines, integer scores,
  no header row;
- optionally ``candidates.jsonl``: ``{"scene_id", "candidate_doc_ids": [...]}``;
  a query belongs to the scene named by the first two ``_``-separated parts
  of its id, and is ranked over that scene's candidates only.

``corpus.jsonl`` and ``candidates.jsonl`` are looked up in the directory, then in
its parent (LMEB keeps them one level above each subset's queries and qrels).
Without lineage, every corpus item is a raw memory that is its own source, and
the qrels with score > 0 are a query's evidence (all scores are kept in the
query's ``metadata.qrels`` when any differs from 1). A query with no positive
qrels is excluded and listed.

Beside LMEB's fields a corpus line may carry what a dialogue turn has, as ``tiap
traces export lmeb`` writes it: ``speaker`` and ``time`` (text) become the source's,
``metadata`` (an object) its metadata, and ``session_id`` / ``turn_id`` go into the
metadata when no ``metadata`` holds them; a query line's ``answer``, ``category`` and
``metadata`` become the query's. A ``conversation_id`` becomes the source's (and is
kept in a query's metadata when it differs from its scene) when there are candidate
scenes; without them it is kept in the metadata, so that every query is still ranked
over the whole corpus. So an export and a build give back the bundle's sources and
queries with nothing lost. Any other type of value is kept in the metadata as it is.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from tiap.cells import restore
from tiap.errors import InputError, TiapError
from tiap.io import iter_jsonl, read_text_input, text_lines
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.models import Query, Source


def _as_id(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class LmebQuery(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str

    _id = field_validator("id", mode="before")(_as_id)


class LmebDoc(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    title: str | None = ""
    text: str

    _id = field_validator("id", mode="before")(_as_id)


class LmebScene(BaseModel):
    model_config = ConfigDict(extra="allow")

    scene_id: str
    candidate_doc_ids: list[str]

    _id = field_validator("scene_id", mode="before")(_as_id)


def scene_of(query_id: str) -> str:
    """LMEB's scene of a dialogue query: the first two ``_``-separated parts of its id."""
    return "_".join(query_id.split("_")[:2])


def _find(directory: Path, name: str) -> Path | None:
    for d in (directory, directory.parent):
        if (d / name).is_file():
            return d / name
    return None


#: a qrels grade: an ASCII integer of at most 9 digits.
_GRADE = re.compile(r"[+-]?[0-9]{1,9}")
_DIGITS = re.compile(r"[+-]?[0-9]+")
#: a first line whose score column is a word (``score``, ``relevance``) is a header.
_HEADER_WORD = re.compile(r"[A-Za-z][A-Za-z_ -]*")


def _looks_like_header(qid: str, score_text: str, query_ids: set[str]) -> bool:
    return qid not in query_ids and _HEADER_WORD.fullmatch(score_text) is not None


def read_qrels(path: Path, query_ids: set[str], doc_ids: set[str]) -> dict[str, dict[str, int]]:
    """``query_id -> {corpus_id: score}`` in file order; bad lines raise InputError."""
    qrels: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], int] = {}
    text = read_text_input(path)
    for lineno, line in text_lines(text):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) != 3:
            raise InputError(
                path,
                f"expected 3 tab-separated columns (query-id, corpus-id, score), found {len(cols)}",
                lineno,
            )
        qid, did, score_text = (restore(c.strip()) for c in cols)  # ids tiap's export quoted
        if _GRADE.fullmatch(score_text) is None:
            header = lineno == 1 and _looks_like_header(qid, score_text, query_ids)
            hint = " (qrels.tsv has no header row)" if header else ""
            shown = score_text if len(score_text) <= 40 else score_text[:40] + "..."
            problem = "is not an integer"
            if _DIGITS.fullmatch(score_text):
                problem = "is out of range (a grade has at most 9 digits)"
            raise InputError(path, f"score '{shown}' {problem}{hint}", lineno)
        score = int(score_text)
        if qid not in query_ids:
            raise InputError(path, f"unknown query id '{qid}' (not in queries.jsonl)", lineno)
        if did not in doc_ids:
            raise InputError(path, f"unknown corpus id '{did}' (not in corpus.jsonl)", lineno)
        if (qid, did) in first:
            raise InputError(
                path, f"pair ({qid}, {did}) listed twice (first at line {first[qid, did]})", lineno
            )
        first[qid, did] = lineno
        qrels.setdefault(qid, {})[did] = score
    return qrels


def _read_unique(path: Path, model: type[BaseModel], key: str, what: str) -> list[Any]:
    out: list[Any] = []
    seen: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path, model):
        value = getattr(rec, key)
        if value in seen:
            raise InputError(
                path, f"duplicate {what} '{value}' (first at line {seen[value]})", lineno
            )
        seen[value] = lineno
        out.append(rec)
    return out


@dataclass(frozen=True)
class _Files:
    """The input files of an LMEB/BEIR directory."""

    queries: Path
    corpus: Path
    qrels: Path
    candidates: Path | None

    def all(self) -> list[Path]:
        found = [self.queries, self.corpus, self.qrels, self.candidates]
        return [path for path in found if path is not None]


def tree_place(directory: Path, tree_root: Path) -> tuple[str, str, str]:
    """``(memory_type, dataset, task)`` of a task directory inside an LMEB tree.

    The directory's path under ``tree_root`` names them: its first part is the memory
    type, its second the dataset, and the whole relative path the task
    (``Dialogue/LoCoMo/single_hop``: type ``Dialogue``, dataset ``LoCoMo``); a dataset
    directory with no subsets is its own single task (``Dialogue/LoCoMo``).
    """
    try:
        parts = directory.resolve().relative_to(tree_root.resolve()).parts
    except ValueError:
        raise TiapError(f"{directory}: not inside the tree root {tree_root}") from None
    if len(parts) < 2:
        raise TiapError(
            f"{directory}: expected MEMORY_TYPE/DATASET[/TASK] under the tree root {tree_root}"
        )
    return parts[0], parts[1], "/".join(parts)


def load_lmeb(directory: str | Path, tree_root: str | Path | None = None) -> DatasetTraces:
    """Read an LMEB/BEIR-style directory into bundle terms.

    With ``tree_root`` (the folder holding LMEB's memory-type folders), the directory's
    place in the tree (:func:`tree_place`) sets the dataset and memory type that
    ``bundle.toml`` records, and the task (``options["lmeb_task"]``); without it the
    dataset is ``lmeb`` and there is no memory type.
    """
    place = tree_place(Path(directory), Path(tree_root)) if tree_root is not None else None
    files = _input_files(Path(directory))
    queries = _read_unique(files.queries, LmebQuery, "id", "query id")
    docs = _read_unique(files.corpus, LmebDoc, "id", "corpus id")
    doc_ids = {doc.id for doc in docs}
    qrels = read_qrels(files.qrels, {q.id for q in queries}, doc_ids)
    pools = _read_candidates(files.candidates, doc_ids) if files.candidates else None
    out = DatasetTraces(
        dataset="lmeb",
        input_file=Path(directory).name,
        input_sha256=_sha256(files.all()),
        sources=_sources(docs, pools is not None),
        queries=[],
        turns=[],
        candidate_pools=pools,
        options={"candidates": files.candidates is not None},
        description="LMEB/BEIR retrieval data: corpus items as sources, qrels > 0 as evidence",
    )
    if place is not None:
        out.memory_type, out.dataset, task = place
        out.options["lmeb_task"] = task
    for q in queries:
        _add_query(out, q, qrels.get(q.id, {}), pools)
    out.counts = {
        "corpus_items": len(docs),
        "queries_read": len(queries),
        "qrels_lines": sum(len(g) for g in qrels.values()),
        "scenes": len(pools) if pools is not None else 0,
        "sources": len(out.sources),
        "queries": len(out.queries),
        "queries_excluded": len(out.excluded_queries),
    }
    return out


def _input_files(d: Path) -> _Files:
    """The directory's files; corpus and candidates may be one level up."""
    if not d.is_dir():
        raise TiapError(f"{d}: not a directory (expected queries.jsonl, corpus.jsonl, qrels.tsv)")
    corpus = _find(d, "corpus.jsonl")
    if corpus is None:
        raise InputError(d / "corpus.jsonl", "file not found (looked here and one level up)")
    return _Files(
        queries=d / "queries.jsonl",
        corpus=corpus,
        qrels=d / "qrels.tsv",
        candidates=_find(d, "candidates.jsonl"),
    )


def _read_candidates(path: Path, doc_ids: set[str]) -> dict[str, frozenset[str]]:
    """``scene_id -> candidate corpus ids``; duplicate scenes and unknown ids raise."""
    pools: dict[str, frozenset[str]] = {}
    seen: dict[str, int] = {}
    for lineno, scene in iter_jsonl(path, LmebScene):
        if scene.scene_id in seen:
            raise InputError(
                path,
                f"duplicate scene id '{scene.scene_id}' (first at line {seen[scene.scene_id]})",
                lineno,
            )
        seen[scene.scene_id] = lineno
        for did in scene.candidate_doc_ids:
            if did not in doc_ids:
                raise InputError(
                    path, f"scene '{scene.scene_id}' names unknown corpus id '{did}'", lineno
                )
        pools[scene.scene_id] = frozenset(scene.candidate_doc_ids)
    return pools


def _sha256(paths: list[Path]) -> str:
    """One digest over the input files' bytes, in order."""
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as fh:
            for block in iter(partial(fh.read, 1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _extra_fields(
    extra: dict[str, Any], text_keys: tuple[str, ...], scenes: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(model fields, metadata) from a line's fields beyond LMEB's (the module doc)."""
    given = extra.get("metadata")
    meta: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    if given is not None and not isinstance(given, dict):
        meta["metadata"] = given
    fields: dict[str, Any] = {}
    for key in text_keys:
        value = extra.get(key)
        if isinstance(value, str):
            fields[key] = value
        elif value is not None:
            meta[key] = value
    conv = extra.get("conversation_id")
    if conv is not None:
        if scenes and isinstance(conv, str):
            fields["conversation_id"] = conv
        else:
            meta.setdefault("conversation_id", conv)
    if given is None:
        for key in ("session_id", "turn_id"):
            if extra.get(key) is not None:
                meta[key] = extra[key]
    return fields, meta


def _sources(docs: list[LmebDoc], scenes: bool) -> list[Source]:
    """Every corpus item as a source: its title and text joined with a space, and
    what it carries beside them (the module doc)."""
    out = []
    for doc in docs:
        title = (doc.title or "").strip()
        fields, meta = _extra_fields(doc.model_extra or {}, ("speaker", "time"), scenes)
        if title:
            meta["title"] = title
        out.append(
            Source(
                source_id=doc.id,
                text=f"{title} {doc.text}".strip() if title else doc.text,
                metadata=meta,
                **fields,
            )
        )
    return out


def _add_query(
    out: DatasetTraces,
    q: LmebQuery,
    grades: dict[str, int],
    pools: dict[str, frozenset[str]] | None,
) -> None:
    """The query with its positive qrels as evidence, or its exclusion and why."""
    evidence = [did for did, score in grades.items() if score > 0]
    if not evidence:
        out.log.add(
            "query_no_evidence",
            q.id,
            detail="no qrels line" if not grades else "no qrels line with score > 0",
        )
        out.excluded_queries.append(q.id)
        return
    scene = scene_of(q.id) if pools is not None else None
    if pools is not None and scene not in pools:
        out.log.add("query_no_candidates", q.id, value=scene)
        out.excluded_queries.append(q.id)
        return
    fields, meta = _query_extra(q, scene)
    if any(score != 1 for score in grades.values()):
        meta["qrels"] = dict(grades)
    out.queries.append(
        Query(
            query_id=q.id,
            question=q.text,
            evidence=evidence,
            conversation_id=scene,
            metadata=meta,
            **fields,
        )
    )


def _query_extra(q: LmebQuery, scene: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A query line's answer, category and metadata (the module doc); a conversation id
    other than its scene is kept in the metadata."""
    extra = dict(q.model_extra or {})
    for key in ("answer", "category"):  # numbers are text in a bundle
        value = extra.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            extra[key] = str(value)
    fields, meta = _extra_fields(extra, ("answer", "category"), scenes=False)
    if scene is not None and meta.get("conversation_id") == scene:
        del meta["conversation_id"]
    return fields, meta
