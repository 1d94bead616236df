"""LMEB/BEIR task directories written from trace bundles built with ``tiap traces
build`` on the real LoCoMo and LongMemEval files (no LMEB files are shipped).

A bundle's turns are the corpus (``id``, ``title`` = speaker and time, ``text``),
its queries the queries (ids in LMEB's form, ``<scene>_q<n>``, so that LMEB's scene
rule finds the conversation), its evidence the qrels (grade 1), its conversation
the candidate scene, and its BM25 ranking of the raw turns the run (``run.trec``).

Known errors can be written in: ``wrong`` random documents of the query's scene
labelled relevant (grade 1), and ``missed`` evidence documents left out of the
qrels but put at rank 1 of the run (the classic missing label). The
:class:`TaskFiles` say which, and :func:`truth_key` gives the key an oracle judge
reads from a rendered prompt to answer from the truth (the bundle's evidence).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.traces.bundle import Bundle
from tiap.traces.models import Query, RunEntry, Source
from tiap.traces.trec import write_trec_run

RUN_FILE = "run.trec"
RUN_NAME = "bm25-raw"


def title_of(source: Source) -> str:
    return " · ".join(x for x in (source.speaker, source.time) if x)


def truth_key(query: str, title: str, text: str) -> tuple[str, str, str]:
    """What identifies a (query, document) pair in a rendered prompt."""
    return (query.strip(), title.strip(), text.strip())


@dataclass
class TaskFiles:
    """One written task: its directory, its dataset name under the tree, its query
    ids (LMEB form -> bundle query), and the pairs written in wrongly or left out."""

    path: Path
    dataset: str
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]
    run: dict[str, list[str]]
    wrong: set[tuple[str, str]] = field(default_factory=set)
    missed: set[tuple[str, str]] = field(default_factory=set)

    @property
    def lines(self) -> int:
        return sum(len(g) for g in self.qrels.values())


def scene_id(conversation: str) -> str:
    """A conversation as an LMEB scene of two ``_`` parts: ``conv-26`` -> ``conv_26``,
    a LongMemEval haystack ``e47becba`` -> ``lme_e47becba``."""
    scene = re.sub(r"[^A-Za-z0-9]+", "-", conversation).strip("-").replace("-", "_", 1)
    return scene if "_" in scene else f"lme_{scene}"


def lmeb_query_id(query: Query, n: int) -> str:
    """``conv_26_q3``: LMEB's scene rule (first two ``_`` parts) gives ``conv_26``."""
    return f"{scene_id(query.conversation_id or query.query_id)}_q{n}"


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_corpus(directory: Path, bundle: Bundle, conversations: Sequence[str]) -> list[str]:
    """``corpus.jsonl`` and ``candidates.jsonl`` for these conversations (LMEB keeps
    them one level above the tasks that share them); the document ids, in order."""
    wanted = set(conversations)
    docs = [s for s in bundle.sources.values() if s.conversation_id in wanted]
    _write_jsonl(
        directory / "corpus.jsonl",
        ({"id": s.source_id, "title": title_of(s), "text": s.text} for s in docs),
    )
    scenes: dict[str, list[str]] = {}
    for s in docs:
        scenes.setdefault(scene_id(s.conversation_id or ""), []).append(s.source_id)
    _write_jsonl(
        directory / "candidates.jsonl",
        ({"scene_id": scene, "candidate_doc_ids": ids} for scene, ids in scenes.items()),
    )
    return [s.source_id for s in docs]


