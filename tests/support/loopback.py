"""A scriptable OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` like an OpenAI-compatible provider, with
behaviour chosen per request by a script, and records every request it saw. It is
a tool for exercising the judge path end to end without a network or a key:

    with LoopbackServer(reply=label_reply("supports"), delay_s=0.1) as server:
        ...  # a panel judge with model "openai/NAME" and api_base=server.url

Behaviours (:class:`Behaviour`): a valid reply (optionally after a delay), an
HTTP error status (optionally with ``Retry-After``), a connection reset, a body
that is not JSON, any reply text (a label outside the rubric, a refusal, a reply
of several megabytes...), a valid reply whose body trickles in a few bytes at
a time (``drip``), or one sent with ``Transfer-Encoding: chunked`` (``chunked``).
Every request is recorded with its body's bytes as received.
A :class:`Script` hands out behaviours per *case key* (the ``<question>`` block of
the user message by default) and falls back to a default reply.

Run standalone (the benchmark runs it in its own process):

    python tests/support/loopback.py --delay 0.1 --label supports

prints ``READY <url>`` on stdout once listening, and serves until stdin closes
or the process is terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request.

    ``kind`` is one of ``reply`` (200 with ``content`` as the assistant message),
    ``status`` (HTTP ``status`` with a JSON error body, ``Retry-After`` when
    ``retry_after`` is set), ``reset`` (close the connection without a reply),
    ``garbage`` (200 whose body is not JSON), ``drip`` (the reply of ``reply``,
    its body sent ``chunk`` bytes every ``every_s`` seconds), ``chunked`` (the reply
    of ``reply`` sent chunked, ``chunk`` bytes a chunk). ``delay_s`` is waited first.
    """

    kind: str = "reply"
    content: str | None = None
    status: int = 200
    retry_after: float | None = None
    delay_s: float = 0.0
    message: str = "error"
    #: a provider-reported cost in ``usage.cost`` (as OpenRouter sends it).
    cost: float | None = None
    #: ``drip``: bytes per write and seconds between writes.
    chunk: int = 10
    every_s: float = 0.5


def reply(content: str, delay_s: float = 0.0) -> Behaviour:
    return Behaviour(kind="reply", content=content, delay_s=delay_s)


def label_reply(
    label: str, rationale: str = "scripted", delay_s: float = 0.0, cost: float | None = None
) -> Behaviour:
    """A valid judge reply carrying ``label`` (and a reported cost, if given)."""
    content = json.dumps({"rationale": rationale, "label": label})
    return Behaviour(kind="reply", content=content, delay_s=delay_s, cost=cost)


def status(code: int, retry_after: float | None = None, message: str = "error") -> Behaviour:
    return Behaviour(kind="status", status=code, retry_after=retry_after, message=message)


def reset() -> Behaviour:
    return Behaviour(kind="reset")


def garbage() -> Behaviour:
    return Behaviour(kind="garbage")


def slow(delay_s: float, content: str | None = None) -> Behaviour:
    return Behaviour(kind="reply", content=content, delay_s=delay_s)


def drip(content: str | None = None, chunk: int = 10, every_s: float = 0.5) -> Behaviour:
    """A valid reply whose body arrives ``chunk`` bytes every ``every_s`` seconds."""
    return Behaviour(kind="drip", content=content, chunk=chunk, every_s=every_s)


def chunked(content: str | None = None, chunk: int = 10) -> Behaviour:
    """A valid reply sent with ``Transfer-Encoding: chunked``, ``chunk`` bytes a chunk."""
    return Behaviour(kind="chunked", content=content, chunk=chunk, every_s=0.0)


def large_reply(size: int, label: str = "supports", label_first: bool = False) -> Behaviour:
    """A reply of about ``size`` bytes of text: a judgment whose rationale is huge
    (the label after it), or, with ``label_first``, a short judgment and then
    ``size`` bytes of padding."""
    if label_first:
        content = json.dumps({"label": label, "rationale": "short"}) + " " + "x" * size
    else:
        content = json.dumps({"rationale": "y" * size, "label": label})
    return Behaviour(kind="reply", content=content)


