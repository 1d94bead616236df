"""A JSON object that names a key twice is refused wherever tiap reads JSON from users.

``json.loads`` keeps the last value of a repeated key and drops the others without a
word, so ``{"label": "supports", "label": "does_not_support"}`` would read as one of
them. Every reader (bundles, LMEB/BEIR task files, labels files, memory-system
exports, benchmark files) goes through one decoder hook, :func:`tiap.io.unique_object`,
and names the file, the line and the key (the exports' readers are tested in
``traces/test_import_exports.py``, the streaming reader in
``traces/test_build_jsonstream.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz_support import (
    LABELS,
    jsonl,
    snapshot,
    workspace_with_cases,
    write_bundle,
    write_lmeb,
)
from tiap.errors import InputError
from tiap.traces.bundle import read_bundle

REPEATED = "appears twice in one object (a repeated key would hide a value)"


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ('{"a": 1, "b": 2, "a": 3}', "a", 1),
        ('{"a": {"x": 1},\n "b": {"x": 1, "y": 2,\n "x": 3}}', "x", 3),
        ('[{"a": 1}, {"a": 2}, {"b": [1, {"c": 1}], "b": 0}]', "b", 1),
        # keys compare as decoded strings: an escape names the same key
        ('{"caf\\u00e9": 1,\n"café": 2}', "café", 2),
        # a string value that looks like a key does not count
        ('{"a": "a:", "b": ["a", ":"],\n"a": 1}', "a", 2),
    ],
)
def test_load_json_names_the_key_and_its_line(text: str, key: str, line: int) -> None:
    from tiap.io import load_json

    with pytest.raises(InputError) as err:
        load_json(text, "f.json")
    assert str(err.value) == f"f.json:{line}: key '{key}' {REPEATED}"


def test_the_same_key_in_different_objects_is_fine() -> None:
    from tiap.io import load_json, repeated_key_offset

    text = '{"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}, {"k": 4}]}'
    assert load_json(text, "f.json") == json.loads(text)
    assert repeated_key_offset(text) is None


def test_a_bundle_line_with_a_repeated_key(tmp_path: Path) -> None:
    root = tmp_path / "b"
    write_bundle(root)
    queries = root / "queries.jsonl"
    lines = queries.read_text().splitlines()
    lines[1] = lines[1].replace('"evidence": ["s2"]', '"evidence": ["s2"], "evidence": ["s9"]')
    queries.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_bundle(root)
    assert str(err.value) == f"{queries}:2: key 'evidence' {REPEATED}"


def test_an_lmeb_corpus_line_with_a_repeated_key(tmp_path: Path) -> None:
    from tiap.traces.lmeb import load_lmeb

    task = tmp_path / "task"
    write_lmeb(task)
    corpus = task / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + '{"id": "d5", "text": "x", "text": "y", "title": ""}\n')
    with pytest.raises(InputError) as err:
        load_lmeb(task)
    assert str(err.value) == f"{corpus}:5: key 'text' {REPEATED}"


@pytest.mark.parametrize("command", ["agreement", "import"])
def test_a_labels_line_with_a_repeated_label(tiap_cli, tmp_path: Path, command: str) -> None:
    path = tmp_path / "labels.jsonl"
    repeated = '{"case_id": "c1", "rater": "ja", "label": "supports", "label": "partial"}\n'
    path.write_bytes(jsonl(LABELS[:2]) + repeated.encode() + jsonl(LABELS[2:]))
    db = tmp_path / "w.sqlite"
    args = {
        "agreement": ["agreement", "report", "--labels", str(path), "--out", str(tmp_path / "o")],
        "import": ["labels", "import", str(path), "--db", str(db), "--rater-kind", "judge"],
    }[command]
    if command == "import":
        workspace_with_cases(db, ["c0", "c1", "c2"])
    before = snapshot(tmp_path)
    code, _, err = tiap_cli(args)
    assert code == 2, err
    assert err == f"tiap: error: {path}:3: key 'label' {REPEATED}\n"
    assert snapshot(tmp_path) == before
