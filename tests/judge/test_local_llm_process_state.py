"""The local LLM judge leaves the process as it found it: loading the model (from
the GGUF file or the converted-model cache) and judging change no environment
variable, no torch thread count and no transformers logging setting of the caller's."""

from __future__ import annotations

import os

import pytest

from support import smollm2
from support.smollm2 import GgufLoad
from tiap.rubric import load_rubric, render_messages


@pytest.mark.slow
def test_loading_from_the_gguf_file_changes_no_process_setting(smollm2_gguf: GgufLoad) -> None:
    """The run's one load from the GGUF file, converting into an empty cache
    (``support.smollm2``), is made with every setting below set to a non-default value
    and the environment without the offline switches, and records what was left."""
    from transformers.utils import logging as hf_logging

    load = smollm2_gguf
    assert load.loaded_from == "gguf"
    assert all(s["prior"] is not None for s in load.scores)  # the calibrated path too
    assert load.environ_changed == []
    assert load.threads_after == smollm2.THREADS
    assert load.verbosity_after == hf_logging.INFO
    assert load.bars_after


@pytest.mark.slow
def test_judging_from_the_cache_changes_no_process_setting(
    smollm2_gguf: GgufLoad, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load from the run's cache (made by ``smollm2_gguf``) and the judging."""
    import torch
    from transformers.utils import logging as hf_logging

    from tiap.judge.local_llm import LikelihoodJudge

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
        assert judge.loaded_from == "cache"
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
