"""The local LLM judge's converted-model cache (``tiap.judge.local_llm_cache``): where
it lives, what its key depends on, and that a half, damaged, concurrent or unwritable
entry never breaks a load. The model itself is replaced by small files here; the real
model's cache is tested in ``test_local_llm_cache_model``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tiap.judge import local_llm_cache as llc


def _save(folder: Path) -> None:
    (folder / "weights.bin").write_bytes(b"w" * 100)
    (folder / "sub").mkdir()
    (folder / "sub" / "tok.json").write_text('{"t": 1}', encoding="utf-8")


def _read(folder: Path) -> tuple[bytes, str]:
    return (folder / "weights.bin").read_bytes(), (folder / "sub" / "tok.json").read_text()


PARTS: dict[str, Any] = {"format": llc.FORMAT, "gguf_sha256": "ab", "dtype": "float32"}


def _written(root: Path, key: str = "k1") -> Path:
    entry = root / "local-llm" / key
    assert llc.write_entry(entry, key, PARTS, _save)
    return entry


def test_cache_root_env_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIAP_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert llc.cache_root() == tmp_path / "mine"
    monkeypatch.setenv("TIAP_CACHE_DIR", "")  # empty: unset
    assert llc.cache_root() == tmp_path / "xdg" / "tiap"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # the XDG spec ignores it
    assert llc.cache_root() == tmp_path / "home" / ".cache" / "tiap"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert llc.cache_root() == tmp_path / "home" / ".cache" / "tiap"


def test_key_follows_file_content_transformers_and_dtype(
    tmp_path: Path, require_extra, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_extra("transformers", "local-llm")
    import hashlib

    import transformers

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 5000)
    parts = llc.cache_parts(gguf, "float32")
    assert parts["gguf_sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert parts["transformers"] == transformers.__version__
    key = llc.cache_key(parts)
    assert key == llc.cache_key(llc.cache_parts(gguf, "float32"))  # stable
    assert len(key) == 32
    assert key != llc.cache_key(llc.cache_parts(gguf, "bfloat16"))
    monkeypatch.setattr(transformers, "__version__", "0.0.1")
    assert key != llc.cache_key(llc.cache_parts(gguf, "float32"))
    monkeypatch.undo()
    gguf.write_bytes(b"GGUF" + bytes(range(256)) * 4999 + bytes(256))  # same size
    assert key != llc.cache_key(llc.cache_parts(gguf, "float32"))


def test_written_entry_is_read_back_with_its_manifest(tmp_path: Path) -> None:
    entry = _written(tmp_path)
    manifest = llc.Manifest.model_validate_json((entry / llc.MANIFEST).read_text())
    assert manifest.key == "k1"
    assert manifest.files == {"weights.bin": 100, "sub/tok.json": 8}
    assert llc.read_entry(entry, "k1", _read) == (b"w" * 100, '{"t": 1}')
    assert sorted(p.name for p in entry.parent.iterdir()) == ["k1"]  # no temporary left
    # a manifest naming another key (a folder renamed by hand) is not this entry
    assert llc.read_entry(entry, "k2", _read) is None


def test_absent_entry_reads_as_none(tmp_path: Path) -> None:
    assert llc.read_entry(tmp_path / "none", "k", _read) is None


def test_writer_that_dies_half_way_leaves_nothing_read(tmp_path: Path) -> None:
    entry = tmp_path / "local-llm" / "k1"

    def dies(folder: Path) -> None:
        (folder / "weights.bin").write_bytes(b"w" * 10)
        raise OSError("disk full")

    assert not llc.write_entry(entry, "k1", PARTS, dies)
    assert not entry.exists()
    assert list(entry.parent.iterdir()) == []  # its temporary folder removed too


def test_folder_without_manifest_is_ignored_and_replaced(tmp_path: Path) -> None:
    # a half entry made some other way (an older writer, a copy cut short)
    entry = tmp_path / "local-llm" / "k1"
    entry.mkdir(parents=True)
    (entry / "weights.bin").write_bytes(b"half")
    calls: list[Path] = []
    assert llc.read_entry(entry, "k1", lambda f: calls.append(f)) is None
    assert calls == []  # never loaded
    assert not entry.exists()
    _written(tmp_path)
    assert llc.read_entry(entry, "k1", _read) == (b"w" * 100, '{"t": 1}')


def test_truncated_file_is_not_loaded_and_entry_removed(tmp_path: Path) -> None:
    entry = _written(tmp_path)
    with (entry / "weights.bin").open("r+b") as f:
        f.truncate(60)
    calls: list[Path] = []
    assert llc.read_entry(entry, "k1", lambda f: calls.append(f)) is None
    assert calls == []
    assert not entry.exists()


def test_entry_failing_to_load_is_removed(tmp_path: Path) -> None:
    entry = _written(tmp_path)

    def broken(folder: Path) -> None:
        raise ValueError("header too large")  # what a damaged safetensors raises

    assert llc.read_entry(entry, "k1", broken) is None
    assert not entry.exists()
    assert list(entry.parent.iterdir()) == []  # removed, not just renamed aside


def test_second_writer_keeps_the_first_entry(tmp_path: Path) -> None:
    entry = _written(tmp_path)

    def other(folder: Path) -> None:
        (folder / "weights.bin").write_bytes(b"x" * 100)

    assert not llc.write_entry(entry, "k1", PARTS, other)
    assert llc.read_entry(entry, "k1", _read) == (b"w" * 100, '{"t": 1}')
    assert sorted(p.name for p in entry.parent.iterdir()) == ["k1"]


def test_killed_writers_folder_is_never_read_and_cleared_when_stale(tmp_path: Path) -> None:
    parent = tmp_path / "local-llm"
    parent.mkdir()
    stale = parent / f".k1.abc{llc._PARTIAL}"
    live = parent / f".k1.def{llc._PARTIAL}"
    for folder in (stale, live):
        folder.mkdir()
        _save(folder)
    old = time.time() - llc.STALE_SECONDS - 60
    os.utime(stale, (old, old))
    assert llc.read_entry(parent / "k1", "k1", _read) is None
    _written(tmp_path)
    assert not stale.exists()
    assert live.exists()  # perhaps a writer at work: left alone


def test_unwritable_cache_writes_nothing_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    entry = blocker / "cache" / "local-llm" / "k1"  # mkdir fails (even as root)
    assert not llc.write_entry(entry, "k1", PARTS, _save)
    assert llc.read_entry(entry, "k1", _read) is None


class _Fakes:
    """load_gguf / load_converted / save_converted replaced by small stand-ins."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        monkeypatch.setattr(llc, "load_gguf", self.load_gguf)
        monkeypatch.setattr(llc, "load_converted", self.load_converted)
        monkeypatch.setattr(llc, "save_converted", self.save_converted)

    def load_gguf(self, directory: Path, gguf_file: str, dtype: Any) -> tuple[Any, Any]:
        self.calls.append("gguf")
        return "tok", "model"

    def load_converted(self, folder: Path, dtype: Any) -> tuple[Any, Any]:
        self.calls.append("cache")
        return (folder / "tok").read_text(), (folder / "model").read_text()

    def save_converted(self, folder: Path, tokenizer: Any, model: Any) -> None:
        (folder / "tok").write_text(tokenizer)
        (folder / "model").write_text(model)


