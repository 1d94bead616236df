"""A deterministic extractive parser: each turn -> at most N dated, speaker-resolved facts.

It stands in for a memory system's fact extractor, without a model, so stores
of different densities (``parser-D1``, ``parser-D5``, ``parser-D8``) can be built
offline and compared. For one turn it

1. splits the text at sentence boundaries (``.``, ``!``, ``?``, line breaks) and
   then at clause boundaries (``;``, ``: ``, dashes, and ``, and`` / ``, but`` /
   ``, so`` / ``, because``), dropping a leading connective;
2. drops questions and fragments with fewer than three words or fewer than two
   content words (greetings, fillers);
3. resolves the speaker: first-person pronouns become the speaker's name
   (``I'm`` -> ``Caroline is``, ``my`` -> ``Caroline's``) and second-person ones
   the listener's; relative day words get the session's date in brackets
   (``yesterday`` -> ``yesterday (7 May 2023)``);
4. dates each fact: ``On 8 May 2023, Caroline went to ...``, or
   ``On 8 May 2023, Caroline said: ...`` when the resolved clause does not start
   with the speaker's name; a shared image becomes ``Caroline shared an image: CAPTION``;
5. keeps the ``N`` most informative facts (most content words, then numbers,
   then earliest), in the order they were said.

The same turn always gives the same facts, and the facts kept at a smaller N
are a subset of those kept at a larger N.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from tiap.stopwords import ENGLISH
from tiap.traces.adapter_output import Turn
from tiap.traces.models import Memory

DENSITIES: tuple[int, ...] = (1, 5, 8)

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_CLAUSE = re.compile(
    r"\s*;\s*|:\s+|\s+[-–—]+\s+|,\s+(?=(?:and|but|so|because|though|although)\b)", re.IGNORECASE
)
_LEADING_CONNECTIVE = re.compile(
    r"^(?:and|but|so|because|though|although|also|plus|well|oh|yeah|yes|no|wow|hey|hi)\b[,!]?\s*",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_DIGIT = re.compile(r"\d")

_CHAT_WORDS = """i'm i've i'll i'd you're you've you'll it's that's what's really much also
    yeah oh wow hey hi thanks thank great good awesome cool amazing glad sure lot lots"""
_STOPWORDS = ENGLISH | frozenset(_CHAT_WORDS.split())

# Pronoun (lower-cased, straight apostrophe) -> replacement; {S} speaker, {L} listener.
_PRONOUNS: dict[str, str] = {
    "i'm": "{S} is",
    "i am": "{S} is",
    "i've": "{S} has",
    "i have": "{S} has",
    "i'll": "{S} will",
    "i'd": "{S} would",
    "i don't": "{S} doesn't",
    "i do": "{S} does",
    "i": "{S}",
    "myself": "{S}",
    "my": "{S}'s",
    "mine": "{S}'s",
    "me": "{S}",
    "you're": "{L} is",
    "you are": "{L} is",
    "you've": "{L} has",
    "you have": "{L} has",
    "you'll": "{L} will",
    "you'd": "{L} would",
    "yourself": "{L}",
    "yours": "{L}'s",
    "your": "{L}'s",
    "you": "{L}",
}
# First person only in capital "I" forms; the others in either case at a word start.
_PRONOUN_RE = re.compile(
    r"\b(?:I(?:['’](?:m|ve|ll|d)| am| have| don['’]t| do)?|[Mm]y(?:self)?|[Mm]ine|me"
    r"|[Yy]ou(?:['’](?:re|ve|ll|d)| are| have|rself|rs|r)?)\b"
)

# relative expression -> function of the session date giving the bracketed date
_RELATIVE: dict[str, object] = {
    "yesterday": lambda d: _fmt(d - timedelta(days=1)),
    "today": lambda d: _fmt(d),
    "tonight": lambda d: _fmt(d),
    "tomorrow": lambda d: _fmt(d + timedelta(days=1)),
    "last year": lambda d: str(d.year - 1),
    "this year": lambda d: str(d.year),
    "next year": lambda d: str(d.year + 1),
    "last month": lambda d: _month(d.year, d.month - 1),
    "this month": lambda d: _month(d.year, d.month),
    "next month": lambda d: _month(d.year, d.month + 1),
    "last week": lambda d: f"week of {_fmt(d - timedelta(days=7 + d.weekday()))}",
}
_RELATIVE_RE = re.compile(r"\b(" + "|".join(_RELATIVE) + r")\b", re.IGNORECASE)

# Date formats of the supported benchmarks' session times.
_DATE_FORMATS: tuple[tuple[str, str], ...] = (
    (r"\d{1,2}:\d{2} [ap]m on \d{1,2} \w+, \d{4}", "%I:%M %p on %d %B, %Y"),  # LoCoMo
    (r"\d{4}/\d{2}/\d{2} \(\w+\) \d{2}:\d{2}", "%Y/%m/%d (%a) %H:%M"),  # LongMemEval
    (r"\d{4}-\d{2}-\d{2}.*", "%Y-%m-%d"),
)


def _fmt(d: date) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


def _month(year: int, month: int) -> str:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return date(year, month, 1).strftime("%B %Y")


@lru_cache(maxsize=4096)
def parse_session_date(text: str | None) -> date | None:
    """The calendar date of a session time string in a known format, else None."""
    if not text:
        return None
    for pattern, fmt in _DATE_FORMATS:
        if re.fullmatch(pattern, text.strip(), flags=re.IGNORECASE):
            value = text.strip()[:10] if fmt == "%Y-%m-%d" else text.strip()
            try:
                return datetime.strptime(value, fmt).date()
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class Fact:
    position: int
    weight: tuple[int, int]
    text: str


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2]


def _clauses(text: str) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE.split(text):
        for clause in _CLAUSE.split(sentence):
            clause = _LEADING_CONNECTIVE.sub("", clause.strip()).strip(" ,")
            if clause:
                out.append(clause)
    return out


def _resolve(clause: str, speaker: str, listener: str, day: date | None) -> str:
    def pronoun(m: re.Match[str]) -> str:
        key = m.group(0).lower().replace("’", "'")
        return _PRONOUNS[key].format(S=speaker, L=listener)

    out = _PRONOUN_RE.sub(pronoun, clause)
    if day is not None:
        out = _RELATIVE_RE.sub(
            lambda m: f"{m.group(0)} ({_RELATIVE[m.group(0).lower()](day)})",  # type: ignore[operator]
            out,
        )
    return out


def extract_facts(turn: Turn) -> list[Fact]:
    """Every candidate fact of a turn, in the order said (before the density cut)."""
    day = parse_session_date(turn.date)
    when = f"On {_fmt(day)}, " if day else (f"On {turn.date}, " if turn.date else "")
    facts: list[Fact] = []
    seen: set[str] = set()
    for i, clause in enumerate(_clauses(turn.text)):
        if clause.endswith("?") or len(_WORD.findall(clause)) < 3:
            continue
        content = _content_words(clause)
        if len(content) < 2:
            continue
        body = _resolve(clause, turn.speaker, turn.listener, day).rstrip(" .!")
        if not body.startswith(turn.speaker):
            body = f"{turn.speaker} said: {body}"
        text = f"{when}{body}."
        if text in seen:
            continue
        seen.add(text)
        facts.append(Fact(i, (len(content), int(bool(_DIGIT.search(clause)))), text))
    if turn.caption:
        text = f"{when}{turn.speaker} shared an image: {turn.caption.rstrip(' .')}."
        if text not in seen:
            facts.append(Fact(10_000, (len(_content_words(turn.caption)), 0), text))
    return facts


def select_facts(facts: list[Fact], max_facts: int) -> list[Fact]:
    """The ``max_facts`` most informative facts, in the order said."""
    ranked = sorted(facts, key=lambda f: (-f.weight[0], -f.weight[1], f.position))
    return sorted(ranked[:max_facts], key=lambda f: f.position)


def parser_store_name(max_facts: int) -> str:
    return f"parser-D{max_facts}"


@dataclass
class ParseResult:
    """Derived memories per density, and the turns that gave no fact."""

    memories: dict[int, list[Memory]]
    turns_without_facts: list[str]


def parse_turns(turns: Iterable[Turn], densities: Iterable[int]) -> ParseResult:
    """Derived memories for each density (canonical, linked to the turn's source).

    Memory ids are ``<turn id>#p<max_facts>.<n>`` with ``n`` from 1 in the order said.
    """
    wanted = sorted(set(densities))
    out: dict[int, list[Memory]] = {n: [] for n in wanted}
    empty: list[str] = []
    for turn in turns:
        facts = extract_facts(turn)
        if not facts:
            empty.append(turn.unit_id)
        for n in wanted:
            for j, fact in enumerate(select_facts(facts, n), start=1):
                out[n].append(
                    Memory.model_construct(  # built here from checked parts: skip validation
                        memory_id=f"{turn.unit_id}#p{n}.{j}",
                        text=fact.text,
                        source_ids=[turn.source_id],
                        raw=False,
                        canonical=True,
                        conversation_id=turn.conversation_id,
                        metadata={},
                    )
                )
    return ParseResult(out, empty)
