"""litellm itself, for the litellm route and its batch API: imported on first use,
set up for tiap's calls while they run, and its responses read into the record
tiap stores.

litellm is imported here, lazily, when a run first needs it (never by ``tiap
--help``, ``--dry-run``, a re-run answered from the cache, or a panel whose judges
all take the direct or the offline route); the run's hook is told first
(:func:`tiap.judge.routes.base.announce_load`). What litellm needs from its
globals for tiap's calls (its debug prints off, its logger quiet) is set only
while calls run, by :func:`litellm_session`, and restored afterwards.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from tiap import runtime
from tiap.judge.routes.base import announce_load

#: the route's name in the registry.
NAME = "litellm"

#: per-call options that keep litellm's own cache out of every call (tiap has its own).
NO_LITELLM_CACHE: dict[str, Any] = {"caching": False, "cache": {"no-cache": True, "no-store": True}}

#: litellm's tokenizer module: its import sets ``TIKTOKEN_CACHE_DIR`` in the environment.
_TOKENIZER_MODULE = "litellm.litellm_core_utils.default_encoding"
_import_lock = threading.Lock()


def litellm_module() -> Any:
    """litellm, imported on first use (the run's hook told first). Inside
    :func:`tiap.runtime.tuned` the objects its import leaves are frozen out of the
    cyclic GC (see there)."""
    if "litellm" not in sys.modules:
        announce_load(NAME)
    import litellm

    _load_tokenizer()
    runtime.long_lived("litellm")
    return litellm


def _load_tokenizer() -> None:
    """Load litellm's default tokenizer now, as it would on its first call, and put
    back the environment variable its import sets (``TIKTOKEN_CACHE_DIR``): litellm
    needs it only while that import reads the tokenizer file it ships."""
    with _import_lock:
        if _TOKENIZER_MODULE in sys.modules:
            return
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        try:
            importlib.import_module(_TOKENIZER_MODULE)
        finally:
            if before is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before


class _Session:
    """How many :func:`litellm_session` blocks are open, and what they replaced."""

    lock = threading.Lock()
    depth = 0
    stack: ExitStack | None = None


@contextmanager
def _quiet(litellm: Any) -> Iterator[None]:
    # litellm's own warnings (e.g. its logging worker changing event loop) are noise
    # here: tiap reports every failure itself, with secrets scrubbed. Its debug
    # prints on every exception go to stdout.
    logger = logging.getLogger("LiteLLM")
    level, suppress = logger.level, litellm.suppress_debug_info
    logger.setLevel(logging.ERROR)
    litellm.suppress_debug_info = True
    try:
        yield
    finally:
        litellm.suppress_debug_info = suppress
        logger.setLevel(level)


@contextmanager
def litellm_session() -> Iterator[Any]:
    """litellm, set up for tiap's calls while the block runs: debug prints
    suppressed, its logger at ERROR. Blocks nest (also across threads); the
    outermost one restores what it changed."""
    litellm = litellm_module()
    with _Session.lock:
        if _Session.depth == 0:
            stack = ExitStack()
            stack.enter_context(_quiet(litellm))
            _Session.stack = stack
        _Session.depth += 1
    try:
        yield litellm
    finally:
        with _Session.lock:
            _Session.depth -= 1
            if _Session.depth == 0 and _Session.stack is not None:
                stack, _Session.stack = _Session.stack, None
                stack.close()


def _message_field(message: Any, name: str) -> Any:
    value = getattr(message, name, None)
    if value is None and isinstance(message, dict):
        value = message.get(name)
    return value


def response_record(resp: Any) -> dict[str, Any]:
    """The part of a litellm response tiap stores (and answers re-runs from)."""
    choice = resp.choices[0] if getattr(resp, "choices", None) else None
    message = getattr(choice, "message", None)
    content = _message_field(message, "content")
    usage = getattr(resp, "usage", None)
    record: dict[str, Any] = {
        "id": getattr(resp, "id", None),
        "model": getattr(resp, "model", None),
        "content": content if isinstance(content, str) else None,
        "finish_reason": getattr(choice, "finish_reason", None),
        "usage": {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        },
    }
    refusal = _message_field(message, "refusal")
    if isinstance(refusal, str) and refusal:
        record["refusal"] = refusal
    return record