def write_task(
    directory: Path,
    dataset: str,
    bundle: Bundle,
    queries: Sequence[Query],
    *,
    wrong: int = 0,
    missed: int = 0,
    seed: int = 0,
) -> TaskFiles:
    """``queries.jsonl``, ``qrels.tsv`` and ``run.trec`` of one task (the corpus is
    written with :func:`write_corpus`, here or one level up)."""
    rng = random.Random(seed)
    ids = {lmeb_query_id(q, n): q for n, q in enumerate(queries)}
    qrels = {qid: dict.fromkeys(q.evidence, 1) for qid, q in ids.items()}
    rankings = {e.query_id: list(dict.fromkeys(e.ranking)) for e in bundle.runs[RUN_NAME]}
    run = {qid: list(rankings.get(q.query_id, [])) for qid, q in ids.items()}
    truth = truth_pairs(bundle, bundle.queries)
    task = TaskFiles(directory, dataset, ids, qrels, run)
    order = sorted(ids)
    for qid in rng.sample(order, missed):
        doc = rng.choice(sorted(qrels[qid]))
        del qrels[qid][doc]
        run[qid] = [doc, *(d for d in run[qid] if d != doc)]
        task.missed.add((qid, doc))
    by_scene: dict[str | None, list[str]] = {}
    for s in bundle.sources.values():
        by_scene.setdefault(s.conversation_id, []).append(s.source_id)
    for qid in rng.sample(order, wrong):
        q = ids[qid]
        pool = [
            d
            for d in by_scene[q.conversation_id]
            if d not in qrels[qid]
            and _key(bundle, q, d) not in truth
            and (qid, d) not in task.missed
        ]
        doc = rng.choice(pool)
        qrels[qid][doc] = 1
        task.wrong.add((qid, doc))
    rows = ({"id": qid, "text": q.question} for qid, q in ids.items())
    _write_jsonl(directory / "queries.jsonl", rows)
    lines = [f"{q}\t{d}\t{grade}\n" for q, docs in qrels.items() for d, grade in docs.items()]
    (directory / "qrels.tsv").write_text("".join(lines), encoding="utf-8", newline="\n")
    write_trec_run(
        directory / RUN_FILE,
        [RunEntry(query_id=qid, ranking=ranking) for qid, ranking in run.items() if ranking],
        tag=RUN_NAME,
    )
    return task


def _key(bundle: Bundle, query: Query, doc: str) -> tuple[str, str, str]:
    s = bundle.sources[doc]
    return truth_key(query.question, title_of(s), s.text)


def truth_pairs(bundle: Bundle, queries: Iterable[Query]) -> set[tuple[str, str, str]]:
    """The relevant pairs by the bundle's evidence, as :func:`truth_key` keys."""
    return {_key(bundle, q, doc) for q in queries for doc in q.evidence}


@dataclass
class Tree:
    """A tree of tasks (``Dialogue/LoCoMo/single_hop``, ...) and the oracle's truth."""

    root: Path
    tasks: dict[str, TaskFiles]
    truth: set[tuple[str, str, str]]


def locomo_queries(bundle: Bundle, conversation: str, category: str) -> list[Query]:
    return [
        q for q in bundle.queries if q.conversation_id == conversation and q.category == category
    ]


def write_tree(
    root: Path,
    locomo: Bundle,
    longmemeval: Bundle,
    *,
    wrong: dict[str, int] | None = None,
    missed: dict[str, int] | None = None,
    lme_queries: int = 20,
) -> Tree:
    """Three tasks of memory type ``Dialogue``: LoCoMo conv-26 single-hop and
    multi-hop (sharing one corpus, one level up) and the first ``lme_queries``
    LongMemEval single-session-user questions. ``wrong`` / ``missed``: errors to
    write in, by dataset name."""
    wrong, missed = wrong or {}, missed or {}
    lme = [q for q in longmemeval.queries if q.category == "single-session-user"][:lme_queries]
    specs = [
        ("Dialogue/LoCoMo/single_hop", locomo, locomo_queries(locomo, "conv-26", "single-hop")),
        ("Dialogue/LoCoMo/multi_hop", locomo, locomo_queries(locomo, "conv-26", "multi-hop")),
        ("Dialogue/LongMemEval/single_session_user", longmemeval, lme),
    ]
    write_corpus(root / "Dialogue/LoCoMo", locomo, ["conv-26"])
    write_corpus(
        root / "Dialogue/LongMemEval/single_session_user",
        longmemeval,
        sorted({q.conversation_id or "" for q in lme}),
    )
    tasks: dict[str, TaskFiles] = {}
    truth: set[tuple[str, str, str]] = set()
    for i, (name, bundle, queries) in enumerate(specs):
        tasks[name] = write_task(
            root / name,
            name,
            bundle,
            queries,
            wrong=wrong.get(name, 0),
            missed=missed.get(name, 0),
            seed=i,
        )
        truth |= truth_pairs(bundle, queries)
    return Tree(root, tasks, truth)


_BLOCK = re.compile(r"<(query|title|document)>\n(.*?)\n</\1>", re.DOTALL)


def prompt_key(body: dict[str, Any]) -> tuple[str, str, str] | None:
    """The (query, title, document) a rendered qrels prompt shows (last user message)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            blocks = dict(_BLOCK.findall(str(msg.get("content", ""))))
            if "query" in blocks and "document" in blocks:
                return truth_key(blocks["query"], blocks.get("title", ""), blocks["document"])
    return None
