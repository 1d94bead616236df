"""Deterministic baseline judges: fixed lexical rules, not language models.

Each baseline reads the fenced blocks of a rendered prompt (``<question>``,
``<answer>``, ``<evidence>``, ``<memory>``), computes a score in [0, 1] and maps
it onto the rubric's labels, which are ordered from most to least supportive
(``supports`` > ``partial`` > ``does_not_support``; ``relevant`` >
``not_relevant``). For three labels a score at or above ``high`` gets the first
label, at or above ``low`` the second, else the third; with two labels ``low``
is the cut; with more, the cuts are spread evenly between ``high`` and ``low``.

A baseline that lacks the blocks it reads declines ("I cannot judge ..."),
which the parser records as an abstention, never as a guessed label.

A qrels prompt (a ``<document>`` block: the ``qrels-relevance`` rubric shows
``<query>``, ``<title>`` and ``<document>``, never the qrels grade) is judged by
each baseline's query-document analogue, the document being its title and text:
query-word coverage (answer containment), content-word Dice (evidence overlap),
a stricter query-word coverage (question/answer overlap), the query's numbers,
dates and names (key facts) and character-trigram Dice (character similarity),
each with its own cut. They are weak lexical relevance signals, as the
contested-credit rules are weak support signals.

An answer prompt (a ``<response>`` block: the ``answer-correctness`` rubric) is
judged by each baseline's answer rule (:mod:`tiap.judge.answer_baselines`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tiap.stopwords import ENGLISH

#: The version of what tiap's in-process judges answer (these rules and cuts, the label
#: order the offline route reads, the local LLM's scoring): in their requests' settings
#: (:func:`tiap.judge.request.judge_settings`), so an answer stored by an earlier version
#: is not taken from the cache for a later one. Raise it with any change to what they
#: answer. 2: a built-in rubric's labels in their declared order. (The answer rules of
#: :mod:`tiap.judge.answer_baselines` answer requests no earlier version was sent: an
#: ``answer-correctness`` prompt is new, so they did not raise it.)
OFFLINE_VERSION = 2

_BLOCK = re.compile(r"<([a-z_]+)>\n(.*?)\n</\1>", re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")
_RAW_WORD = re.compile(r"[A-Za-z0-9]+")
_EVIDENCE_HEAD = re.compile(r"^\[[^\]\n]*\]\s*", re.MULTILINE)
_MONTH_WORDS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday"
)
_MONTHS = frozenset(_MONTH_WORDS.split())
_CHAT_WORDS = """also yes yeah oh really like get got go going went one thing things lot much
    well know think thats im ive dont didnt s t ll re ve d m"""
STOPWORDS = ENGLISH | frozenset(_CHAT_WORDS.split())


def blocks(text: str) -> dict[str, str]:
    """The fenced blocks of a rendered prompt (first occurrence of each name)."""
    out: dict[str, str] = {}
    for name, body in _BLOCK.findall(text):
        out.setdefault(name, body.replace(f"<\\/{name}", f"</{name}"))
    return out


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased, lightly stemmed words that are not stopwords."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def key_facts(text: str) -> set[str]:
    """Numbers, dates (months, weekdays) and capitalised names in ``text``."""
    facts = set()
    for w in _RAW_WORD.findall(text):
        low = w.lower()
        if w.isdigit() or low in _MONTHS or (w[0].isupper() and low not in STOPWORDS):
            facts.add(stem(low))
    return facts


def evidence_text(evidence: str) -> str:
    """Evidence turns without their ``[id | speaker | time]`` heads."""
    return _EVIDENCE_HEAD.sub("", evidence)


def trigrams(text: str) -> set[str]:
    norm = " ".join(_WORD.findall(text.lower()))
    return {norm[i : i + 3] for i in range(max(0, len(norm) - 2))}


@dataclass(frozen=True)
class Verdict:
    """A score in [0, 1] and the words that explain it."""

    score: float
    why: str


class Decline(Exception):
    """The baseline cannot judge this prompt (a block it needs is missing or empty)."""


def _need(b: Mapping[str, str], *names: str) -> list[str]:
    missing = [n for n in names if not b.get(n, "").strip()]
    if missing:
        raise Decline(f"the prompt has no <{missing[0]}> block")
    return [b[n] for n in names]


def _share(part: set[str], whole: set[str], what: str) -> Verdict:
    if not whole:
        raise Decline(f"the {what} has no content words")
    hit = len(part & whole)
    return Verdict(hit / len(whole), f"{hit} of {len(whole)} {what} words in the memory")


def answer_containment(b: Mapping[str, str]) -> Verdict:
    answer, memory = _need(b, "answer", "memory")
    return _share(content_words(memory), content_words(answer), "answer content")


def evidence_overlap(b: Mapping[str, str]) -> Verdict:
    evidence, memory = _need(b, "evidence", "memory")
    ev, mem = content_words(evidence_text(evidence)), content_words(memory)
    if not ev or not mem:
        raise Decline("the evidence or the memory has no content words")
    hit = len(ev & mem)
    smaller = min(len(ev), len(mem))
    return Verdict(hit / smaller, f"{hit} shared content words (overlap coefficient)")


def qa_overlap(b: Mapping[str, str]) -> Verdict:
    question, answer, memory = _need(b, "question", "answer", "memory")
    mem = content_words(memory)
    q, a = content_words(question), content_words(answer)
    if not q and not a:
        raise Decline("question and answer have no content words")
    parts = [len(x & mem) / len(x) for x in (q, a) if x]
    score = sum(parts) / len(parts)
    return Verdict(score, f"question/answer words covered: {score:.2f}")


def key_facts_match(b: Mapping[str, str]) -> Verdict:
    answer, memory = _need(b, "answer", "memory")
    facts = key_facts(answer)
    mem = content_words(memory) | {stem(w) for w in _WORD.findall(memory.lower())}
    if not facts:
        return _share(mem, content_words(answer), "answer content")
    hit = len(facts & mem)
    return Verdict(
        hit / len(facts), f"{hit} of {len(facts)} answer numbers/dates/names in the memory"
    )


def char_similarity(b: Mapping[str, str]) -> Verdict:
    evidence, memory = _need(b, "evidence", "memory")
    ev, mem = trigrams(evidence_text(evidence)), trigrams(memory)
    if not ev or not mem:
        raise Decline("the evidence or the memory is too short")
    dice = 2 * len(ev & mem) / (len(ev) + len(mem))
    return Verdict(dice, f"character-trigram Dice similarity {dice:.2f}")


def _query_document(b: Mapping[str, str]) -> tuple[str, str]:
    """The query and the document (its title and text) of a qrels prompt."""
    query, document = _need(b, "query", "document")
    title = b.get("title", "").strip()
    return query, f"{title}\n{document}" if title else document


def query_coverage(b: Mapping[str, str]) -> Verdict:
    query, document = _query_document(b)
    q = content_words(query)
    if not q:
        raise Decline("the query has no content words")
    hit = len(q & content_words(document))
    return Verdict(hit / len(q), f"{hit} of {len(q)} query content words in the document")


def query_document_dice(b: Mapping[str, str]) -> Verdict:
    query, document = _query_document(b)
    q, d = content_words(query), content_words(document)
    if not q or not d:
        raise Decline("the query or the document has no content words")
    dice = 2 * len(q & d) / (len(q) + len(d))
    return Verdict(dice, f"content-word Dice similarity of query and document {dice:.2f}")


def query_key_facts(b: Mapping[str, str]) -> Verdict:
    query, document = _query_document(b)
    facts = key_facts(query)
    if not facts:
        return query_coverage(b)
    doc = content_words(document) | {stem(w) for w in _WORD.findall(document.lower())}
    hit = len(facts & doc)
    return Verdict(
        hit / len(facts), f"{hit} of {len(facts)} query numbers/dates/names in the document"
    )


def query_char_similarity(b: Mapping[str, str]) -> Verdict:
    query, document = _query_document(b)
    q, d = trigrams(query), trigrams(document)
    if not q or not d:
        raise Decline("the query or the document is too short")
    dice = 2 * len(q & d) / (len(q) + len(d))
    return Verdict(dice, f"character-trigram Dice similarity {dice:.2f}")


@dataclass(frozen=True)
class QrelsRule:
    """A baseline's rule for qrels prompts and its cut (relevant at or above it)."""

    rule: Callable[[Mapping[str, str]], Verdict]
    cut: float


