"""A call's messages are encoded once for the request sent and the one stored: both
texts are exactly what serialising each form on its own gives."""

from __future__ import annotations

from typing import Any

import pytest

from tiap.cases.rows import JsonTemplate, dumps_field
from tiap.judge.request import messages_json
from tiap.judge.routes.openai_request import Endpoint, handler_dumps, sdk_dumps

CASES: list[Any] = [
    [],
    [{}],
    [{"role": "system", "content": "Judge."}, {"role": "user", "content": "q?"}],
    # key order as given on the wire, sorted when stored; escapes, quotes, non-ASCII
    [{"role": "user", "content": 'a "quoted"\\ line\nnext\ttab \x01 é ü 漢字 😀', "name": "x"}],
    [{"z": "1", "a": "2", "m": ""}],
]


@pytest.mark.parametrize("messages", CASES)
def test_both_texts_are_those_of_serialising_each_form(messages: Any) -> None:
    encoded = messages_json(messages)
    assert encoded is not None
    assert encoded.wire == sdk_dumps(messages)
    assert encoded.stored == dumps_field(messages)
    # and so the bodies and stored requests made from them
    point = Endpoint(
        "openai", "http://h/v1/chat/completions", b'{"m":1,"messages":', b"}", sdk_dumps
    )
    assert point.body(messages, encoded.wire) == point.body(messages)
    template = JsonTemplate({"model": "m", "temperature": 0}, "messages")
    assert template.text(messages, encoded.stored) == template.text(messages)
    assert template.text(messages) == dumps_field(
        {"model": "m", "temperature": 0, "messages": messages}
    )


def test_an_endpoint_that_serialises_otherwise_ignores_the_wire_text() -> None:
    messages = [{"role": "user", "content": "é"}]
    encoded = messages_json(messages)
    assert encoded is not None
    point = Endpoint("openrouter", "http://h/v1/chat/completions", b"{", b"}", handler_dumps)
    assert point.body(messages, encoded.wire) == b'{[{"role": "user", "content": "\\u00e9"}]}'


@pytest.mark.parametrize(
    "messages",
    [
        "not a list",
        [["role", "user"]],
        [{"role": "user", "content": [{"type": "text", "text": "parts"}]}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": "lone \ud800 surrogate"}],
    ],
)
def test_anything_else_is_left_to_each_serialiser(messages: Any) -> None:
    assert messages_json(messages) is None
