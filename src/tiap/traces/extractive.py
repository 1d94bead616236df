"""Extractive answers: an answer for each query of a run from its top memories, no LLM.

The method (:func:`extract_answer`), deterministic:

1. the query's ranking, each memory at its first rank, cut at ``top`` memories;
2. each memory's text split into sentences: at line breaks and after ``.``, ``!``
   or ``?`` followed by white space; blank pieces dropped;
3. each sentence scored by its *overlap* with the question: the number of distinct
   question tokens it contains, tokens being LoCoMo's normalised, Porter-stemmed
   words (:mod:`tiap.traces.answer_scoring`) other than English stopwords
   (:data:`tiap.stopwords.ENGLISH`);
4. the answer is the sentence with the highest overlap; a tie goes to the
   better-ranked memory, then to the earlier sentence in it. When no sentence
   shares a token with the question, the answer is the first sentence of the top
   memory; an empty ranking gives the empty answer.

:func:`extract_answers` applies it to a run and returns the run's entries with
their ``answer`` set; :func:`write_answers` writes them into the bundle's run file
(JSON Lines) in place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tiap.errors import InputError, TiapError
from tiap.io import write_jsonl
from tiap.limits import check_int
from tiap.stopwords import ENGLISH
from tiap.traces.answer_record import write_record
from tiap.traces.answer_scoring import stemmed_tokens
from tiap.traces.bundle import RUNS_DIR, Bundle
from tiap.traces.models import Memory, RunEntry
from tiap.traces.trec import TREC_SUFFIXES

#: memories of a ranking the answer is drawn from, by default
DEFAULT_TOP = 5
#: the most memories the answer may be drawn from
MAX_TOP = 1000
METHOD = (
    "extractive: of the top {top} memories of the ranking, the sentence sharing the most "
    "distinct question tokens (LoCoMo-normalised, Porter-stemmed, stopwords left out); ties "
    "to the better-ranked memory, then the earlier sentence; no overlap: the top memory's "
    "first sentence"
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[\r\n]+")


@lru_cache(maxsize=1)
def _stop() -> frozenset[str]:
    """The stopwords, also as stemmed (made on first use: stemming imports nltk, which
    a module that only imports this one must not pay for)."""
    return frozenset(stemmed_tokens(" ".join(sorted(ENGLISH)))) | ENGLISH


def sentences(text: str) -> list[str]:
    """A memory's text as sentences (see the module doc, step 2)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def content_tokens(text: str) -> frozenset[str]:
    """The distinct normalised, stemmed tokens of ``text`` that are not stopwords."""
    stop = _stop()
    return frozenset(t for t in stemmed_tokens(text) if t not in stop)


def extract_answer(question: str, texts: Sequence[str]) -> str:
    """The extractive answer to ``question`` from memory ``texts`` (best first)."""
    wanted = content_tokens(question)
    best, best_overlap = "", 0
    for text in texts:
        for sentence in sentences(text):
            if not best:
                best = sentence  # the top memory's first sentence, unless beaten
            overlap = len(wanted & content_tokens(sentence))
            if overlap > best_overlap:  # strictly more: ties keep the earlier one
                best, best_overlap = sentence, overlap
    return best


def top_memories(ranking: Sequence[str], memories: Mapping[str, Memory], top: int) -> list[Memory]:
    """The first ``top`` distinct memories of ``ranking``, best first (the extractive
    answer reads their texts, the reader's prompt their texts, speakers and times)."""
    seen: set[str] = set()
    out: list[Memory] = []
    for mid in ranking:
        if mid in seen:
            continue
        seen.add(mid)
        out.append(memories[mid])
        if len(out) == top:
            break
    return out


@dataclass(frozen=True)
class Extracted:
    """A run's entries with extractive answers, and how many were written."""

    run: str
    entries: list[RunEntry]
    n_answers: int
    n_empty: int
    top: int

    @property
    def method(self) -> str:
        return METHOD.format(top=self.top)


def run_file(bundle: Bundle, run: str) -> Path:
    """The run's file, which must be JSON Lines inside a bundle read from disk."""
    if bundle.root is None:
        raise TiapError("the bundle was not read from a directory: there is no run file")
    rc = bundle.config.runs[run]
    path = bundle.root / (rc.file or f"{RUNS_DIR}/{run}.jsonl")
    if rc.file is None and not path.exists():
        trec = [bundle.root / RUNS_DIR / f"{run}{s}" for s in TREC_SUFFIXES]
        path = next((p for p in trec if p.exists()), path)
    if path.suffix in TREC_SUFFIXES:
        raise InputError(
            path,
            f"run '{run}' is a TREC run, which cannot carry answers; write the bundle's runs "
            "as JSON Lines first",
        )
    return path


def answerable_entries(bundle: Bundle, run: str, *, replace: bool = False) -> list[RunEntry]:
    """The entries of ``run`` that get answers: an unknown run is refused, and so is
    one whose entries already carry answers (e.g. a system's own, imported) unless
    ``replace``."""
    if run not in bundle.config.runs:
        known = ", ".join(sorted(bundle.config.runs)) or "none"
        raise TiapError(f"unknown run '{run}' (runs in this bundle: {known})")
    entries = bundle.runs[run]
    given = sum(e.answer is not None for e in entries)
    if given and not replace:
        raise TiapError(f"run '{run}' already carries {given:,} answers; --replace overwrites them")
    return entries


def extract_answers(
    bundle: Bundle, run: str, *, top: int = DEFAULT_TOP, replace: bool = False
) -> Extracted:
    """Extractive answers for every query ``run`` ranks (the bundle is not modified).

    A run whose entries already carry answers (e.g. a system's own, imported) is
    refused unless ``replace``."""
    top = check_int("--top", top, minimum=1, maximum=MAX_TOP)
    entries = answerable_entries(bundle, run, replace=replace)
    memories = bundle.memories(bundle.run_store(run))
    questions = bundle.query_by_id
    out: list[RunEntry] = []
    for e in entries:
        texts = [m.text for m in top_memories(e.ranking, memories, top)]
        answer = extract_answer(questions[e.query_id].question, texts)
        out.append(e.model_copy(update={"answer": answer}))
    empty = sum(not e.answer for e in out)
    return Extracted(run=run, entries=out, n_answers=len(out), n_empty=empty, top=top)


def write_answers(bundle: Bundle, extracted: Extracted, *, method: str | None = None) -> Path:
    """Write the run's entries with their answers over its run file (a whole new file
    moved into place, so a write cut short leaves the old one), then the record of how
    they were made (:mod:`tiap.traces.answer_record`: ``method``, by default the
    extractive method's)."""
    path = run_file(bundle, extracted.run)
    temporary = path.with_name(f".{path.name}.answers-tmp")
    write_jsonl(temporary, extracted.entries)
    os.replace(temporary, path)
    if bundle.root is None:  # (run_file refuses it first)
        raise TiapError("the bundle was not read from a directory: there is no run file")
    n = sum(e.answer is not None for e in extracted.entries)
    write_record(bundle.root, extracted.run, method or extracted.method, n, path)
    return path