@dataclass(frozen=True)
class Baseline:
    name: str
    rule: Callable[[Mapping[str, str]], Verdict]
    high: float
    low: float
    description: str
    qrels: QrelsRule | None = None


BASELINES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline(
            "answer-containment",
            answer_containment,
            0.999,
            0.3,
            "share of the gold answer's content words found in the memory",
            QrelsRule(query_coverage, 0.3),
        ),
        Baseline(
            "evidence-overlap",
            evidence_overlap,
            0.6,
            0.3,
            "content-word overlap coefficient of evidence and memory",
            QrelsRule(query_document_dice, 0.15),
        ),
        Baseline(
            "qa-overlap",
            qa_overlap,
            0.6,
            0.3,
            "mean share of question and answer content words in the memory",
            QrelsRule(query_coverage, 0.4),
        ),
        Baseline(
            "key-facts",
            key_facts_match,
            0.999,
            0.5,
            "share of the answer's numbers, dates and names found in the memory",
            QrelsRule(query_key_facts, 0.5),
        ),
        Baseline(
            "char-similarity",
            char_similarity,
            0.5,
            0.25,
            "character-trigram Dice similarity of memory and evidence",
            QrelsRule(query_char_similarity, 0.15),
        ),
    )
}


def cuts(n_labels: int, high: float, low: float) -> list[float]:
    """Descending score cuts between ``n_labels`` ordered labels."""
    if n_labels == 2:
        return [low]
    step = (high - low) / (n_labels - 2)
    return [high - i * step for i in range(n_labels - 1)]


def label_for(score: float, labels: list[str], high: float, low: float) -> str:
    for label, cut in zip(labels, cuts(len(labels), high, low), strict=False):
        if score >= cut:
            return label
    return labels[-1]


def judge(name: str, prompt_text: str, labels: list[str]) -> tuple[str | None, str]:
    """(label, rationale) of baseline ``name`` on a rendered prompt; label None = declined.
    A qrels prompt (a ``<document>`` block) is judged by the baseline's qrels rule."""
    return judge_blocks(name, blocks(prompt_text), labels)


def judge_blocks(name: str, b: Mapping[str, str], labels: list[str]) -> tuple[str | None, str]:
    """:func:`judge` on a prompt's fenced blocks (:func:`blocks`), parsed once by a caller
    that looked at them first."""
    baseline = BASELINES[name]
    qrels = baseline.qrels if "document" in b else None
    try:
        verdict = (qrels.rule if qrels is not None else baseline.rule)(b)
    except Decline as exc:
        return None, str(exc)
    if qrels is not None:
        label = label_for(verdict.score, labels, qrels.cut, qrels.cut)
    else:
        label = label_for(verdict.score, labels, baseline.high, baseline.low)
    return label, f"baseline {name} (not an LLM): {verdict.why}; score {verdict.score:.2f}"