def test_load_model_converts_once_then_reads_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require_extra
) -> None:
    require_extra("transformers", "local-llm")
    fakes = _Fakes(monkeypatch)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("TIAP_CACHE_DIR", str(tmp_path / "cache"))
    first = llc.load_model(tmp_path, "m.gguf", "float32")
    second = llc.load_model(tmp_path, "m.gguf", "float32")
    assert (first.source, second.source) == ("gguf", "cache")
    assert (second.tokenizer, second.model) == ("tok", "model")
    assert first.entry == second.entry
    assert first.entry is not None
    assert first.entry.parent == tmp_path / "cache" / "local-llm"
    assert fakes.calls == ["gguf", "cache"]
    # cache=False: the GGUF file, the cache neither read nor written
    assert llc.load_model(tmp_path, "m.gguf", "float32", cache=False).source == "gguf"
    # a new model file: a new entry beside the first
    (tmp_path / "m.gguf").write_bytes(b"GGUF2")
    assert llc.load_model(tmp_path, "m.gguf", "float32").source == "gguf"
    assert len(list((tmp_path / "cache" / "local-llm").iterdir())) == 2


def test_load_model_with_unwritable_cache_loads_from_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require_extra, capfd
) -> None:
    require_extra("transformers", "local-llm")
    fakes = _Fakes(monkeypatch)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TIAP_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    for _ in range(2):
        loaded = llc.load_model(tmp_path, "m.gguf", "float32")
        assert (loaded.source, loaded.entry, loaded.model) == ("gguf", None, "model")
    assert fakes.calls == ["gguf", "gguf"]
    assert capfd.readouterr().err == ""
