"""The offline route: tiap's in-process judges (``tiap-offline/NAME``).

A call to ``tiap-offline/answer-containment`` goes through exactly the path a
hosted model's call takes (the claim, tiap's retries, the ``model_calls`` cache,
parsing, storage); it just never leaves the process, and imports no model
library. The route reads the rubric's labels from the request's
``response_format`` schema (its ``label`` enum), or, without one, from the ``-
name: definition`` lines of the system prompt, and answers with the JSON reply a
judge would give, in the record every route keeps
(:mod:`tiap.judge.routes.reply`). Its calls cost nothing.

Judges: the deterministic baselines of :mod:`tiap.judge.baselines` and, on answer
cases, :mod:`tiap.judge.answer_baselines` (not LLMs)
and ``smollm2-135m``, a real but weak local LLM (:mod:`tiap.judge.local_llm`);
an unknown name, or an unknown ``scoring`` for the local LLM, is a bad request
(HTTP 400, as a provider would answer it).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from tiap.judge.answer_baselines import judge as baseline_judge
from tiap.judge.baselines import BASELINES
from tiap.judge.failures import ProviderStatusError
from tiap.judge.local_llm import SCORINGS  # how the local LLM picks its label (params.scoring)
from tiap.judge.panel import LOCAL_LLM_MODELS, OFFLINE_PROVIDER, JudgeSpec, offline_name
from tiap.judge.routes.base import Attempt, BatchOffer
from tiap.judge.routes.reply import Reply, bounded
from tiap.rubric import builtin_rubrics, load_rubric

#: the route's name in the registry.
NAME = "offline"

_LABEL_LINE = re.compile(r"^- ([a-z][a-z0-9_]*): ", re.MULTILINE)


def known_models() -> list[str]:
    return sorted([*BASELINES, *LOCAL_LLM_MODELS])


def rubric_labels(messages: list[dict[str, Any]], response_format: Any) -> list[str]:
    """The rubric's labels, most supportive first: those of a rubric tiap ships in
    its declared order (however the request lists them: a probe may list them
    reversed, and a lexical rule's verdict must not move with the list), else in the
    order the request lists them."""
    listed = _listed_labels(messages, response_format)
    return _declared_orders().get(frozenset(listed), listed)


def _listed_labels(messages: list[dict[str, Any]], response_format: Any) -> list[str]:
    """The labels as the request lists them: its reply schema's ``label`` enum, or
    the ``- name: definition`` lines of its system prompt."""
    if isinstance(response_format, dict):
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        enum = ((schema.get("properties") or {}).get("label") or {}).get("enum")
        if isinstance(enum, list) and all(isinstance(x, str) for x in enum) and len(enum) >= 2:
            return list(enum)
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    return _LABEL_LINE.findall(system)


@functools.cache
def _declared_orders() -> dict[frozenset[str], list[str]]:
    """The label order of each rubric tiap ships, by its set of labels."""
    rubrics = [load_rubric(name) for name in builtin_rubrics()]
    return {frozenset(r.label_names): list(r.label_names) for r in rubrics}


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


def _bad_request(message: str) -> ProviderStatusError:
    return ProviderStatusError(400, f"HTTP 400: {message}", {})


async def reply_text(model: str, kwargs: Mapping[str, Any]) -> tuple[str, int, int]:
    """``(text, prompt tokens, completion tokens)`` of offline judge ``model``."""
    name = offline_name(model)
    messages = list(kwargs.get("messages") or [])
    labels = rubric_labels(messages, kwargs.get("response_format"))
    if name in BASELINES:
        return respond(name, messages, labels), 0, 0
    if name not in LOCAL_LLM_MODELS:
        raise _bad_request(f"unknown offline judge '{name}' (known: {', '.join(known_models())})")
    scoring = kwargs.get("scoring", "calibrated")
    if scoring not in SCORINGS:
        raise _bad_request(f"scoring '{scoring}' of {name}: use one of {', '.join(SCORINGS)}")
    return await respond_local_llm(messages, labels, scoring)


class OfflineRoute:
    """The offline route (registered as ``offline``; see the module docstring)."""

    name = NAME

    def prepare(self, judge: JudgeSpec, kwargs: Mapping[str, Any]) -> None:
        if offline_name(judge.model) in LOCAL_LLM_MODELS:
            from tiap.judge.local_llm import check_available

            check_available()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[object]:
        yield self

    async def call(self, attempt: Attempt) -> Reply:
        model = str(attempt.kwargs.get("model", ""))
        text, pin, pout = await reply_text(model, attempt.kwargs)
        record = {
            "id": None,
            "model": f"{OFFLINE_PROVIDER}/{offline_name(model)}",
            "content": text,
            "finish_reason": "stop",
            "usage": {"prompt_tokens": pin, "completion_tokens": pout},
        }
        return Reply(bounded(record, attempt.max_reply_bytes), 0.0)

    def batches(self, judge: JudgeSpec, api_key: str | None) -> BatchOffer:
        return BatchOffer(None, "an in-process judge: called directly")


def make_route() -> OfflineRoute:
    """The built-in `offline` route (named in :mod:`tiap.judge.route_registry`)."""
    return OfflineRoute()
