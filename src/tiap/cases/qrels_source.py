"""Relevance annotations to audit: LMEB/BEIR task directories, trees of them, or a
trace bundle, read into :class:`QrelsTask` objects (one per dataset).

A SOURCE is one of:

- a **task directory** (LMEB/BEIR): ``queries.jsonl`` (``id``, ``text``),
  ``corpus.jsonl`` (``id``, ``title``, ``text``; here or one level up, where LMEB
  keeps it), ``qrels.tsv`` (``query-id <TAB> corpus-id <TAB> grade``, no header),
  optional ``candidates.jsonl`` (``scene_id``, ``candidate_doc_ids``; a query's
  scene, the first two ``_``-parts of its id, becomes its conversation). The
  dataset is named after the directory;
- a **tree** of task directories: every directory below it holding
  ``queries.jsonl`` and ``qrels.tsv`` is a dataset named by its path under the
  tree (``Dialogue/LoCoMo/single_hop``), whose first part is its memory type
  (``Dialogue``);
- a **trace bundle** (``bundle.toml``): its sources are the documents, its queries
  the queries, and each query's evidence its qrels (grade 1), at the source level.

Runs (for sampled negatives) rank documents: a TREC or JSONL run file (for a task,
looked up in its directory, then one level up, then as given), or, for a bundle,
one of its runs by name, whose ranked memories count as the sources they derive
from (each source at its first memory's place).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from tiap.errors import InputError, TiapError
from tiap.io import iter_jsonl
from tiap.traces.bundle import CONFIG_FILE, Bundle, read_bundle
from tiap.traces.lmeb import LmebDoc, LmebQuery, LmebScene, read_qrels, scene_of
from tiap.traces.models import RunEntry
from tiap.traces.trec import TREC_SUFFIXES, read_trec_run

QUERIES = "queries.jsonl"
CORPUS = "corpus.jsonl"
QRELS = "qrels.tsv"
CANDIDATES = "candidates.jsonl"


@dataclass(frozen=True)
class QrelsDoc:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class QrelsQuery:
    query_id: str
    text: str
    answer: str = ""
    category: str | None = None
    scene: str | None = None


@dataclass
class QrelsTask:
    """One dataset's queries, documents and qrels (``query -> doc -> grade``, in file
    order); ``bundle`` is set when the task is a trace bundle."""

    dataset: str
    memory_type: str | None
    path: Path
    queries: list[QrelsQuery]
    docs: dict[str, QrelsDoc]
    qrels: dict[str, dict[str, int]]
    bundle: Bundle | None = field(default=None, repr=False)

    @property
    def qrels_lines(self) -> int:
        return sum(len(g) for g in self.qrels.values())


@dataclass
class QrelsSource:
    """What a SOURCE holds: ``kind`` is ``task``, ``tree`` or ``bundle``."""

    path: Path
    kind: str
    tasks: list[QrelsTask]


M = TypeVar("M", bound=BaseModel)


def _unique(path: Path, model: type[M], key: str, what: str) -> Iterator[M]:
    seen: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path, model):
        value = getattr(rec, key)
        if value in seen:
            first = seen[value]
            raise InputError(path, f"duplicate {what} '{value}' (first at line {first})", lineno)
        seen[value] = lineno
        yield rec


def _near(directory: Path, name: str) -> Path | None:
    """``name`` in ``directory``, else one level up (where LMEB keeps shared files)."""
    for d in (directory, directory.parent):
        if (d / name).is_file():
            return d / name
    return None


class _Corpora:
    """Corpus files read once, however many tasks share them."""

    def __init__(self) -> None:
        self._docs: dict[Path, dict[str, QrelsDoc]] = {}

    def docs(self, path: Path) -> dict[str, QrelsDoc]:
        key = path.resolve()
        if key not in self._docs:
            docs: dict[str, QrelsDoc] = {}
            for rec in _unique(path, LmebDoc, "id", "corpus id"):
                docs[rec.id] = QrelsDoc(rec.id, (rec.title or "").strip(), rec.text)
            self._docs[key] = docs
        return self._docs[key]


def read_task(
    directory: Path,
    dataset: str,
    memory_type: str | None = None,
    corpora: _Corpora | None = None,
) -> QrelsTask:
    """One LMEB/BEIR task directory (see the module doc); bad lines raise
    :class:`~tiap.errors.InputError` naming the file and line."""
    queries_path = directory / QUERIES
    if not queries_path.is_file():
        raise InputError(queries_path, "file not found (every task directory needs one)")
    corpus = _near(directory, CORPUS)
    if corpus is None:
        raise InputError(directory / CORPUS, "file not found (looked here and one level up)")
    queries = list(_unique(queries_path, LmebQuery, "id", "query id"))
    docs = (corpora or _Corpora()).docs(corpus)
    qrels = read_qrels(directory / QRELS, {q.id for q in queries}, set(docs))
    scenes: set[str] = set()
    candidates = _near(directory, CANDIDATES)
    if candidates is not None:
        for _, rec in iter_jsonl(candidates, LmebScene):
            scenes.add(rec.scene_id)
    out = []
    for q in queries:
        scene = scene_of(q.id)
        out.append(QrelsQuery(q.id, q.text, scene=scene if scene in scenes else None))
    return QrelsTask(dataset, memory_type, directory, out, docs, qrels)


def _title(speaker: str | None, time: str | None) -> str:
    return " · ".join(x for x in (speaker, time) if x)


def bundle_task(bundle: Bundle, path: Path) -> QrelsTask:
    """A trace bundle as one dataset: sources as documents, evidence as grade 1."""
    docs = {
        sid: QrelsDoc(sid, _title(s.speaker, s.time), s.text) for sid, s in bundle.sources.items()
    }
    queries = [
        QrelsQuery(q.query_id, q.question, q.answer, q.category, q.conversation_id)
        for q in bundle.queries
    ]
    qrels = {q.query_id: dict.fromkeys(q.evidence, 1) for q in bundle.queries}
    return QrelsTask(bundle.config.dataset, None, path, queries, docs, qrels, bundle)


def _task_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` holding a qrels.tsv, in path order."""
    found = []
    for qrels in sorted(root.rglob(QRELS), key=lambda p: p.relative_to(root).parts):
        rel = qrels.parent.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        found.append(qrels.parent)
    return found


