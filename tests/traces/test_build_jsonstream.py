"""Streaming a top-level JSON list element by element."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import tiap.traces.jsonstream as js
from tiap.errors import InputError
from tiap.traces.jsonstream import StreamInfo, iter_json_list

REPEATED = "key '{}' appears twice in one object (a repeated key would hide a value)"
VALUES = [{"a": 1, "b": "é" * 40}, [1, 2, 3], 12345678901234567890, "x", None, 1.5e-3, {}]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_elements_equal_json_load_at_any_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, indent: int | None
) -> None:
    monkeypatch.setattr(js, "_CHUNK", chunk)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(VALUES, indent=indent, ensure_ascii=False) + "\n")
    info = StreamInfo()
    got = [v for _, v in iter_json_list(path, info)]
    assert got == VALUES  # numbers split across chunks are read whole
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert info.bytes_read == path.stat().st_size


def test_start_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('[\n  {"a": 1},\n\n  {"b":\n 2}\n]\n')
    assert [line for line, _ in iter_json_list(path)] == [2, 4]


def test_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(" [ ] ")
    assert list(iter_json_list(path)) == []


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ('{"a": 1}', "expected a JSON list at the top level, found '{'", 1),
        ("", "expected a JSON list at the top level, found an empty file", 1),
        ('[\n{"a": 1},\n{"a": }\n]', "malformed JSON (Expecting value)", 3),
        ('[\n{"a": 1}\n{"b": 2}]', "malformed JSON (expected ',' or ']', found '{')", 3),
        ('[{"a": 1},', "malformed JSON (unexpected end of file inside the list)", 1),
        ('[{"a": 1}', "malformed JSON (expected ',' or ']', found end of file)", 1),
        ('[{"a": 1}]\n[2]', "malformed JSON (extra data after the top-level list)", 2),
        # a repeated key: a dict would keep its last value and hide the first
        ('[\n{"a": 1},\n{"b": {"c": 1,\n "c": 2}}\n]', REPEATED.format("c"), 4),
        ('[{"a": 1, "a": 1}]', REPEATED.format("a"), 1),
        ('[\n{"k": [{"x": 1}, {"x": 2}],\n\n "\\u006b": 3}]', REPEATED.format("k"), 4),
    ],
)
def test_malformed_input_names_file_and_line(
    tmp_path: Path, text: str, problem: str, line: int
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        list(iter_json_list(path))
    assert str(err.value) == f"{path}:{line}: {problem}"


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_a_repeated_key_is_found_at_any_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(js, "_CHUNK", chunk)
    path = tmp_path / "x.json"
    path.write_text('[{"a": "x"},\n {"a": "y",\n  "b": 1, "a": "z"}]')
    with pytest.raises(InputError) as err:
        list(iter_json_list(path))
    assert str(err.value) == f"{path}:3: " + REPEATED.format("a")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        list(iter_json_list(tmp_path / "nope.json"))
