"""Headless Chromium driven over the DevTools protocol on a loopback websocket.

Renders a local HTML file the way a reader's browser would and reports what a
test checks: console errors and uncaught exceptions, every ``<svg>``'s box, every
SVG text drawn outside its figure (a cut-off label), every element that sticks
out of the page width (after clipping by scrolling boxes), and a full-page PNG::

    report = render_page(Path("report.html"), png=Path("report.png"))
    assert not report.console_errors

Chromium is started with ``--remote-debugging-port=0`` and a private
``--user-data-dir``; the port it picked is read from the ``DevToolsActivePort``
file it writes there, and the client (aiohttp) talks to ``ws://127.0.0.1:PORT``
only. The executable is ``$TIAP_CHROMIUM``, else the first of ``chromium``,
``chromium-browser``, ``google-chrome`` on the PATH.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)
#: The tallest full-page screenshot taken (CSS pixels); longer pages are cut there.
MAX_SHOT_HEIGHT = 16000


def find_chromium() -> str | None:
    env = os.environ.get("TIAP_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class SvgBox:
    label: str
    width: float
    height: float
    #: texts drawn outside the figure: (text, how far out in px)
    cut: list[tuple[str, float]]


@dataclass
class PageReport:
    url: str
    viewport_width: float
    scroll_width: float
    console_errors: list[str] = field(default_factory=list)
    svgs: list[SvgBox] = field(default_factory=list)
    #: elements whose visible box ends right of the viewport: (description, right edge)
    overflowing: list[tuple[str, float]] = field(default_factory=list)
    png: Path | None = None
    #: the value of the caller's own expression, if one was given
    extra: Any = None


_CHECKS = r"""
(() => {
  const vw = document.documentElement.clientWidth;
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
      (el.className && typeof el.className === 'string' ? '.' + el.className : '');
  const svgs = [...document.querySelectorAll('svg')].map((s) => {
    const r = s.getBoundingClientRect();
    const cut = [];
    for (const t of s.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) continue;
      const out = Math.max(r.left - b.left, b.right - r.right, r.top - b.top, b.bottom - r.bottom);
      const shown = [...t.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join('');
      if (out > 0.5) cut.push([shown, out]);
    }
    return {label: s.getAttribute('aria-label') || '', width: r.width, height: r.height, cut};
  });
  const overflowing = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    let right = r.right;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.overflowX !== 'visible') right = Math.min(right, a.getBoundingClientRect().right);
    }
    if (right > vw + 1) overflowing.push([describe(el), right]);
  }
  return {vw, scrollWidth: document.documentElement.scrollWidth, svgs, overflowing};
})()
"""


class _Client:
    """One websocket to the browser; commands by id, events by session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._event_seen = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)
                self._event_seen.set()

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self.ws.send_str(json.dumps(message))
        reply = await asyncio.wait_for(future, 60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def wait_event(self, method: str, session: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events:
                if ev["method"] == method and ev.get("sessionId") == session:
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            self._event_seen.clear()
            try:
                await asyncio.wait_for(self._event_seen.wait(), left)
            except TimeoutError:
                continue

    async def close(self) -> None:
        self._reader.cancel()
        await self.ws.close()


def _console_errors(events: list[dict[str, Any]], session: str) -> list[str]:
    out = []
    for ev in events:
        if ev.get("sessionId") != session:
            continue
        p = ev.get("params", {})
        if ev["method"] == "Runtime.exceptionThrown":
            out.append("exception: " + str(p.get("exceptionDetails", {}).get("text")))
        elif ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console: " + " ".join(str(a.get("value")) for a in p.get("args", [])))
        elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            out.append(f"log: {entry.get('text')} ({entry.get('url', '')})")
    return out


def _wait_port(profile: Path, proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, str]:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with status {proc.returncode} before listening")
        if marker.is_file():
            lines = marker.read_text().splitlines()
            if len(lines) >= 2:
                return int(lines[0]), lines[1]
        time.sleep(0.05)
    raise TimeoutError(f"chromium wrote no {marker.name} within {timeout} s")


async def _render(
    executable: str, page: Path, png: Path | None, width: int, height: int, extra: str | None
) -> PageReport:
    with tempfile.TemporaryDirectory(prefix="tiap-chromium-") as tmp:
        profile = Path(tmp) / "profile"
        profile.mkdir()
        log = (Path(tmp) / "chromium.log").open("wb")
        proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        try:
            port, path = await asyncio.to_thread(_wait_port, profile, proc, 60.0)
            async with aiohttp.ClientSession() as http:
                ws = await http.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0)
                client = _Client(ws)
                try:
                    return await _inspect(client, page, png, width, height, extra)
                finally:
                    with contextlib.suppress(RuntimeError, TimeoutError, aiohttp.ClientError):
                        await client.send("Browser.close")
                    await client.close()
        finally:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


async def _evaluate(client: _Client, session: str, expression: str) -> Any:
    result = await client.send(
        "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
    )
    if "exceptionDetails" in result:
        raise RuntimeError(f"evaluation failed: {result['exceptionDetails'].get('text')}")
    return result["result"].get("value")


async def _inspect(
    client: _Client, page: Path, png: Path | None, width: int, height: int, extra: str | None
) -> PageReport:
    target = await client.send("Target.createTarget", {"url": "about:blank"})
    attached = await client.send(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
    )
    session = attached["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        await client.send(f"{domain}.enable", session=session)
    await client.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    url = page.resolve().as_uri()
    client.events.clear()
    await client.send("Page.navigate", {"url": url}, session=session)
    await client.wait_event("Page.loadEventFired", session)
    checks = await _evaluate(client, session, _CHECKS)
    report = PageReport(
        url=url,
        viewport_width=checks["vw"],
        scroll_width=checks["scrollWidth"],
        svgs=[
            SvgBox(s["label"], s["width"], s["height"], [tuple(c) for c in s["cut"]])
            for s in checks["svgs"]
        ],
        overflowing=[tuple(o) for o in checks["overflowing"]],
        extra=await _evaluate(client, session, extra) if extra else None,
    )
    if png is not None:
        metrics = await client.send("Page.getLayoutMetrics", session=session)
        content = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = await client.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": width,
                    "height": min(content["height"], MAX_SHOT_HEIGHT),
                    "scale": 1,
                },
            },
            session=session,
        )
        png.write_bytes(base64.b64decode(shot["data"]))
        report.png = png
    report.console_errors = _console_errors(client.events, session)
    return report


