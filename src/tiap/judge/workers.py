"""Model calls in worker processes, so that litellm's per-call CPU uses every core.

litellm spends several milliseconds of CPU on every call (building the request,
its cost and logging bookkeeping; see ``benchmarks/judge_throughput.py``), so one
process saturates one core long before a provider's latency is the limit. A
:class:`CallPool` runs ``size`` worker processes (``python -m tiap.judge.workers``),
each an event loop calling :func:`tiap.judge.call.call_model` (same litellm path,
same tenacity retries). The parent keeps planning, budgets and *all* storage: a
worker only returns what a call produced, and the parent commits it as soon as
it arrives, exactly as for a call made in process. So ``kill -9`` of the parent
loses no answered call that an in-process run would have kept, and the next run
resumes the same way.

Protocol: JSON lines over the worker's stdin and stdout. The first line sets the
worker up (``{"panel": ..., "keys": {judge: key}, "secrets": [...]}``; keys
travel only through the pipe, never to disk or the command line), the worker
answers ``{"ready": true}`` once litellm is imported; then requests
``{"id", "judge", "kwargs"}`` and replies ``{"id", "outcome"}``. A worker ignores
Ctrl-C (the parent handles it) and exits when its stdin closes: when the parent
is done, or was killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import stat
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from tiap import runtime
from tiap.errors import TiapError
from tiap.judge.call import CallOutcome
from tiap.judge.failures import Failure, scrub
from tiap.judge.panel import Panel
from tiap.judge.progress import UNAWAITED

#: the longest JSON line (a request carries a case's whole prompt).
_LINE_LIMIT = 256 * 1024 * 1024
_EXITED = (
    "a judge worker process exited unexpectedly (exit code {code}); every answered call "
    "is stored: run the command again to complete the rest"
)


def _outcome_json(outcome: CallOutcome) -> dict[str, Any]:
    return dataclasses.asdict(outcome)


def _outcome_from_json(data: Mapping[str, Any]) -> CallOutcome:
    fields = dict(data)
    failure = fields.pop("failure", None)
    return CallOutcome(**fields, failure=None if failure is None else Failure(**failure))


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: dict[int, asyncio.Future[CallOutcome]] = {}
        self.reader: asyncio.Task[None] | None = None


class CallPool:
    """``size`` worker processes making model calls for the parent.

    Use as ``async with CallPool(size, panel, keys) as pool: await pool.call(...)``.
    """

    def __init__(self, size: int, panel: Panel, keys: Mapping[str, str | None]) -> None:
        if size < 1:
            raise ValueError("a call pool needs at least one worker")
        self.size = size
        self.panel = panel
        self.keys = dict(keys)
        self._workers: list[_Worker] = []
        self._next_id = 0

    async def __aenter__(self) -> CallPool:
        try:
            for _ in range(self.size):
                await self._spawn()
            await asyncio.gather(*(self._ready(w) for w in self._workers))
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _spawn(self) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tiap.judge.workers",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        worker = _Worker(proc)
        self._workers.append(worker)
        setup = {
            "panel": self.panel.model_dump(mode="json"),
            "keys": self.keys,
            "secrets": [k for k in self.keys.values() if k],
        }
        if proc.stdin is None:  # pragma: no cover - created with stdin=PIPE
            raise RuntimeError("worker process without stdin")
        proc.stdin.write(_dumps(setup))
        await proc.stdin.drain()

    async def _ready(self, worker: _Worker) -> None:
        """Wait for the worker's ``{"ready": true}`` (litellm imported), then read."""
        line = await worker.proc.stdout.readline() if worker.proc.stdout else b""
        if not line or not json.loads(line).get("ready"):
            code = await worker.proc.wait()
            raise TiapError(f"a judge worker process failed to start (exit code {code})")
        worker.reader = asyncio.create_task(self._read(worker))

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.proc.stdout
        while stdout is not None:
            line = await stdout.readline()
            if not line:
                break
            reply = json.loads(line)
            future = worker.pending.pop(reply["id"], None)
            if future is None or future.done():
                continue
            if "error" in reply:
                future.set_exception(TiapError(f"a judge worker failed: {reply['error']}"))
            else:
                future.set_result(_outcome_from_json(reply["outcome"]))
        code = await worker.proc.wait()
        error = TiapError(_EXITED.format(code=code))
        for future in worker.pending.values():
            if not future.done():
                future.set_exception(error)
        worker.pending.clear()

    @property
    def pids(self) -> list[int]:
        """Process ids of the workers."""
        return [w.proc.pid for w in self._workers]

    async def call(self, judge: str, kwargs: dict[str, Any]) -> CallOutcome:
        """Make one call (all its attempts) in the least busy worker."""
        worker = min(self._workers, key=lambda w: len(w.pending))
        stdin = worker.proc.stdin
        if worker.proc.returncode is not None or stdin is None or stdin.is_closing():
            raise TiapError(_EXITED.format(code=worker.proc.returncode))
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[CallOutcome] = asyncio.get_running_loop().create_future()
        worker.pending[request_id] = future
        try:
            stdin.write(_dumps({"id": request_id, "judge": judge, "kwargs": kwargs}))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            worker.pending.pop(request_id, None)
            raise TiapError(_EXITED.format(code=worker.proc.returncode)) from None
        try:
            return await future
        finally:
            worker.pending.pop(request_id, None)

    async def close(self) -> None:
        """Close every worker's stdin (it exits) and wait for it; kill a stuck one."""
        for worker in self._workers:
            stdin = worker.proc.stdin
            if stdin is not None and not stdin.is_closing():
                stdin.close()
        for worker in self._workers:
            try:
                await asyncio.wait_for(worker.proc.wait(), timeout=10.0)
            except TimeoutError:
                worker.proc.kill()
                await worker.proc.wait()
            if worker.reader is not None:
                await asyncio.gather(worker.reader, return_exceptions=True)
        self._workers.clear()


