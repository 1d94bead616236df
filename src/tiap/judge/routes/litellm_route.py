"""The litellm route: one attempt through ``litellm.acompletion``.

litellm is imported here, lazily, when a run first needs it (never by ``tiap
--help``, ``--dry-run``, a re-run answered from the cache, or a panel whose judges
all take the direct or the offline route); the run's hook is told first
(:func:`tiap.judge.routes.base.announce_load`). Set
``LITELLM_LOCAL_MODEL_COST_MAP=True`` in the environment before that (the
``tiap`` command does) or litellm fetches its model-cost map from the network
at import. litellm is called with ``max_retries=0`` and its own cache off (per
call); tiap retries (:mod:`tiap.judge.call`). Each attempt has one deadline,
``timeout_s``, for all of it (litellm's own ``timeout`` is a per-read one: a reply
trickling in a few bytes at a time would never reach it). litellm reads the
whole reply before tiap sees it: a reply past ``max_reply_bytes`` is cut after
the fact (the direct route stops reading instead).

What litellm needs from its globals for tiap's calls (its debug prints off, its
logger quiet) is set only while calls run, by
:func:`~tiap.judge.routes.litellm_core.litellm_session`, and restored afterwards:
a caller's litellm set-up is as it was once tiap is done.
The route's batch API is litellm's (:mod:`tiap.judge.routes.litellm_batch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tiap.judge.pricing import cost_policy
from tiap.judge.routes.base import Attempt, BatchOffer
from tiap.judge.routes.litellm_core import NAME, NO_LITELLM_CACHE, litellm_session, response_record
from tiap.judge.routes.reply import Reply, bounded

if TYPE_CHECKING:
    from tiap.judge.panel import JudgeSpec


async def send(
    kwargs: Mapping[str, Any], *, api_key: str | None, timeout_s: float, max_reply_bytes: int
) -> Reply:
    """One attempt (inside :func:`litellm_session`); raises what litellm raised, or
    :class:`TimeoutError` past ``timeout_s``."""
    call_kwargs = {**kwargs, **NO_LITELLM_CACHE}
    if api_key is not None:
        call_kwargs["api_key"] = api_key
    litellm = sys.modules["litellm"]
    async with asyncio.timeout(timeout_s):
        resp = await litellm.acompletion(**call_kwargs)
    record = bounded(response_record(resp), max_reply_bytes)
    hidden = getattr(resp, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return Reply(record, float(cost) if isinstance(cost, int | float) else None)


@lru_cache(maxsize=256)
def _cost_known(model: str, cin: float | None, cout: float | None) -> bool:
    """Whether litellm's figure is a call's cost (:func:`tiap.judge.pricing.cost_policy`)."""
    from tiap.judge.panel import JudgeSpec

    judge = JudgeSpec(name="price", model=model, input_cost_per_mtok=cin, output_cost_per_mtok=cout)
    return cost_policy(judge).known


class LitellmRoute:
    """The litellm route (registered as ``litellm``): any model litellm names; the
    cost of a call is litellm's figure."""

    name = NAME

    def __init__(self) -> None:
        self._warm: set[tuple[str, str | None]] = set()

    def prepare(self, judge: JudgeSpec, kwargs: Mapping[str, Any]) -> None:
        """litellm imported, and the request of this judge built once without sending
        it: litellm loads much of a provider's code on its first call, which would
        otherwise count against that call's deadline."""
        key = (judge.model, judge.api_base)
        if key in self._warm:
            return
        with litellm_session():
            from litellm.types.utils import CallTypes
            from litellm.utils import return_raw_request

            with contextlib.suppress(Exception):  # a request litellm refuses fails at its call
                return_raw_request(CallTypes.completion, {**kwargs, **NO_LITELLM_CACHE})
        self._warm.add(key)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[object]:
        with litellm_session() as litellm:
            yield litellm

    async def call(self, attempt: Attempt) -> Reply:
        with litellm_session():
            reply = await send(
                attempt.kwargs,
                api_key=attempt.api_key,
                timeout_s=attempt.timeout_s,
                max_reply_bytes=attempt.max_reply_bytes,
            )
        judge = attempt.judge
        if not _cost_known(judge.model, judge.input_cost_per_mtok, judge.output_cost_per_mtok):
            reply.cost_usd = None  # litellm priced it at the zero stand-in: unknown
        return reply

    def batches(self, judge: JudgeSpec, api_key: str | None) -> BatchOffer:
        from tiap.judge.routes.litellm_batch import offer

        return offer(judge, api_key)


def make_route() -> LitellmRoute:
    """The built-in `litellm` route (named in :mod:`tiap.judge.route_registry`)."""
    return LitellmRoute()
