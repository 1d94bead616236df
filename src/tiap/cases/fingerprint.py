"""The fingerprint of a bundle version: what defines its cases, hashed.

A workspace's cases come from a bundle (contested credits) or a qrels source
(drawn pairs). When that input changes, the cases it gives change: a memory's
text, a query's evidence, a ranking within k. The *fingerprint* tells the
versions apart, and the *content key* of a case tells whether a stored case is
the one a new version gives.

**Content key** of a case: canonical JSON (sorted keys, no whitespace, non-ASCII
kept) of the fields in :data:`CONTENT_FIELDS`, i.e. everything a case shows and
is sorted and sampled by: its id and kind, dataset, run, store, query (id, index
in ``queries.jsonl``, question, answer, category, conversation), the evidence
(each source's id, text, speaker, time, in order), the credited memory (id,
text, the sources it derives from), its rank and rank bucket, k, the metadata
(retriever, target sizes, first rank of a missed target). A qrels pair's key is
what its source says about it: the same fields and its title, grade and memory
type, without those that depend on the draw that stored it
(:data:`QRELS_DRAW_FIELDS`: the run and rank it was drawn at, its stratum, its
origin, and the metadata, which holds the run's name and the path the source was
read from), so one pair drawn by two draws, or read from another directory, is
one pair. An answer case's key also holds the run's answer (``hypothesis``): a run
that answers a query differently gives another case version.

**Fingerprint** (sha256, hex): of a header, the canonical JSON of
``{"format": FORMAT, "kind": ..., **definition}`` (for contested credits the
definition is the dataset, k and the contested rule; for qrels pairs the draw's
options ``per_dataset``, ``seed`` and ``negatives``; for a run's answers the
dataset and the run), then a newline and the
sha256 digest of each case's content key, digests sorted. So the same cases give
the same fingerprint whatever the order of the bundle's files, its JSON
whitespace or key order, the order of lines in a store, a run or
``sources.jsonl``, or the order of runs in ``bundle.toml``; reordering
``queries.jsonl`` is a change (a case records its query's position, which orders
cases and subsets). Only what the extraction already computed is hashed: the
bundle is not read again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from tiap.cases.models import Case
from tiap.cases.vocab import ANSWER, QRELS, CaseKind

FORMAT = "tiap.cases.version/1"

#: The case fields that define a case (its content key), in the order documented.
CONTENT_FIELDS: tuple[str, ...] = (
    "case_id",
    "kind",
    "dataset",
    "run",
    "store",
    "query_id",
    "query_index",
    "question",
    "answer",
    "category",
    "conversation_id",
    "evidence",
    "memory_id",
    "memory_text",
    "memory_source_ids",
    "rank",
    "rank_bucket",
    "k",
    "metadata",
    "title",
    "grade",
    "pair",
    "memory_type",
    "hypothesis",
)

#: Fields only answer cases have: in the content key of an answer case only, so the
#: keys (and fingerprints) of the other kinds are what they were before answers.
ANSWER_FIELDS: tuple[str, ...] = ("hypothesis",)

#: Fields of a qrels pair that the draw sets, not the source: not in its content key.
QRELS_DRAW_FIELDS: tuple[str, ...] = ("run", "rank", "rank_bucket", "pair", "metadata")

#: How many hex digits a fingerprint is shown with in messages and reports.
SHORT = 12


def canonical(value: Any) -> str:
    """JSON with sorted keys and no whitespace (the serialisation that is hashed)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content(case: Case) -> dict[str, Any]:
    """The fields of :data:`CONTENT_FIELDS` as JSON data."""
    fields = set(CONTENT_FIELDS)
    if case.kind == QRELS:
        fields -= set(QRELS_DRAW_FIELDS)
    if case.kind != ANSWER:
        fields -= set(ANSWER_FIELDS)
    return case.model_dump(mode="json", include=fields)


def content_key(case: Case) -> str:
    """The canonical JSON of a case's content: equal keys, the same case."""
    return canonical(content(case))


def fingerprint(kind: CaseKind, definition: Mapping[str, Any], cases: Iterable[Case]) -> str:
    """The fingerprint of the version that gives ``cases`` (see the module doc)."""
    h = hashlib.sha256(canonical({"format": FORMAT, "kind": kind, **definition}).encode())
    for digest in sorted(hashlib.sha256(content_key(c).encode()).digest() for c in cases):
        h.update(b"\n")
        h.update(digest)
    return h.hexdigest()


def short(value: str | None) -> str:
    """A fingerprint as messages show it (``none recorded`` for ``None``)."""
    return value[:SHORT] if value else "none recorded"
