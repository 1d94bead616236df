"""The run's one load of SmolLM2-135M from its GGUF file, and what it showed.

Parsing the GGUF file takes transformers 20-40 s, so a test run does it once: the
first test that needs the model calls :func:`first_gguf_load` (through the
``smollm2_gguf`` fixture of ``tests/conftest.py``), which loads the model from the
GGUF file into the run's shared cache (the converted entry every later load
reads) and records, in a JSON file beside the cache, what the tests of that load
check:

- where the model came from (``gguf``) and the cache entry it wrote;
- the scores of :func:`prompts` (labels, log-probabilities, prior, calibrated);
- everything written on stdout and stderr while it loaded and scored, at the
  Python level and at the file-descriptor level (the GGUF loader's own progress
  bar, a C library's warning);
- whether the process's settings outlasted the call: the environment, torch's
  thread count and transformers' logging, each set to a non-default value first.

A file lock makes the load once per run under pytest-xdist: the other worker
waits for it and reads the record.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.rubric import load_rubric, render_messages

RECORD = "smollm2-gguf-load.json"
#: the torch thread count set before the load (not the default here: two cores)
THREADS = 2


def prompts() -> tuple[list[list[dict[str, str]]], list[str]]:
    """Two rendered prompts of the built-in rubric that score apart, and its labels."""
    rubric = load_rubric()
    cases = [
        {f: f"the {f}" for f in rubric.fields},
        {f: f"Caroline went to the LGBTQ support group on 7 May 2023 ({f})" for f in rubric.fields},
    ]
    return [render_messages(rubric, c) for c in cases], rubric.label_names


@dataclass(frozen=True)
class GgufLoad:
    """What the run's load from the GGUF file showed (see the module doc)."""

    loaded_from: str
    entry: Path
    scores: list[dict[str, Any]]
    output: str
    environ_changed: list[str]
    threads_after: int
    verbosity_after: int
    bars_after: bool


@contextlib.contextmanager
def _all_output() -> Iterator[io.StringIO]:
    """Everything written on stdout and stderr inside the block: Python's streams
    and file descriptors 1 and 2 (what a library writes without Python's streams)."""
    import sys

    text = io.StringIO()
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield text
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text.write(sink.read().decode("utf-8", "replace"))


def _load(cache: Path) -> dict[str, Any]:
    """Load from the GGUF file into ``cache`` (empty of this model), score
    :func:`prompts`, and say what it showed."""
    import torch
    from transformers.utils import logging as hf_logging

    from tiap.judge.local_llm import LikelihoodJudge

    threads = torch.get_num_threads()
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    environ_before = dict(os.environ)
    messages, labels = prompts()
    torch.set_num_threads(THREADS)
    hf_logging.set_verbosity_info()
    hf_logging.enable_progress_bar()
    try:
        os.environ["TIAP_CACHE_DIR"] = str(cache)
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TIAP_LOCAL_LLM_THREADS"):
            os.environ.pop(name, None)
        environ = dict(os.environ)
        with _all_output() as output:
            judge = LikelihoodJudge()
            scored = [judge.score(m, labels) for m in messages]
        changed = sorted(
            k for k in set(environ) | set(os.environ) if environ.get(k) != os.environ.get(k)
        )
        entries = [p for p in (cache / "local-llm").iterdir() if not p.name.startswith(".")]
        return {
            "loaded_from": judge.loaded_from,
            "entry": str(entries[0]) if len(entries) == 1 else "",
            "scores": [
                {
                    "label": s.label,
                    "logprobs": s.logprobs,
                    "prior": s.prior,
                    "calibrated": s.calibrated,
                    "prompt_tokens": s.prompt_tokens,
                    "completion_tokens": s.completion_tokens,
                }
                for s in scored
            ],
            "output": output.getvalue(),
            "environ_changed": changed,
            "threads_after": torch.get_num_threads(),
            "verbosity_after": hf_logging.get_verbosity(),
            "bars_after": hf_logging.is_progress_bar_enabled(),
        }
    finally:
        torch.set_num_threads(threads)
        hf_logging.set_verbosity(verbosity)
        (hf_logging.enable_progress_bar if bars else hf_logging.disable_progress_bar)()
        os.environ.clear()
        os.environ.update(environ_before)


def first_gguf_load(cache: Path) -> GgufLoad:
    """The run's load from the GGUF file into ``cache`` (made once per run, by
    whichever worker asks first; the others read its record)."""
    record = cache / RECORD
    with (cache / f"{RECORD}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            data = _load(cache)
            part = record.with_suffix(".partial")
            part.write_text(json.dumps(data), encoding="utf-8")
            part.rename(record)
    data = json.loads(record.read_text(encoding="utf-8"))
    return GgufLoad(**{**data, "entry": Path(data["entry"])})