def chromium_or_skip() -> str:
    """The Chromium executable; the test is skipped (with the reason) when there is none,
    or fails when ``TIAP_REQUIRE_EXTRAS=1`` (CI installs Chromium)."""
    import pytest

    exe = find_chromium()
    if exe is not None:
        return exe
    reason = (
        "no Chromium to render the HTML reports (install Debian's chromium or set TIAP_CHROMIUM)"
    )
    if os.environ.get("TIAP_REQUIRE_EXTRAS") == "1":
        pytest.fail(f"{reason}, and TIAP_REQUIRE_EXTRAS=1 requires it")
    pytest.skip(reason)


def render_page(
    page: Path,
    *,
    png: Path | None = None,
    width: int = 1280,
    height: int = 900,
    executable: str | None = None,
    extra: str | None = None,
) -> PageReport:
    """Load ``page`` in headless Chromium and report what it shows (see the module);
    ``extra`` is a JavaScript expression whose value is returned as ``report.extra``."""
    exe = executable or find_chromium()
    if exe is None:
        raise FileNotFoundError("no chromium executable found")
    return asyncio.run(_render(exe, page, png, width, height, extra))


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file, from its header."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def assert_renders(
    page: Path, png: Path, min_figures: int, width: int = 1280, *, whole_page: bool = True
) -> PageReport:
    """Render ``page`` and assert what every report page must satisfy: no console error,
    every ``<svg>`` of the file drawn with a non-empty box and no text outside it, nothing
    wider than the page (with ``whole_page=False``: no figure wider than the page), and a
    full-page PNG written."""
    exe = chromium_or_skip()
    report = render_page(page, png=png, executable=exe, width=width)
    assert report.console_errors == []
    n_svg = len(re.findall(r"<svg ", page.read_text(encoding="utf-8")))
    assert len(report.svgs) == n_svg >= min_figures
    for box in report.svgs:
        assert box.width > 0, box.label
        assert box.height > 0, box.label
        assert box.cut == [], (box.label, box.cut)  # no label drawn outside its figure
    if whole_page:
        assert report.overflowing == []
        assert report.scroll_width <= report.viewport_width
    else:
        assert [o for o in report.overflowing if o[0].startswith(("svg", "figure"))] == []
    shot_width, shot_height = png_size(png)
    assert shot_width == width
    assert shot_height > 300
    return report
