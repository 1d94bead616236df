"""SmolLM2-135M from the converted-model cache gives the labels and log-probabilities
the GGUF file gives; a damaged entry or an unwritable cache falls back to the GGUF
file without a word on stderr. (The run's cache is a temporary folder, and the run
loads the model from its GGUF file once: ``tests/conftest.py``, ``support.smollm2``.)"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import smollm2
from support.smollm2 import GgufLoad
from tiap.judge.local_llm import Scored


def _scores(judge: Any, prompts: list[list[dict[str, str]]], labels: list[str]) -> list[Scored]:
    return [judge.score(messages, labels) for messages in prompts]


def _close(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    assert a is not None
    assert b is not None
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-6 for k in a)


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``TIAP_CACHE_DIR`` set to an empty folder for the test, removed after it (a
    model there is half a GB)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TIAP_CACHE_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def gguf_from_session_entry(smollm2_gguf: GgufLoad, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The load "from the GGUF file" answered with the model of the run's cache entry.

    Parsing the GGUF file is the run's one load (``smollm2_gguf``: its scores, its
    silence and its cache entry are checked below and in the process-state test); the
    tests using this fixture check what happens around that parse (a damaged entry
    removed and rebuilt, an unwritable cache) without parsing it again. Returns the
    GGUF file names asked for."""
    from tiap.judge import local_llm_cache

    asked: list[str] = []

    def from_entry(directory: Path, gguf_file: str, dtype: Any) -> tuple[Any, Any]:
        asked.append(gguf_file)
        return local_llm_cache.load_converted(smollm2_gguf.entry, dtype)

    monkeypatch.setattr(local_llm_cache, "load_gguf", from_entry)
    return asked


@pytest.mark.slow
def test_damaged_cache_entry_is_rebuilt_from_gguf(
    smollm2_gguf: GgufLoad, own_cache: Path, gguf_from_session_entry: list[str], capfd
) -> None:
    from tiap.judge.local_llm import MODEL_FILE, LikelihoodJudge
    from tiap.judge.local_llm_cache import MANIFEST

    mine = own_cache / "local-llm" / smollm2_gguf.entry.name
    shutil.copytree(smollm2_gguf.entry, mine)
    weights = mine / "model.safetensors"
    size = weights.stat().st_size
    with weights.open("r+b") as f:  # a damaged header, the file's size unchanged
        f.write(b"\xff" * 64)
    capfd.readouterr()
    prompts, labels = smollm2.prompts()
    judge = LikelihoodJudge()
    got = judge.score(prompts[0], labels)
    # the damaged entry (its manifest matches: same files, same sizes) failed to
    # load, so the model came from the GGUF file, once
    assert gguf_from_session_entry == [MODEL_FILE]
    assert judge.loaded_from == "gguf"
    assert got.label in labels
    assert _close(got.logprobs, smollm2_gguf.scores[0]["logprobs"])
    assert capfd.readouterr().err == ""
    # rebuilt: a whole entry again, read by the next load
    assert weights.stat().st_size == size
    assert weights.read_bytes()[:64] != b"\xff" * 64
    assert (mine / MANIFEST).is_file()
    again = LikelihoodJudge()
    assert again.score(prompts[0], labels).logprobs == got.logprobs
    assert again.loaded_from == "cache"
    assert gguf_from_session_entry == [MODEL_FILE]  # not asked again
    assert capfd.readouterr().err == ""  # the cached load is as quiet


@pytest.mark.slow
def test_an_unwritable_cache_falls_back_to_the_gguf_file_silently(
    smollm2_gguf: GgufLoad, tmp_path: Path, gguf_from_session_entry: list[str], capfd
) -> None:
    from tiap.judge.local_llm import MODEL_FILE, LikelihoodJudge

    prompts, labels = smollm2.prompts()
    (tmp_path / "a-file").write_text("")  # a folder cannot be made under it, even as root
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIAP_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
        capfd.readouterr()
        judge = LikelihoodJudge()
        got = _scores(judge, prompts, labels)
        assert judge.loaded_from == "gguf"
        assert gguf_from_session_entry == [MODEL_FILE]
        captured = capfd.readouterr()
        assert captured.err == ""
        assert captured.out == ""
    assert [g.label for g in got] == [s["label"] for s in smollm2_gguf.scores]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


@pytest.mark.slow
def test_cached_model_scores_as_the_gguf_model(
    smollm2_gguf: GgufLoad, session_cache_dir: Path
) -> None:
    """The run's load from the GGUF file (which wrote the cache entry, without a word
    on stdout or stderr) and a load from that entry give the same scores."""
    from tiap.judge.local_llm import LikelihoodJudge

    assert smollm2_gguf.loaded_from == "gguf"
    assert smollm2_gguf.entry.parent == session_cache_dir / "local-llm"
    assert smollm2_gguf.output == ""
    prompts, labels = smollm2.prompts()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIAP_CACHE_DIR", str(session_cache_dir))
        second = LikelihoodJudge()
        b = _scores(second, prompts, labels)
    assert second.loaded_from == "cache"
    for x, y in zip(smollm2_gguf.scores, b, strict=True):
        assert x["label"] == y.label
        assert (x["prompt_tokens"], x["completion_tokens"]) == (
            y.prompt_tokens,
            y.completion_tokens,
        )
        assert _close(x["logprobs"], y.logprobs), (x["logprobs"], y.logprobs)
        assert _close(x["prior"], y.prior), (x["prior"], y.prior)
        assert _close(x["calibrated"], y.calibrated), (x["calibrated"], y.calibrated)
    # the two cases score apart (else the comparison above would say little)
    a = smollm2_gguf.scores
    assert not _close(a[0]["logprobs"], a[1]["logprobs"])
