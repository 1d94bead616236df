"""The direct route's HTTP client: keep-alive HTTP/1.1 connections, pooled per host.

A lean client of tiap's own on asyncio (:mod:`tiap.judge.routes.http_wire` reads
the replies), for the one kind of request the direct route makes: a ``POST`` of a
JSON body to a fixed URL, its reply read up to a bound. Per :class:`HttpClient`
(one set of headers: one API key) a :class:`Pool` per host keeps the connections
open between calls (at most :data:`MAX_CONNECTIONS` in use at once per host, a call
past that waiting for one; idle ones closed after :data:`IDLE_S` seconds). The
request's head is built once per URL; a call adds only its ``Content-Length`` and
body. ``https`` URLs go over TLS (the system's certificates, the host name
checked). Requests ask for no compression (``Accept-Encoding: identity``).

There are no timeouts and no retries here: the caller's deadline covers a whole
call (connecting, sending, the reply), and cancelling a call drops its connection.
A connection the server closed while it was idle is found closed before it is used
and not reused. A proxy is not spoken: the direct route uses aiohttp for a base
URL the environment sends through one (:mod:`tiap.judge.routes.openai_http`).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from tiap.judge.routes.http_wire import Response, Wire

__all__ = ["IDLE_S", "MAX_CONNECTIONS", "HttpClient", "Pool", "Response", "Target"]

#: the most connections in use at once per host and client.
MAX_CONNECTIONS = 512
#: seconds an idle connection is kept for another call.
IDLE_S = 15.0
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """Where a URL's requests go: scheme, host, port, and the request path."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS[self.scheme] == self.port
        return host if default else f"{host}:{self.port}"


@lru_cache(maxsize=64)
def target(url: str) -> Target:
    """A URL's :class:`Target` (``http`` or ``https`` only)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(scheme, parts.hostname, parts.port or _DEFAULT_PORTS[scheme], path)


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class Pool:
    """The connections to one host (see the module docstring)."""

    def __init__(
        self, where: Target, *, max_connections: int = MAX_CONNECTIONS, idle_s: float = IDLE_S
    ) -> None:
        if max_connections < 1:
            raise ValueError("a pool holds at least one connection")
        self.where = where
        self.idle_s = idle_s
        self.idle: deque[Wire] = deque()
        self.in_use: set[Wire] = set()
        self.opened = 0  # connections opened so far (for tests and figures)
        self._slots = asyncio.Semaphore(max_connections)

    async def acquire(self) -> Wire:
        """A connection for one request: the most recently used idle one that is
        still open, else a new one."""
        await self._slots.acquire()
        try:
            conn = self._idle_one() or await self._open()
        except BaseException:
            self._slots.release()
            raise
        self.in_use.add(conn)
        return conn

    def _idle_one(self) -> Wire | None:
        now = time.monotonic()
        while self.idle:
            conn = self.idle.pop()
            if conn.usable(now, self.idle_s):
                return conn
            conn.close()
        return None

    async def _open(self) -> Wire:
        where = self.where
        tls = where.scheme == "https"
        _, conn = await asyncio.get_running_loop().create_connection(
            Wire,
            where.host,
            where.port,
            ssl=_tls() if tls else None,
            server_hostname=where.host if tls else None,
        )
        self.opened += 1
        return conn

    def release(self, conn: Wire) -> None:
        """Give a connection back after its request: kept when it can carry another."""
        self.in_use.discard(conn)
        self._slots.release()
        if conn.reusable and not conn.closed:
            self.idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for conn in [*self.idle, *self.in_use]:
            conn.close()
        self.idle.clear()
        self.in_use.clear()


def _header_lines(headers: Mapping[str, str]) -> str:
    lines = []
    for name, value in headers.items():
        if any(c in f"{name}{value}" for c in "\r\n\0"):
            # (the value is not shown: it may be a key)
            raise ValueError(f"the request header {name!r} holds a line break")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines)


class HttpClient:
    """POSTs with one set of headers, over a pool per host (see the module docstring)."""

    def __init__(
        self, headers: Mapping[str, str], *, max_connections: int = MAX_CONNECTIONS
    ) -> None:
        self.headers = {**headers, "Accept-Encoding": "identity"}
        self.max_connections = max_connections
        self.pools: dict[tuple[str, str, int], Pool] = {}
        self._heads: dict[str, tuple[Pool, bytes]] = {}
        self.closed = False

    def _route(self, url: str) -> tuple[Pool, bytes]:
        """The pool and the request head (up to its ``Content-Length`` value) for ``url``."""
        found = self._heads.get(url)
        if found is None:
            where = target(url)
            key = (where.scheme, where.host, where.port)
            pool = self.pools.get(key)
            if pool is None:
                pool = self.pools[key] = Pool(where, max_connections=self.max_connections)
            head = (
                f"POST {where.path} HTTP/1.1\r\nHost: {where.host_header}\r\n"
                f"{_header_lines(self.headers)}Content-Length: "
            )
            found = self._heads[url] = (pool, head.encode("latin-1"))
        return found

    async def post(self, url: str, body: bytes, limit_for: Callable[[int], int]) -> Response:
        """POST ``body`` to ``url``; the reply, its body read up to ``limit_for(status)``
        bytes. Raises :class:`ConnectionError` (and other :class:`OSError`) when the
        connection fails, :class:`ssl.SSLError` for TLS."""
        if self.closed:
            raise RuntimeError("the HTTP client is closed")
        pool, head = self._route(url)
        request = b"%s%d\r\n\r\n%s" % (head, len(body), body)
        conn = await pool.acquire()
        try:
            return await conn.exchange(request, limit_for)
        finally:
            pool.release(conn)

    async def close(self) -> None:
        self.closed = True
        for pool in self.pools.values():
            pool.close()
        await asyncio.sleep(0)  # the transports' close callbacks run
