"""tiap's offline judges as an in-process litellm provider (``tiap-offline/NAME``).

Registered with ``litellm.custom_provider_map`` while tiap's calls run (see
:func:`registered`; litellm's lists are restored afterwards), so a call to
``tiap-offline/answer-containment`` goes through exactly the path a hosted
model's call takes (litellm, retries, the ``model_calls`` cache, parsing,
storage); it just never leaves the process. The provider reads the rubric's
labels from the request's ``response_format`` schema (its ``label`` enum), or,
without one, from the ``- name: definition`` lines of the system prompt, and
answers with the JSON reply a judge would give.

Judges: the deterministic baselines of :mod:`tiap.judge.baselines` (not LLMs)
and ``smollm2-135m``, a real but weak local LLM (:mod:`tiap.judge.local_llm`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from tiap.aio import run_sync
from tiap.judge.baselines import BASELINES
from tiap.judge.baselines import judge as baseline_judge
from tiap.judge.local_llm import SCORINGS  # how the local LLM picks its label (params.scoring)
from tiap.judge.panel import OFFLINE_PROVIDER

LOCAL_LLM_MODELS = frozenset({"smollm2-135m"})
_LABEL_LINE = re.compile(r"^- ([a-z][a-z0-9_]*): ", re.MULTILINE)


def offline_name(model: str) -> str:
    return model.split("/", 1)[1] if model.startswith(OFFLINE_PROVIDER + "/") else model


def is_local_llm(model: str) -> bool:
    return offline_name(model) in LOCAL_LLM_MODELS


def known_models() -> list[str]:
    return sorted([*BASELINES, *LOCAL_LLM_MODELS])


def rubric_labels(messages: list[dict[str, Any]], response_format: Any) -> list[str]:
    """The rubric's labels, most supportive first, from the request."""
    if isinstance(response_format, dict):
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        enum = ((schema.get("properties") or {}).get("label") or {}).get("enum")
        if isinstance(enum, list) and all(isinstance(x, str) for x in enum) and len(enum) >= 2:
            return list(enum)
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    return _LABEL_LINE.findall(system)


def prompt_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")


def respond(name: str, messages: list[dict[str, Any]], labels: list[str]) -> str:
    """The reply text of baseline ``name``: a JSON judgment, or a declining sentence."""
    if len(labels) < 2:
        return "I cannot judge: the request does not name the rubric's labels."
    label, why = baseline_judge(name, prompt_text(messages), labels)
    if label is None:
        return f"I cannot judge this case: {why}."
    return json.dumps({"rationale": why, "label": label})


async def respond_local_llm(
    messages: list[dict[str, Any]], labels: list[str], scoring: str = "calibrated"
) -> tuple[str, int, int]:
    """The local LLM's reply: its label by calibrated likelihood (``scoring``
    ``calibrated``, the default) or by raw likelihood (``likelihood``)."""
    from tiap.judge.local_llm import likelihood_judge

    if len(labels) < 2:
        return "I cannot judge: the request does not name the rubric's labels.", 0, 0
    clean = [{"role": str(m["role"]), "content": str(m.get("content", ""))} for m in messages]
    calibrate = scoring == "calibrated"
    scored = await asyncio.to_thread(likelihood_judge().score, clean, labels, calibrate=calibrate)
    ranked = ", ".join(f"{k} {v:.2f}" for k, v in scored.logprobs.items())
    if scored.calibrated is None:
        why = f"SmolLM2-135M (weak local LLM), label by likelihood; log-probabilities: {ranked}"
    else:
        shifted = ", ".join(f"{k} {v:+.2f}" for k, v in scored.calibrated.items())
        why = (
            "SmolLM2-135M (weak local LLM), label by likelihood calibrated on content-free "
            f"prompts; log-probabilities: {ranked}; calibrated: {shifted}"
        )
    reply = json.dumps({"rationale": why, "label": scored.label})
    return reply, scored.prompt_tokens, scored.completion_tokens


@cache
def make_provider(litellm: Any) -> Any:
    """The instance of the provider class (a ``litellm.CustomLLM``), made once."""

    class OfflineJudges(litellm.CustomLLM):
        async def _reply(self, model: str, messages: list, optional_params: dict) -> Any:
            name = offline_name(model)
            labels = rubric_labels(messages, (optional_params or {}).get("response_format"))
            if name in BASELINES:
                text, pin, pout = respond(name, messages, labels), 0, 0
            elif name in LOCAL_LLM_MODELS:
                scoring = (optional_params or {}).get("scoring", "calibrated")
                if scoring not in SCORINGS:
                    raise litellm.BadRequestError(
                        message=f"scoring '{scoring}' of {name}: use one of {', '.join(SCORINGS)}",
                        model=model,
                        llm_provider=OFFLINE_PROVIDER,
                    )
                text, pin, pout = await respond_local_llm(messages, labels, scoring)
            else:
                raise litellm.BadRequestError(
                    message=f"unknown offline judge '{name}' (known: {', '.join(known_models())})",
                    model=model,
                    llm_provider=OFFLINE_PROVIDER,
                )
            return litellm.ModelResponse(
                model=f"{OFFLINE_PROVIDER}/{name}",
                choices=[
                    litellm.Choices(
                        index=0,
                        finish_reason="stop",
                        message=litellm.Message(role="assistant", content=text),
                    )
                ],
                usage=litellm.Usage(
                    prompt_tokens=pin, completion_tokens=pout, total_tokens=pin + pout
                ),
            )

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            return await self._reply(model, messages, kwargs.get("optional_params") or {})

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            params = kwargs.get("optional_params") or {}
            return run_sync(lambda: self._reply(model, messages, params))

    return OfflineJudges()


@contextmanager
def registered(litellm: Any) -> Iterator[None]:
    """The provider in ``litellm.custom_provider_map`` while the block runs.

    On exit litellm's provider lists are as they were: the entry is removed from
    ``custom_provider_map``, and the provider name from the lists litellm copies
    it into on each call, unless they held it before (then nothing was added).
    """
    current = list(getattr(litellm, "custom_provider_map", None) or [])
    if any(entry.get("provider") == OFFLINE_PROVIDER for entry in current):
        yield
        return
    lists = [getattr(litellm, name, None) for name in ("provider_list", "_custom_providers")]
    had = [isinstance(names, list) and OFFLINE_PROVIDER in names for names in lists]
    entry = {"provider": OFFLINE_PROVIDER, "custom_handler": make_provider(litellm)}
    litellm.custom_provider_map = [*current, entry]
    try:
        yield
    finally:
        litellm.custom_provider_map = [
            e for e in (getattr(litellm, "custom_provider_map", None) or []) if e is not entry
        ]
        for names, before in zip(lists, had, strict=True):
            if isinstance(names, list) and not before:
                while OFFLINE_PROVIDER in names:
                    names.remove(OFFLINE_PROVIDER)
