"""A reply kept bounded and storable: cut at a character boundary, lone surrogates
replaced, and the text of a chat completion read from its first bytes only."""

from __future__ import annotations

import json

import pytest

from tiap.judge.routes.reply import body_limit, bounded, content_from_prefix, cut, storable


def test_cut_keeps_whole_characters_within_the_cap() -> None:
    assert cut("abc", 3) == ("abc", None)
    assert cut("é" * 10, 5) == ("éé", 20)  # 2 bytes each: two fit, never half of one
    assert cut("☃x", 2) == ("", 4)
    text = "ok " + "\U0001f600" * 100
    kept, size = cut(text, 64)
    assert size == len(text.encode())
    assert len(kept.encode()) <= 64
    assert text.startswith(kept)


def test_lone_surrogates_become_replacement_characters() -> None:
    text = json.loads('"a\\ud800b\\udfffc"')
    with pytest.raises(UnicodeEncodeError):
        text.encode()
    assert storable(text) == "a\ufffdb\ufffdc"
    assert storable("plain ☃") == "plain ☃"


def test_bounded_marks_what_it_cut() -> None:
    record = bounded({"content": "x" * 10, "usage": {}}, 4)
    assert record == {"content": "xxxx", "usage": {}, "truncated": True, "reply_bytes": 10}
    assert bounded({"content": "xy"}, 4) == {"content": "xy"}
    assert bounded({"content": "xy"}, 4, body_cut=True) == {
        "content": "xy",
        "truncated": True,
        "reply_bytes": None,
    }
    assert bounded({"content": None, "refusal": "r" * 9}, 3)["refusal"] == "rrr"


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_text_is_read_from_any_prefix_of_a_completion(ensure_ascii: bool) -> None:
    text = 'a\\b"c é ☃ \U0001f600 \x01 \n end'
    completion = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    data = json.dumps(completion, ensure_ascii=ensure_ascii).encode()
    start = data.index(b'"content": "') + len(b'"content": "')
    assert content_from_prefix(data) == text
    assert content_from_prefix(data[: start - 1]) is None  # the text has not begun
    previous = ""
    for end in range(start, len(data)):
        got = content_from_prefix(data[:end])
        assert got is not None, end
        assert text.startswith(got), end
        assert len(got) >= len(previous)  # more bytes never give less text
        got.encode()  # storable: no half of a surrogate pair
        previous = got
    assert previous == text


def test_the_body_read_allows_for_escapes_and_the_envelope() -> None:
    cap = 1000
    text = "\x01" * cap  # each character six bytes escaped: "\u0001"
    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
    assert len(data) < body_limit(cap)
    assert content_from_prefix(data.encode()[: body_limit(cap)]) == text
