"""The direct route's own HTTP/1.1 client against real loopback servers: the
scripted OpenAI-compatible one (keep-alive, the pool's bound, 429 with
``Retry-After``, 500, resets, a body that is not JSON, chunked and slow replies)
and a raw socket server for what an HTTP library must also read (interim replies,
chunk extensions and trailers, bodies up to the end of the connection, gzip, a
connection closed while idle, TLS), and which client a proxy in the environment
chooses."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from support.loopback import (
    LoopbackServer,
    Script,
    chunked,
    garbage,
    label_reply,
    reset,
    slow,
    status,
)
from tiap.judge.failures import ProviderStatusError, classify, retry_after_s
from tiap.judge.panel import JudgeSpec
from tiap.judge.routes import http_pool
from tiap.judge.routes.http_pool import HttpClient, Pool, target
from tiap.judge.routes.http_wire import ProtocolError, ServerDisconnected
from tiap.judge.routes.openai_http import HttpClients, ProxiedClient, send
from tiap.judge.routes.openai_request import Endpoint, sdk_dumps

BIG = 1 << 20
MESSAGES = [{"role": "user", "content": "<question>\nq0\n</question>\nIs it supported? é"}]


def body(i: int = 0) -> bytes:
    messages = [{"role": "user", "content": f"<question>\nq{i}\n</question>"}]
    return json.dumps({"model": "m", "messages": messages}).encode()


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(30):  # a hang fails the test rather than the suite
            return await main()

    return asyncio.run(bounded())


def test_calls_share_one_kept_alive_connection_and_send_exact_bytes() -> None:
    with LoopbackServer() as server:
        url = server.url + "/chat/completions"

        async def main() -> tuple[list[int], int]:
            client = HttpClient({"User-Agent": "tiap-test", "Authorization": "Bearer sk-123"})
            try:
                got = [await client.post(url, body(i), lambda s: BIG) for i in range(5)]
                (pool,) = client.pools.values()
                return [r.status for r in got], pool.opened
            finally:
                await client.close()

        statuses, opened = run(main)
    assert statuses == [200] * 5
    assert opened == 1  # one connection carried all five
    assert [r.raw for r in server.requests] == [body(i) for i in range(5)]
    headers = server.requests[0].headers
    assert headers["Accept-Encoding"] == "identity"
    assert headers["Content-Length"] == str(len(body(0)))
    assert headers["Host"] == f"127.0.0.1:{server.port}"
    assert headers["Authorization"] == "Bearer sk-123"


def test_the_pool_never_has_more_connections_in_use_than_its_bound() -> None:
    with LoopbackServer(delay_s=0.2) as server:
        url = server.url + "/chat/completions"

        async def main() -> tuple[int, int]:
            client = HttpClient({}, max_connections=2)
            try:
                await asyncio.gather(*(client.post(url, body(i), lambda s: BIG) for i in range(6)))
                (pool,) = client.pools.values()
                return pool.opened, len(pool.idle)
            finally:
                await client.close()

        opened, idle = run(main)
    assert server.max_in_flight == 2
    assert opened == 2
    assert idle == 2  # both kept for the next call
    assert server.count == 6


def _send(server: LoopbackServer, *, timeout_s: float = 5.0, cap: int = 64 * 1024) -> Any:
    """One direct-route attempt (outside a run: its own client) at ``server``."""
    point = Endpoint("openai", server.url + "/chat/completions", b'{"messages":', b"}", sdk_dumps)
    judge = JudgeSpec(name="j", model="openai/m", api_base=server.url)

    async def main() -> Any:
        return await send(
            {"messages": MESSAGES},
            point,
            judge,
            api_key="sk-secret-key",
            timeout_s=timeout_s,
            max_reply_bytes=cap,
        )

    return run(main)


def test_statuses_resets_garbage_and_slowness_fail_as_the_fault_tests_expect() -> None:
    script = Script(always=[status(429, retry_after=2), status(500), reset(), garbage(), slow(1.0)])
    with LoopbackServer(script) as server:
        outcomes: list[BaseException] = []
        for _ in range(5):
            try:
                _send(server, timeout_s=0.3)
            except Exception as exc:  # every one of them fails; how is checked below
                outcomes.append(exc)
        ok = _send(server)  # and then a reply goes through
    limited, failed, dropped, broken, late = outcomes
    assert len(outcomes) == 5
    assert isinstance(limited, ProviderStatusError)
    assert limited.status_code == 429
    assert retry_after_s(limited) == 2.0
    assert "error" in str(limited)
    expected = [
        (limited, "rate_limited", 429),
        (failed, "server_error", 500),
        (dropped, "connection_error", None),
        (broken, "server_error", None),
        (late, "timeout", 408),
    ]
    for exc, reason, code in expected:
        failure = classify(exc, ["sk-secret-key"])
        assert (failure.reason, failure.status, failure.retryable) == (reason, code, True)
        assert "sk-secret-key" not in failure.message
    assert isinstance(dropped, ServerDisconnected)
    assert ok.record["content"] == label_reply("supports").content
    assert ok.record["usage"]["prompt_tokens"] > 0
    assert server.requests[0].raw == b'{"messages":' + sdk_dumps(MESSAGES) + b"}"


def test_a_chunked_reply_is_read_whole_and_the_connection_kept() -> None:
    content = json.dumps({"rationale": "r" * 300, "label": "partial"})
    with LoopbackServer(
        Script(always=[chunked(content, chunk=7), chunked(content, chunk=1000)])
    ) as server:
        url = server.url + "/chat/completions"

        async def main() -> tuple[list[dict[str, Any]], int]:
            client = HttpClient({})
            try:
                got = [await client.post(url, body(i), lambda s: BIG) for i in range(3)]
                (pool,) = client.pools.values()
                return [json.loads(r.body) for r in got], pool.opened
            finally:
                await client.close()

        replies, opened = run(main)
    assert [r["choices"][0]["message"]["content"] for r in replies[:2]] == [content, content]
    assert replies[2]["choices"][0]["message"]["content"] == label_reply("supports").content
    assert opened == 1


def test_a_reply_past_the_limit_is_cut_and_its_connection_dropped() -> None:
    content = "x" * 5000
    with LoopbackServer(Script(default=label_reply("supports", rationale=content))) as server:
        url = server.url + "/chat/completions"

        async def main() -> tuple[Any, Any, int]:
            client = HttpClient({})
            try:
                cut = await client.post(url, body(), lambda s: 1000)
                whole = await client.post(url, body(), lambda s: BIG)
                (pool,) = client.pools.values()
                return cut, whole, pool.opened
            finally:
                await client.close()

        cut, whole, opened = run(main)
    assert cut.more
    assert len(cut.body) == 1000
    assert not whole.more
    assert len(whole.body) > 5000
    assert cut.body[40:] == whole.body[40:1000]  # (past the reply's own id)
    assert opened == 2  # the cut one's rest was never read: its connection not reused


def test_a_call_past_its_deadline_drops_its_connection() -> None:
    with LoopbackServer(Script(always=[slow(1.0)])) as server:
        url = server.url + "/chat/completions"

        async def main() -> tuple[int, int]:
            client = HttpClient({})
            try:
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.2):
                        await client.post(url, body(), lambda s: BIG)
                ok = await client.post(url, body(), lambda s: BIG)
                (pool,) = client.pools.values()
                return ok.status, pool.opened
            finally:
                await client.close()

        assert run(main) == (200, 2)


# ------------------------------------------------------------- raw server


#: a reply after which the raw server closes the connection
Closing = tuple[bytes]


class RawServer:
    """A loopback TCP server answering each request on a connection with the next
    of ``replies`` (raw bytes; ``None``: close the connection instead; ``(bytes,)``:
    that reply, then close)."""

    def __init__(self, *replies: bytes | Closing | None, tls: ssl.SSLContext | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[bytes] = []
        self.connections = 0
        self.tls = tls

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(length))
                reply = self.replies.pop(0)
                if reply is None:
                    break
                writer.write(reply[0] if isinstance(reply, tuple) else reply)
                await writer.drain()
                if isinstance(reply, tuple):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        port = self.server.sockets[0].getsockname()[1]
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{port}/v1/chat/completions"

    async def stop(self) -> None:
        self.server.close()


async def exchange(server: RawServer, n: int, limit: int = BIG) -> tuple[list[Any], int]:
    url = await server.start()
    client = HttpClient({})
    try:
        got = []
        for i in range(n):
            try:
                got.append(await client.post(url, body(i), lambda s: limit))
            except (ConnectionError, ssl.SSLError) as exc:
                got.append(exc)
        (pool,) = client.pools.values()
        return got, pool.opened
    finally:
        await client.close()
        await server.stop()


def test_interim_replies_chunk_extensions_trailers_and_bodies_to_the_end() -> None:
    server = RawServer(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n"
        b"4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nTrailer: t\r\n\r\n",
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
        (b"HTTP/1.0 200 OK\r\n\r\nto the end",),
    )

    async def main() -> tuple[list[Any], int]:
        got, opened = [], 0
        server_url = await server.start()
        client = HttpClient({})
        try:
            for i in range(3):
                got.append(await client.post(server_url, body(i), lambda s: BIG))
            opened = next(iter(client.pools.values())).opened
        finally:
            await client.close()
            await server.stop()
        return got, opened

    (first, second, third), opened = run(main)
    assert (first.status, first.body, first.headers["x-a"]) == (200, b"abcdefg", "1, 2")
    assert (second.status, second.body) == (201, b"hi")
    assert third.body == b"to the end"
    # the chunked reply kept its connection; "Connection: close" did not
    assert opened == 2


def test_gzip_bodies_are_decompressed_and_broken_replies_are_connection_errors() -> None:
    packed = gzip.compress(b'{"ok": true}')
    server = RawServer(
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
        % (len(packed), packed),
        b"SMTP ready\r\n\r\n",
    )
    got, _ = run(lambda: exchange(server, 2))
    assert got[0].body == b'{"ok": true}'
    assert isinstance(got[1], ProtocolError)
    assert classify(got[1]).reason == "connection_error"


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    # the first connection is closed after its reply (no header says it will be)
    server = RawServer((ok,), ok)

    async def main() -> tuple[list[bytes], int]:
        url = await server.start()
        client = HttpClient({})
        try:
            first = await client.post(url, body(0), lambda s: BIG)
            await asyncio.sleep(0.05)  # the close arrives while the connection is idle
            second = await client.post(url, body(1), lambda s: BIG)
            return [first.body, second.body], next(iter(client.pools.values())).opened
        finally:
            await client.close()
            await server.stop()

    bodies, opened = run(main)
    assert bodies == [b"ok", b"ok"]
    assert opened == 2
    assert server.connections == 2


def test_a_reply_cut_off_mid_body_is_a_server_disconnect() -> None:
    server = RawServer((b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial",))
    got, _ = run(lambda: exchange(server, 1))
    assert isinstance(got[0], ServerDisconnected)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_is_spoken_over_tls_with_the_certificate_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    # not trusted: the handshake fails
    http_pool._tls.cache_clear()
    got, _ = run(lambda: exchange(RawServer(ok, tls=tls), 1))
    assert isinstance(got[0], ssl.SSLError)
    # trusted (the environment's certificate file): the reply is read over TLS
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    http_pool._tls.cache_clear()
    try:
        got, _ = run(lambda: exchange(RawServer(ok, ok, tls=tls), 2))
    finally:
        http_pool._tls.cache_clear()
    assert [r.body for r in got] == [b"ok", b"ok"]


def test_header_values_with_line_breaks_are_refused_without_showing_them() -> None:
    client = HttpClient({"Authorization": "Bearer sk-abc\r\nX-Evil: 1"})
    with pytest.raises(ValueError, match="holds a line break") as caught:
        client._route("http://127.0.0.1:9/v1/chat/completions")
    assert "sk-abc" not in str(caught.value)


def test_targets_and_host_headers() -> None:
    assert target("https://api.openai.com/v1/chat/completions").host_header == "api.openai.com"
    where = target("http://[::1]:8080/v1/chat/completions?x=1")
    assert (where.host, where.port, where.path) == ("::1", 8080, "/v1/chat/completions?x=1")
    assert where.host_header == "[::1]:8080"
    with pytest.raises(ValueError, match="not an http"):
        target("ftp://example.com/")
    with pytest.raises(ValueError, match="at least one"):
        Pool(where, max_connections=0)


def test_a_proxy_in_the_environment_takes_aiohttp_and_no_proxy_exempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)

    async def kinds() -> list[type]:
        clients = HttpClients()
        try:
            return [
                type(clients.client(base, "k"))
                for base in ("http://127.0.0.1:9/v1", "https://api.example.com/v1")
            ]
        finally:
            await clients.close()

    assert run(kinds) == [HttpClient, HttpClient]
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert run(kinds) == [HttpClient, ProxiedClient]
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert run(kinds) == [HttpClient, ProxiedClient]


def test_the_proxy_client_reads_replies_as_the_own_client_does() -> None:
    content = "x" * 5000
    with LoopbackServer(Script(default=label_reply("supports", rationale=content))) as server:
        url = server.url + "/chat/completions"

        async def main() -> list[tuple[int, bool, int]]:
            own, proxied = HttpClient({}), ProxiedClient(server.url, {})
            try:
                got = []
                for client in (own, proxied):
                    for limit in (1000, BIG):
                        r = await client.post(url, body(), lambda s, limit=limit: limit)
                        got.append((r.status, r.more, len(r.body)))
                return got
            finally:
                await own.close()
                await proxied.close()

        got = run(main)
    assert got[:2] == got[2:]
    assert got[0] == (200, True, 1000)
