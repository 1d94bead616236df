"""What a route is: the typed protocol every way of calling a judge implements.

A route (:class:`JudgeRoute`) makes one *attempt* of a call (:meth:`JudgeRoute.call`:
no retries, one deadline; tiap's retry policy is around it) and, where the judge's
provider has one, offers its batch API (:meth:`JudgeRoute.batches`: a
:class:`BatchApi` with ``submit`` / ``poll`` / ``ingest``). Routes are registered by
name (:mod:`tiap.judge.routes`); a judge's panel entry picks one (``route``).

Every route reads a reply into the same record (:mod:`tiap.judge.routes.reply`),
bounds it the same way (``max_reply_bytes``) and fails with exceptions that
:func:`tiap.judge.failures.classify` sorts the same way, so what is stored does not
depend on the route a call took.

A route that needs a library that is slow to import (litellm) imports it only when
a judge of the run needs it, and says so first through the run's
:data:`OnRouteLoad` hook (:func:`announcing`), so a caller can show "loading the
litellm route…" while it loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tiap.judge.batch_api import BatchLimits
from tiap.judge.routes.reply import Reply

if TYPE_CHECKING:
    from tiap.judge.panel import JudgeSpec

__all__ = [
    "Attempt",
    "BatchApi",
    "BatchLimits",
    "BatchOffer",
    "JudgeRoute",
    "OnRouteLoad",
    "ProviderBatch",
    "announce_load",
    "announcing",
]

#: Called with a route's name (``litellm``) right before the library that route
#: needs is imported (a few seconds): e.g. to show "loading the litellm route…".
OnRouteLoad = Callable[[str], None]

_on_load: ContextVar[OnRouteLoad | None] = ContextVar("tiap_on_route_load", default=None)


@contextmanager
def announcing(hook: OnRouteLoad | None) -> Iterator[None]:
    """Routes loaded inside the block (and the tasks it starts) call ``hook`` first."""
    token = _on_load.set(hook)
    try:
        yield
    finally:
        _on_load.reset(token)


def announce_load(route: str) -> None:
    """Tell the run's hook, if any, that ``route`` is about to load its library."""
    hook = _on_load.get()
    if hook is not None:
        hook(route)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a call: the request (litellm's keyword arguments,
    :func:`tiap.judge.request.litellm_kwargs`, which every route reads), the judge
    it is for, its key, its deadline and the longest reply kept."""

    judge: JudgeSpec
    kwargs: Mapping[str, Any]
    api_key: str | None
    timeout_s: float
    max_reply_bytes: int
    #: the messages as the openai SDK serialises them (compact JSON, UTF-8), when
    #: the caller has them (:func:`tiap.judge.request.messages_json`): sent as they
    #: are rather than serialised again
    messages_json: bytes | None = None


class ProviderBatch(Protocol):
    """A provider's view of one batch (the OpenAI batch object's fields tiap reads)."""

    id: str
    status: str
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    request_counts: Any
    metadata: Any


class BatchApi(Protocol):
    """One judge's provider batch API: its input lines, then ``upload`` and
    ``submit`` (create the batch), ``poll`` it, ``ingest`` its result files."""

    @property
    def provider(self) -> str: ...

    @property
    def limits(self) -> BatchLimits: ...

    def line(self, custom_id: str, request: Mapping[str, Any]) -> bytes:
        """One line of a batch input file for a stored request (settings and messages)."""
        ...

    async def upload(self, name: str, data: bytes) -> str:
        """Upload a batch input file; its file id."""
        ...

    async def submit(self, input_file_id: str, metadata: dict[str, str]) -> ProviderBatch:
        """Create the batch (never retried: a lost reply must not create a second)."""
        ...

    async def find(self, key: str | None, input_file_id: str | None) -> ProviderBatch | None:
        """The batch made with a submission's key or from its input file, if any."""
        ...

    async def poll(self, batch_id: str) -> ProviderBatch:
        """The batch as the provider sees it now."""
        ...

    async def ingest(self, file_id: str) -> bytes:
        """A finished batch's output or error file."""
        ...

    def reply(
        self, body: Mapping[str, Any], custom_id: str, max_reply_bytes: int
    ) -> dict[str, Any] | None:
        """The record a direct call's reply would give for a line's chat completion
        (bounded the same way), or None when the body is not one."""
        ...

    async def cancel(self, batch_id: str) -> ProviderBatch:
        """Ask the provider to cancel the batch."""
        ...


@dataclass(frozen=True)
class BatchOffer:
    """Whether a judge's requests can go through a batch API (``api``), and why
    they go the way they go."""

    api: BatchApi | None
    why: str

    @property
    def provider(self) -> str | None:
        return None if self.api is None else self.api.provider


class JudgeRoute(Protocol):
    """A way of calling a judge (see the module docstring)."""

    @property
    def name(self) -> str: ...

    def prepare(self, judge: JudgeSpec, kwargs: Mapping[str, Any]) -> None:
        """Get ready to call ``judge`` with these settings (``kwargs`` without
        caring for the messages): load what the route needs, check what it can,
        before the run's first call. Raises TiapError when it cannot call it."""
        ...

    def session(self) -> AbstractAsyncContextManager[object]:
        """What a run keeps open around its calls on this route (pooled clients)."""
        ...

    async def call(self, attempt: Attempt) -> Reply:
        """One attempt; raises what failed (classified by the caller), or
        :class:`TimeoutError` past ``attempt.timeout_s``."""
        ...

    def batches(self, judge: JudgeSpec, api_key: str | None) -> BatchOffer:
        """The judge's provider batch API, if it has one (and why not, else)."""
        ...