@dataclass
class SeenRequest:
    """One request as the server saw it."""

    index: int
    key: str
    body: dict[str, Any]
    authorization: str | None
    time: float
    #: the request body's bytes as received.
    raw: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def question_key(body: dict[str, Any]) -> str:
    """The case key of a request: the fenced ``<question>`` text of the last user message."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            match = _QUESTION.search(text)
            return match.group(1) if match else text[:200]
    return ""


@dataclass
class Script:
    """Behaviours handed out per case key, in order; then ``default``.

    ``default`` may be a behaviour or a function of the request body (e.g. to
    derive the label from the prompt).
    """

    default: Behaviour | Callable[[dict[str, Any]], Behaviour] = field(
        default_factory=lambda: label_reply("supports")
    )
    per_key: dict[str, list[Behaviour]] = field(default_factory=dict)
    always: list[Behaviour] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, key: str, *behaviours: Behaviour) -> Script:
        with self._lock:
            self.per_key.setdefault(key, []).extend(behaviours)
        return self

    def next(self, key: str, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            queue = self.per_key.get(key)
            if queue:
                return queue.pop(0)
            if self.always:
                return self.always.pop(0)
        return self.default(body) if callable(self.default) else self.default


def _usage(body: dict[str, Any], content: str, cost: float | None = None) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [])
    prompt = max(1, prompt_chars // 4)
    completion = max(1, len(content) // 4)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cost is not None:
        usage["cost"] = cost
    return usage


def completion(seen: SeenRequest, behaviour: Behaviour) -> dict[str, Any]:
    """The chat-completion body a ``reply`` behaviour answers ``seen`` with."""
    content = behaviour.content if behaviour.content is not None else '{"label": "supports"}'
    return {
        "id": f"chatcmpl-loopback-{seen.index}",
        "object": "chat.completion",
        "created": 0,
        "model": seen.body.get("model", "loopback"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(seen.body, content, behaviour.cost),
    }


def _reply(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    return web.json_response(completion(seen, behaviour))


async def _drip(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    body = json.dumps(completion(seen, behaviour)).encode()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = len(body)
    await response.prepare(request)
    try:
        for start in range(0, len(body), behaviour.chunk):
            await response.write(body[start : start + behaviour.chunk])
            await asyncio.sleep(behaviour.every_s)
        await response.write_eof()
    except (ConnectionError, RuntimeError):  # the client gave up: nobody to send to
        pass
    return response


async def _chunked(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    body = json.dumps(completion(seen, behaviour)).encode()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for start in range(0, len(body), behaviour.chunk):
        await response.write(body[start : start + behaviour.chunk])
    await response.write_eof()
    return response


def _status(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    headers = {}
    if behaviour.retry_after is not None:
        headers["Retry-After"] = f"{behaviour.retry_after:g}"
    error = {"message": behaviour.message, "type": "scripted", "code": behaviour.status}
    return web.json_response({"error": error}, status=behaviour.status, headers=headers)


def _reset(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    if request.transport is not None:
        request.transport.abort()
    return web.Response(status=200)


def _garbage(request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
    from aiohttp import web

    return web.Response(text="{not json", content_type="application/json")


_RESPONDERS: dict[str, Callable[[Any, SeenRequest, Behaviour], Any]] = {
    "reply": _reply,
    "status": _status,
    "reset": _reset,
    "garbage": _garbage,
    "drip": _drip,
    "chunked": _chunked,
}


class LoopbackServer:
    """The server, running its own event loop in a daemon thread.

    Use as a context manager. ``url`` is the OpenAI-style base (ends in ``/v1``);
    ``requests`` lists every request seen; ``per_key`` counts them by case key.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        delay_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        key: Callable[[dict[str, Any]], str] = question_key,
        record: bool = True,
    ) -> None:
        self.script = script or Script()
        #: keep every request (its body and headers); else only count them.
        self.record = record
        self.served = 0
        self.delay_s = delay_s
        self.host = host
        self.port = port
        self.key = key
        self.requests: list[SeenRequest] = []
        #: requests being answered now, and the most there ever were at once.
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    # ---------------------------------------------------------------- requests

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def per_key(self) -> Counter[str]:
        with self._lock:
            return Counter(r.key for r in self.requests)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests) if self.record else self.served

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()
            self.served = 0
            self.max_in_flight = self.in_flight

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            return web.json_response({"error": {"message": "request body is not JSON"}}, status=400)
        key = self.key(body)
        with self._lock:
            seen = SeenRequest(
                index=len(self.requests) if self.record else self.served,
                key=key,
                body=body,
                authorization=request.headers.get("Authorization"),
                time=time.monotonic(),
                raw=raw,
                headers=dict(request.headers) if self.record else {},
            )
            self.served += 1
            if self.record:
                self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._respond(request, seen, self.script.next(key, body))
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _respond(self, request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
        delay = behaviour.delay_s or self.delay_s
        if delay:
            await asyncio.sleep(delay)
        response = _RESPONDERS[behaviour.kind](request, seen, behaviour)
        return await response if asyncio.iscoroutine(response) else response

    # --------------------------------------------------------------- lifecycle

    def add_routes(self, app: Any) -> None:
        """More endpoints on the server's aiohttp application (for subclasses)."""

    async def _serve(self) -> None:
        from aiohttp import web

        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        self.add_routes(app)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, backlog=1024)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._run, name="loopback-server", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"loopback server failed to start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes; print ``READY <url>`` once listening."""
    parser = argparse.ArgumentParser(prog="python tests/support/loopback.py", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--label", default="supports", help="the label every reply carries")
    args = parser.parse_args(argv)
    server = LoopbackServer(
        Script(default=label_reply(args.label)), delay_s=args.delay, port=args.port, record=False
    )
    server.start()
    print(f"READY {server.url}", flush=True)
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    finally:
        print(f"SERVED {server.count}", flush=True)
        server.stop()


if __name__ == "__main__":
    main()
