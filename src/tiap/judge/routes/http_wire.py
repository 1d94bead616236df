"""One HTTP/1.1 connection of the direct route's client: an asyncio protocol that
sends a request and reads its reply (:mod:`tiap.judge.routes.http_pool` pools them).

The reply is parsed as it arrives (no task, no stream object per call): its status
line and headers (at most :data:`HEAD_BYTES`), then its body, framed by
``Content-Length``, by ``Transfer-Encoding: chunked``, or by the end of the
connection. The caller says how much of a body it wants for a status; a body longer
than that is cut there (:attr:`Response.more`) and the connection is dropped rather
than read to its end. A body sent compressed although the request asked for none
(``Accept-Encoding: identity``) is decompressed when it is gzip or deflate.

Failures are the standard library's connection errors, so they are classified as
any transport's (:mod:`tiap.judge.failures`): the server closing or resetting the
connection before the reply is complete is a :class:`ServerDisconnected`, a reply
that is not HTTP/1.x a :class:`ProtocolError` (both :class:`ConnectionError`:
``connection_error``, retried).
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

#: the most bytes of a reply's status line and headers read.
HEAD_BYTES = 64 * 1024
#: the longest chunk-size line of a chunked body.
_LINE_BYTES = 4096
_NO_BODY = frozenset({204, 304})


class ServerDisconnected(ConnectionError):
    """The server closed (or reset) the connection before its reply was complete."""


class ProtocolError(ConnectionError):
    """What the server sent is not an HTTP/1.x reply."""


@dataclass(frozen=True)
class Response:
    """A reply: its status, its headers (names in lower case, repeated ones joined
    with ``", "``), its body (or its first part) and whether there was more."""

    status: int
    headers: dict[str, str]
    body: bytes
    more: bool = False


def _head(data: bytes) -> tuple[int, dict[str, str], bool]:
    """``(status, headers, keep-alive by default)`` of a reply's head (no blank line)."""
    lines = data.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    version = parts[0]
    if len(parts) < 2 or not version.startswith(b"HTTP/1.") or len(parts[1]) != 3:
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    if not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP status: {parts[1]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip() or line[:1] in b" \t":
            raise ProtocolError(f"not an HTTP header line: {line[:80]!r}")
        key = name.decode("latin-1").lower()
        text = value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return int(parts[1]), headers, version != b"HTTP/1.0"


def _length(headers: dict[str, str]) -> int | None:
    value = headers.get("content-length")
    if value is None:
        return None
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise ProtocolError(f"not a Content-Length: {value[:80]!r}")
    return int(values.pop())


def _keep_alive(headers: dict[str, str], default: bool) -> bool:
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    if "close" in tokens:
        return False
    return default or "keep-alive" in tokens


class _Reading:
    """The state of one reply being read (see :meth:`Wire.data_received`)."""

    def __init__(self, limit_for: Callable[[int], int]) -> None:
        self.limit_for = limit_for
        self.head: tuple[int, dict[str, str], bool] | None = None
        self.limit = 0
        #: ``length``, ``chunked`` or ``eof``; what is left of the body or chunk
        self.framing = ""
        self.left = 0
        #: a chunked body: where in it (``size``, ``data``, ``crlf``, ``trailer``)
        self.part = "size"
        self.body = bytearray()
        self.reusable = False
        self.scanned = 0


class Wire(asyncio.Protocol):
    """One connection: :meth:`exchange` sends a request and returns its reply; at
    most one at a time. ``reusable`` after a reply says whether another may follow."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.reading: _Reading | None = None
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.reusable = True
        self.idle_since = time.monotonic()
        self._paused: asyncio.Future[None] | None = None

    # ------------------------------------------------------------- protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)
        self._advance(eof=True, exc=exc)

    def eof_received(self) -> bool:
        self.reusable = False
        self._advance(eof=True)
        return False  # the transport closes itself

    def pause_writing(self) -> None:
        if self._paused is None or self._paused.done():
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.reading is None:  # nothing was asked: an idle connection is not reused
            self.reusable = False
            return
        self._advance()

    # ---------------------------------------------------------------- calls

    def usable(self, now: float, idle_s: float) -> bool:
        """Whether a pooled (idle) connection can carry another request."""
        t = self.transport
        return (
            self.reusable
            and not self.closed
            and not self.buf
            and t is not None
            and not t.is_closing()
            and now - self.idle_since < idle_s
        )

    async def exchange(self, request: bytes, limit_for: Callable[[int], int]) -> Response:
        """Send ``request`` (its head and body) and read the reply; ``limit_for(status)``:
        the most bytes of its body wanted. Cancelling drops the connection."""
        if self.transport is None or self.closed:
            raise ServerDisconnected("the connection is closed")
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        self.reading = _Reading(limit_for)
        self.reusable = False  # until the reply has been read whole
        try:
            self.transport.write(request)
            if self._paused is not None and not self._paused.done():
                await self._paused  # a large request: sent as the server reads it
            return await waiter
        finally:
            self.reading = self.waiter = None
            if not self.reusable:
                self.close()
            else:
                self.idle_since = time.monotonic()

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.abort()
            self.closed = True

    # -------------------------------------------------------------- parsing

    def _advance(self, eof: bool = False, exc: BaseException | None = None) -> None:
        """Read what has arrived of the reply; resolve the waiter when it is complete
        (or broken)."""
        reading, waiter = self.reading, self.waiter
        if reading is None or waiter is None or waiter.done():
            return
        try:
            done = self._parse(reading, eof)
        except ConnectionError as error:
            waiter.set_exception(error)
            return
        if done is not None:
            waiter.set_result(done)
        elif eof:
            detail = f" ({exc})" if exc else ""
            waiter.set_exception(
                ServerDisconnected(f"the server closed the connection mid-reply{detail}")
            )

    def _finish(self, r: _Reading, more: bool) -> Response:
        """The reply read (``more``: its body cut at the limit, the rest not read)."""
        status, headers, _ = r.head or (0, {}, False)
        body = bytes(r.body[: r.limit]) if more else bytes(r.body)
        coding = headers.get("content-encoding", "identity").strip().lower()
        if coding and coding != "identity":
            body, cut = _decoded(body, coding, r.limit)
            more = more or cut
        # a cut reply leaves the rest unread: the connection cannot carry another
        self.reusable = r.reusable and not more and not self.buf
        return Response(status, headers, body, more)

    def _parse(self, r: _Reading, eof: bool) -> Response | None:
        if r.head is None and not self._parse_head(r):
            if len(self.buf) > HEAD_BYTES:
                raise ProtocolError(f"a reply's head longer than {HEAD_BYTES} bytes")
            return None
        if r.framing == "length":
            take = min(r.left, len(self.buf))
            r.body += self.buf[:take]
            del self.buf[:take]
            r.left -= take
            done = r.left == 0
        elif r.framing == "chunked":
            done = self._parse_chunks(r)
        else:  # up to the end of the connection
            r.body += self.buf
            self.buf.clear()
            done = eof
        if len(r.body) > r.limit:
            return self._finish(r, more=True)
        return self._finish(r, more=False) if done else None

    def _parse_head(self, r: _Reading) -> bool:
        end = self.buf.find(b"\r\n\r\n", max(0, r.scanned - 3))
        if end < 0:
            r.scanned = len(self.buf)
            return False
        status, headers, keep = _head(bytes(self.buf[:end]))
        del self.buf[: end + 4]
        r.scanned = 0
        if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
            return self._parse_head(r)
        r.head = (status, headers, keep)
        r.limit = r.limit_for(status)
        coding = headers.get("transfer-encoding", "").lower()
        length = _length(headers)
        if coding:
            chunked = coding.rsplit(",", 1)[-1].strip() == "chunked"
            r.framing = "chunked" if chunked else "eof"
            r.reusable = chunked and length is None and _keep_alive(headers, keep)
        elif length is not None or status in _NO_BODY:
            r.framing, r.left = "length", length or 0
            r.reusable = _keep_alive(headers, keep)
        else:
            r.framing = "eof"
        return True

    def _parse_chunks(self, r: _Reading) -> bool:
        """Decode what has arrived of a chunked body; True at its end."""
        buf = self.buf
        while True:
            if r.part == "data":
                take = min(r.left, len(buf))
                r.body += buf[:take]
                del buf[:take]
                r.left -= take
                if r.left or len(r.body) > r.limit:
                    return False
                r.part = "crlf"
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > _LINE_BYTES:
                    raise ProtocolError("a chunk's size line is too long")
                return False
            line = bytes(buf[:end])
            del buf[: end + 2]
            if r.part == "crlf":
                if line:
                    raise ProtocolError("a chunk does not end where its size says")
                r.part = "size"
            elif r.part == "trailer":
                if not line:
                    return True
            else:
                r.left = _chunk_size(line)
                r.part = "data" if r.left else "trailer"


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip()
    try:
        value = int(size, 16)
    except ValueError:
        value = -1
    if value < 0 or not size or len(size) > 16:
        raise ProtocolError(f"not a chunk size: {line[:40]!r}")
    return value


def _decoded(body: bytes, coding: str, limit: int) -> tuple[bytes, bool]:
    """A body sent gzip- or deflate-compressed, decompressed up to ``limit`` bytes
    (and whether there was more); any other coding is not a reply tiap can read."""
    if coding in ("gzip", "x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif coding == "deflate":
        wbits = zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS
    else:
        raise ProtocolError(f"a reply in an encoding that was not asked for: {coding[:40]!r}")
    try:
        inflate = zlib.decompressobj(wbits)
        data = inflate.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(f"a compressed reply that does not decompress: {exc}") from exc
    return data[:limit], len(data) > limit