def read_source(path: str | Path) -> QrelsSource:
    """A SOURCE (see the module doc) with its datasets in order."""
    root = Path(path)
    if not root.exists():
        raise TiapError(
            f"{root}: not found (give an LMEB/BEIR task directory, a tree of them, "
            "or a trace bundle)"
        )
    if not root.is_dir():
        raise TiapError(
            f"{root}: not a directory (give an LMEB/BEIR task directory, a tree of "
            "them, or a trace bundle)"
        )
    if (root / CONFIG_FILE).is_file():
        return QrelsSource(root, "bundle", [bundle_task(read_bundle(root), root)])
    if (root / QRELS).is_file() or (root / QUERIES).is_file():
        return QrelsSource(root, "task", [read_task(root, root.resolve().name)])
    corpora = _Corpora()
    tasks = []
    for d in _task_dirs(root):
        rel = d.relative_to(root)
        memory_type = rel.parts[0] if len(rel.parts) > 1 else None
        tasks.append(read_task(d, rel.as_posix(), memory_type, corpora))
    if not tasks:
        raise TiapError(
            f"{root}: no task directory (queries.jsonl, corpus.jsonl, qrels.tsv) in it or "
            f"below it, and no {CONFIG_FILE}: not an LMEB/BEIR source or a trace bundle"
        )
    return QrelsSource(root, "tree", tasks)


# ----------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class TaskRun:
    """A run's rankings of one task's documents: ``query_id -> doc ids``, best first,
    each document once (its first place)."""

    name: str
    path: Path | None
    rankings: dict[str, list[str]]


def _run_file(task: QrelsTask, run: str) -> Path | None:
    given = Path(run)
    for candidate in (task.path / given, task.path.parent / given, given):
        if candidate.is_file():
            return candidate
    return None


def _read_entries(path: Path) -> list[tuple[int | None, RunEntry]]:
    if path.suffix in TREC_SUFFIXES:
        return [(None, e) for e in read_trec_run(path)]
    return list(iter_jsonl(path, RunEntry))


def _bundle_rankings(bundle: Bundle, run: str) -> dict[str, list[str]]:
    memories = bundle.memories(bundle.run_store(run))
    out: dict[str, list[str]] = {}
    for qid, ranking in bundle.rankings(run).items():
        sources: dict[str, None] = {}
        for mid in ranking:
            for sid in memories[mid].source_ids:
                sources.setdefault(sid, None)
        out[qid] = list(sources)
    return out


def task_run(task: QrelsTask, run: str) -> TaskRun:
    """The rankings of ``run`` for ``task`` (see the module doc); queries the run does
    not rank are absent, queries of other tasks in a shared run file are left out, a
    document the task's corpus does not hold is an error naming the file."""
    if task.bundle is not None and run in task.bundle.config.runs:
        return TaskRun(run, None, _bundle_rankings(task.bundle, run))
    path = _run_file(task, run)
    if path is None:
        known = ""
        if task.bundle is not None:
            known = f" (the bundle's runs: {', '.join(task.bundle.config.runs) or 'none'})"
        raise TiapError(
            f"--run {run}: no run of that name and no such file (looked in {task.path}, "
            f"{task.path.parent} and the current directory){known}"
        )
    wanted = {q.query_id for q in task.queries}
    rankings: dict[str, list[str]] = {}
    for line, entry in _read_entries(path):
        if entry.query_id not in wanted:
            continue
        for did in entry.ranking:
            if did not in task.docs:
                raise InputError(
                    path,
                    f"query '{entry.query_id}' ranks '{did}', which is not a document of "
                    f"{task.dataset}",
                    line,
                )
        rankings[entry.query_id] = list(dict.fromkeys(entry.ranking))
    return TaskRun(path.stem, path, rankings)
