"""Rubrics: built-ins, user TOML files, validation errors, content hashes, output schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from pydantic import ValidationError

from tiap.errors import InputError, TiapError
from tiap.rubric import DEFAULT_RUBRIC, builtin_rubrics, load_rubric, parse_rubric


def builtin_text(name: str) -> str:
    return (resources.files("tiap.rubric") / "builtin" / f"{name}.toml").read_text("utf-8")


def test_builtins_load_and_are_consistent() -> None:
    assert builtin_rubrics() == ["answer-correctness", "contested-credit", "qrels-relevance"]
    assert DEFAULT_RUBRIC == "contested-credit"
    cc = load_rubric()
    assert cc.id == "contested-credit"
    assert cc.label_names == ["supports", "partial", "does_not_support"]
    assert [lab.key for lab in cc.labels] == ["1", "2", "3"]
    assert cc.binary_labels == ["relevant", "not_relevant"]
    assert cc.collapse("partial") == "relevant"
    assert cc.collapse("does_not_support") == "not_relevant"
    assert cc.collapse(None) is None
    assert cc.label_for_key("2").name == "partial"
    assert cc.label_for_key("9") is None
    qr = load_rubric("qrels-relevance")
    assert qr.label_names == ["relevant", "not_relevant"]
    assert qr.collapse("relevant") == "relevant"
    ac = load_rubric("answer-correctness")
    assert (ac.case_kind, ac.label_names, ac.binary_labels) == (
        "answer",
        ["correct", "incorrect"],
        ["correct", "incorrect"],
    )
    assert ac.fields == ["question", "answer", "response", "question_type", "criteria"]
    for name in builtin_rubrics():
        assert load_rubric(name).id == name


def test_user_rubric_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(builtin_text("contested-credit").replace('id = "contested-credit"', 'id = "m"'))
    rubric = load_rubric(path)
    assert rubric.id == "m"
    assert load_rubric(str(path)).content_hash == rubric.content_hash


def test_output_model_accepts_only_rubric_labels() -> None:
    model = load_rubric().output_model
    ok = model.model_validate_json('{"rationale": "It says so.", "label": "partial"}')
    assert ok.label == "partial"
    with pytest.raises(ValidationError):
        model.model_validate_json('{"rationale": "x", "label": "maybe"}')
    with pytest.raises(ValidationError):
        model.model_validate_json('{"rationale": "x", "label": "supports", "extra": 1}')
    schema = load_rubric().output_schema()
    assert schema["required"] == ["rationale", "label"]
    assert schema["properties"]["label"]["enum"] == ["supports", "partial", "does_not_support"]


# ------------------------------------------------------------------------ bad rubrics


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = builtin_text("contested-credit")
    assert old in text
    path = tmp_path / "broken.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('version = "1"', "", "invalid rubric: missing field 'version'"),
        ('version = "1"', 'version = "1"\ncolour = "red"', "unknown field 'colour'"),
        ('key = "2"', 'key = "1"', "label keys must be unique"),
        ('name = "partial"', 'name = "supports"', "label names must be unique"),
        ('partial = "relevant"\n', "", "binary collapse must map every label exactly once"),
        ('binary_positive = "relevant"', 'binary_positive = "yes"', "binary_positive must be"),
        ("{{memory}}", "{{memroy}}", "prompt.user uses {{memroy}}"),
        ('name = "partial"', 'name = "Partial!"', "field 'labels.1.name'"),
    ],
)
def test_malformed_user_rubric_is_a_clear_error(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    path = _broken(tmp_path, old, new)
    with pytest.raises(InputError) as info:
        load_rubric(path)
    assert str(info.value).startswith(f"{path}: ")
    assert problem in str(info.value)


def test_malformed_toml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('id = "x"\nversion = \n')
    with pytest.raises(InputError) as info:
        load_rubric(path)
    assert str(info.value).startswith(f"{path}:2: malformed TOML")


def test_unknown_rubric_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match=r"unknown rubric 'nope'.*contested-credit"):
        load_rubric("nope")
    with pytest.raises(InputError, match="rubric file not found"):
        load_rubric(tmp_path / "absent.toml")


def test_unreadable_rubric_file_is_an_input_error(tmp_path: Path) -> None:
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(InputError, match=r"cannot read rubric file"):
        load_rubric(folder)
    latin = tmp_path / "latin.toml"
    latin.write_bytes('id = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(InputError, match=r"latin.toml: rubric file is not UTF-8 text"):
        load_rubric(latin)


# ---------------------------------------------------------------------- content hash


def test_content_hash_is_stable_and_changes_with_any_edit() -> None:
    text = builtin_text("contested-credit")
    base = parse_rubric(text, "a")
    assert base.content_hash == load_rubric().content_hash
    assert len(base.content_hash) == 64
    int(base.content_hash, 16)
    # Layout alone (comments, blank lines) is not content.
    assert parse_rubric("# a comment\n\n" + text, "b").content_hash == base.content_hash
    edits = [
        ('version = "1"', 'version = "2"'),
        ("a reader who saw only this memory", "a reader who saw this memory"),
        ('key = "3"', 'key = "x"'),
        ("Reply with the JSON object.", "Reply with JSON."),
        ('partial = "relevant"', 'partial = "not_relevant"'),
    ]
    hashes = {base.content_hash}
    for old, new in edits:
        assert old in text
        edited = parse_rubric(text.replace(old, new, 1), "c")
        hashes.add(edited.content_hash)
    assert len(hashes) == len(edits) + 1


def test_content_hash_matches_an_independent_digest() -> None:
    import hashlib

    rubric = load_rubric()
    canon = json.dumps(rubric.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    assert rubric.content_hash == hashlib.sha256(canon.encode("utf-8")).hexdigest()
