"""Find the words a rater should look for in a credited memory.

A word of the memory is highlighted when it also occurs in the gold answer
(strongest cue) or in the gold source evidence. Words are compared after a
light normalisation (lower case, possessive ``'s`` and a plural ``s``
removed) and common function words are ignored, so the highlight shows
content overlap, not "the" and "and".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.text import Text

from tiap.stopwords import ENGLISH
from tiap.text import inert

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

_CHAT_WORDS = """also yes yeah oh ok okay really like get got go going one two thing things
    much many well"""
STOPWORDS = ENGLISH | frozenset(_CHAT_WORDS.split())

ANSWER_STYLE = "bold black on yellow"
EVIDENCE_STYLE = "bold underline cyan"


def normalise(word: str) -> str:
    """Lower case, without a possessive ``'s`` or a plural ``s`` (``dogs`` -> ``dog``)."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


def content_words(text: str) -> frozenset[str]:
    """Normalised words of ``text`` that carry content (numbers always do)."""
    out: set[str] = set()
    for match in WORD.finditer(text):
        raw = match.group()
        if raw.lower() in STOPWORDS:
            continue
        word = normalise(raw)
        if word.isdigit() or len(word) >= 3:
            out.add(word)
    return frozenset(out)


@dataclass(frozen=True)
class Cues:
    """The words to look for: from the gold answer, and from the evidence."""

    answer: frozenset[str]
    evidence: frozenset[str]

    @classmethod
    def from_texts(cls, answer: str, evidence: str) -> Cues:
        answer_words = content_words(answer)
        return cls(answer=answer_words, evidence=content_words(evidence) - answer_words)


def spans(text: str, cues: Cues) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every cue word in ``text``; kind is answer|evidence."""
    out: list[tuple[int, int, str]] = []
    for match in WORD.finditer(text):
        raw = match.group()
        if raw.lower() in STOPWORDS:
            continue
        word = normalise(raw)
        if word in cues.answer:
            out.append((match.start(), match.end(), "answer"))
        elif word in cues.evidence:
            out.append((match.start(), match.end(), "evidence"))
    return out


_STYLES = {"answer": ANSWER_STYLE, "evidence": EVIDENCE_STYLE}


def highlighted(text: str, cues: Cues, *, evidence: bool = True) -> Text:
    """``text`` as rich text, made :func:`~tiap.text.inert` (controls shown as
    placeholders), with the cue words styled (evidence words optional). The words
    are found in the text as stored, so placeholders never split or join words."""
    out = Text()
    end = 0
    for start, stop, kind in spans(text, cues):
        if kind == "evidence" and not evidence:
            continue
        out.append(inert(text[end:start]))
        out.append(inert(text[start:stop]), style=_STYLES[kind])
        end = stop
    out.append(inert(text[end:]))
    return out