# ------------------------------------------------------------------ worker side


async def _serve() -> None:
    from tiap.judge.call import litellm_session

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout.buffer
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    first = await reader.readline()
    if not first:
        return
    setup = json.loads(first)
    panel = Panel.model_validate(setup["panel"])
    keys: dict[str, str | None] = setup["keys"]
    secrets = tuple(setup["secrets"])
    with litellm_session():
        writer.write(_dumps({"ready": True}))
        await writer.drain()
        await _answer(reader, writer, panel, keys, secrets)


async def _answer(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    panel: Panel,
    keys: dict[str, str | None],
    secrets: tuple[str, ...],
) -> None:
    """Answer requests until stdin closes."""
    from tiap.judge.call import call_model

    tasks: set[asyncio.Task[None]] = set()

    async def handle(request: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"id": request["id"]}
        try:
            outcome = await call_model(
                panel, request["kwargs"], api_key=keys.get(request["judge"]), secrets=secrets
            )
            reply["outcome"] = _outcome_json(outcome)
        except Exception as exc:  # a fault of tiap or litellm, not of the call: report it
            reply["error"] = scrub(f"{type(exc).__name__}: {exc}", secrets)
        writer.write(_dumps(reply))
        await writer.drain()

    while line := await reader.readline():
        task = asyncio.create_task(handle(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    # stdin closed: the parent is done (nothing in flight) or gone (nobody to answer).
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def main() -> None:
    """Entry point of a worker process (``python -m tiap.judge.workers``): a process
    of its own, so it applies tiap's process tuning (:mod:`tiap.runtime`) for good."""
    if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (0, 1)):
        sys.exit("python -m tiap.judge.workers: started by 'tiap judge run' (needs pipes)")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # When the parent stops (Ctrl-C), the calls in flight are cancelled; litellm has
    # by then made some coroutines it never awaits: no warning for each one.
    warnings.filterwarnings("ignore", UNAWAITED, RuntimeWarning)
    # a write error means the parent went away mid-reply: nobody to answer.
    with (
        contextlib.suppress(BrokenPipeError, ConnectionResetError),
        runtime.tuned(),
        runtime.calls_in_flight(),
    ):
        asyncio.run(_serve())


if __name__ == "__main__":
    main()
