"""Answer F1 and exact match as LoCoMo's evaluation computes them.

LoCoMo's ``task_eval/evaluation.py`` (Maharana et al., 2024):

- **normalisation** (:func:`normalize_answer`): commas deleted, lower case,
  ASCII punctuation removed, the words ``a``, ``an``, ``the`` and ``and`` removed,
  whitespace collapsed;
- **token F1** (:func:`token_f1`): both texts normalised, split at whitespace, each
  token stemmed with NLTK's Porter stemmer; F1 of the multiset overlap (0 when
  nothing is shared, so an empty answer scores 0);
- **exact match** (:func:`exact_match`): the normalised texts have the same *set* of
  tokens (LoCoMo's ``exact_match_score``, unstemmed);
- **per category** (:func:`locomo_f1`, LoCoMo's ``eval_question_answering``): category
  1 (multi-hop) splits both texts at commas and averages, over the gold parts, the
  best F1 of any predicted part; category 3 keeps the gold answer up to its first
  ``;``; category 5 (adversarial) scores 1 when the prediction says ``no information
  available`` or ``not mentioned`` (any case), else 0; the others are token F1.

A bundle's queries carry their LoCoMo category code in ``metadata.category_code``;
:func:`answer_scores` applies the category rules to those and token F1 to every
other query (LongMemEval, BEAM, imports).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = [
    "ADVERSARIAL_PHRASES",
    "answer_scores",
    "exact_match",
    "locomo_f1",
    "normalize_answer",
    "token_f1",
]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
#: what an answer to a LoCoMo adversarial (category 5) question must say to score 1
ADVERSARIAL_PHRASES = ("no information available", "not mentioned")
MULTI_HOP, OPEN_DOMAIN, ADVERSARIAL = 1, 3, 5


def normalize_answer(text: str) -> str:
    """LoCoMo's ``normalize_answer`` (see the module doc)."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))


def stemmed_tokens(text: str) -> list[str]:
    """The normalised text's tokens, each Porter-stemmed."""
    return [_stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1_score``: token F1 of the stemmed, normalised texts."""
    predicted, expected = stemmed_tokens(prediction), stemmed_tokens(gold)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> bool:
    """LoCoMo's ``exact_match_score``: the same set of normalised tokens."""
    return set(normalize_answer(prediction).split()) == set(normalize_answer(gold).split())


def _multi_f1(prediction: str, gold: str) -> float:
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predictions) for g in golds) / len(golds)


def _says_no_information(prediction: str) -> bool:
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in ADVERSARIAL_PHRASES)


def locomo_f1(prediction: str, gold: str, category: int | None) -> tuple[float, bool]:
    """(F1, exact match) of one answer under LoCoMo's rule for ``category`` (``None``:
    plain token F1). Category 5's exact match is its 0/1 score."""
    if category == ADVERSARIAL:
        hit = _says_no_information(prediction)
        return (1.0 if hit else 0.0), hit
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    f1 = _multi_f1(prediction, gold) if category == MULTI_HOP else token_f1(prediction, gold)
    return f1, exact_match(prediction, gold)


def category_code(metadata: Mapping[str, Any]) -> int | None:
    """A query's LoCoMo category code (``metadata.category_code``), or ``None``."""
    code = metadata.get("category_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def answer_scores(prediction: str, gold: str, metadata: Mapping[str, Any]) -> tuple[float, bool]:
    """(F1, exact match) of a query's answer: LoCoMo's category rules when the query
    carries a LoCoMo category code, else token F1 and exact match."""
    return locomo_f1(prediction, gold, category_code(metadata))
