"""``ordinal = true``: a rubric's labels ordered as listed; the built-ins keep their hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.errors import TiapError
from tiap.rubric import load_rubric, parse_rubric
from tiap.rubric.loader import builtin_rubrics

BUILTIN = Path(__file__).parents[2] / "src/tiap/rubric/builtin/contested-credit.toml"


def _text(extra: str) -> str:
    text = BUILTIN.read_text(encoding="utf-8")
    return text.replace('binary_positive = "relevant"', f'binary_positive = "relevant"\n{extra}')


def test_builtins_are_not_ordinal_and_keep_their_content() -> None:
    for name in builtin_rubrics():
        rubric = load_rubric(name)
        assert rubric.ordinal is False
        assert "ordinal" not in rubric.model_dump(mode="json")


def test_ordinal_rubric_parses_and_has_another_hash() -> None:
    plain = parse_rubric(_text(""), "r.toml")
    ordered = parse_rubric(_text("ordinal = true"), "r.toml")
    assert ordered.ordinal is True
    assert ordered.model_dump(mode="json")["ordinal"] is True
    assert ordered.content_hash != plain.content_hash
    assert parse_rubric(_text("ordinal = false"), "r.toml").content_hash == plain.content_hash


def test_ordinal_must_be_a_boolean() -> None:
    with pytest.raises(TiapError, match=r"r\.toml: invalid rubric: field 'ordinal'.*boolean"):
        parse_rubric(_text('ordinal = "yes"'), "r.toml")


def test_an_ordinal_collapse_cuts_the_order_once() -> None:
    shuffled = _text("ordinal = true").replace(
        'does_not_support = "not_relevant"', 'does_not_support = "relevant"'
    )
    shuffled = shuffled.replace('partial = "relevant"', 'partial = "not_relevant"')
    with pytest.raises(TiapError, match="binary collapse must cut the labels' order once"):
        parse_rubric(shuffled, "r.toml")
    # unordered, the same collapse is fine
    parse_rubric(shuffled.replace("ordinal = true", ""), "r.toml")
