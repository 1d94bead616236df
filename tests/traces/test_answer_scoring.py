"""Answer F1 and exact match as LoCoMo's evaluation computes them, against a table
worked out by hand."""

from __future__ import annotations

import pytest

from tiap.traces.answer_scoring import (
    answer_scores,
    exact_match,
    locomo_f1,
    normalize_answer,
    stemmed_tokens,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        # lower case, punctuation gone, a/an/the/and removed, whitespace collapsed
        ("The Cat, and a Dog!", "cat dog"),
        ("7 May, 2023", "7 may 2023"),
        ("  An   apple-pie. ", "applepie"),
        ("Thea and Andy", "thea andy"),  # whole words only
        ("", ""),
    ],
)
def test_normalisation(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


def test_tokens_are_porter_stemmed() -> None:
    assert stemmed_tokens("The painting of sunrises") == ["paint", "of", "sunris"]


# prediction, gold, F1 (worked by hand), exact match
TABLE = [
    # identical after normalisation: P = R = 1
    ("The 7 May 2023.", "7 May 2023", 1.0, True),
    # pred {caroline, went, 7, may}: 2 of 4 shared with gold {7, may, 2023} (2 of 3)
    # P = 2/4, R = 2/3, F1 = 2·(1/2)(2/3)/(1/2 + 2/3) = (2/3)/(7/6) = 4/7
    ("Caroline went 7 May", "7 May 2023", 4 / 7, False),
    # stems match: "painted" ~ "painting" -> "paint"; pred {she, paint} vs gold {paint}
    # P = 1/2, R = 1, F1 = 2/3
    ("She painted", "painting", 2 / 3, False),
    # no shared token
    ("yesterday", "2022", 0.0, False),
    # F1 counts a multiset: gold [new, york, new], pred [new, york]: common 2; P = 1,
    # R = 2/3, F1 = 0.8; exact match compares sets: {new, york} both, a match
    ("New York", "new york new", 0.8, True),
    # exact match compares token *sets*: {york, new} == {new, york}
    ("York New", "new york", 1.0, True),
    # an empty answer scores 0 (LoCoMo returns 0 when nothing is shared)
    ("", "2022", 0.0, False),
]


@pytest.mark.parametrize(("prediction", "gold", "f1", "em"), TABLE)
def test_token_f1_and_exact_match(prediction: str, gold: str, f1: float, em: bool) -> None:
    assert token_f1(prediction, gold) == pytest.approx(f1, abs=1e-12)
    assert exact_match(prediction, gold) is em


def test_locomo_category_rules() -> None:
    # category 1 (multi-hop): mean over gold parts of the best part of the prediction
    # gold parts "psychology" and "counseling certification"; prediction parts
    # "psychology" (F1 1 with the first) and "counseling" (P 1, R 1/2: F1 2/3 with the second)
    f1, _ = locomo_f1("psychology, counseling", "Psychology, counseling certification", 1)
    assert f1 == pytest.approx((1.0 + 2 / 3) / 2)
    # category 3 (open-domain): the gold answer up to its first ';'
    assert locomo_f1("likely yes", "Likely yes; she said so", 3) == (1.0, True)
    # category 5 (adversarial): says "not mentioned" / "no information available" or not
    assert locomo_f1("It is Not mentioned in the conversation", "self-care", 5) == (1.0, True)
    assert locomo_f1("self-care", "self-care", 5) == (0.0, False)
    # other categories and no category: token F1
    assert locomo_f1("in 2022", "2022", 2)[0] == pytest.approx(2 / 3)
    assert locomo_f1("in 2022", "2022", None)[0] == pytest.approx(2 / 3)


def test_the_query_metadata_picks_the_rule() -> None:
    assert answer_scores("x, 2022", "2022", {"category_code": 1})[0] == 1.0
    assert answer_scores("x, 2022", "2022", {})[0] == pytest.approx(2 / 3)
    # a bool is no category code
    assert answer_scores("nothing", "2022", {"category_code": True})[0] == 0.0
