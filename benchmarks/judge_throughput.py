"""Judge throughput: a panel against a slow loopback provider, then a cached re-run.

Setup: a loopback OpenAI-compatible server in its own process (so it does not
compete for the client's GIL) answering every request after ``--latency``
seconds; ``--cases`` cases x ``--judges`` judges (distinct model names, so no
call answers another's), concurrency ``--concurrency`` per judge, through the
whole judge path: litellm (``--route``: the litellm provider prefix of the judges'
model strings, ``openai`` by default), tiap's retry policy, ``model_calls`` and
label rows committed call by call. The calls run in ``--workers`` worker
processes, by default as many as ``tiap judge run`` would use (2 on two cores for
this run: see ``tiap.judge.runner.pool_size``); they are started, and litellm
imported (in every process), before the clock starts.

Figures (last line):

- ``wall_over_ideal``: wall time of the run divided by the ideal
  ``calls x latency / (judges x concurrency)`` (goal: at most 1.25);
- ``cached_calls_per_s``: a re-run answered entirely from ``model_calls``: a
  copy of the workspace with every label removed (the stored calls kept), run
  again; judgments per second of wall time (goal: at least 2,000/s);
- ``cpu_ms_per_call``: CPU time of the client (the parent process and its worker
  processes, without their start-up) per call in the first run.

What dominates, and why the wall-time goal is missed: litellm's CPU per call.
On the two-core machine of the goal, 10,000 calls in the ideal 6.25 s leave at
most about 1.2 ms of CPU per call for the client and the server together, but one
``litellm.acompletion`` costs several milliseconds however it is configured.
Measured here (a shared two-core machine, so +-25 %): client CPU about 11-13 ms
per call, of which

- litellm itself (``acompletion`` with ``mock_response``, no HTTP) 4-6 ms: some
  3,400 Python function calls per call: request and parameter mapping, model-info
  and cost lookups, the logging object and its standard logging payload, the
  async success handler (it runs with no callback registered), and a hop through a
  thread pool (litellm runs its synchronous ``completion`` in an executor);
- HTTP under litellm about 5 ms (``openai/``: the openai SDK, httpx and litellm's
  aiohttp transport, some 2,000 more function calls; ``hosted_vllm/``, litellm's
  own HTTP handler, makes about 19 % fewer function calls in all, and litellm's
  pure-httpx transport, ``litellm.disable_aiohttp_transport``, costs more);
- tiap's own work about 0.15 ms per judgment (the cached re-run) plus about
  0.4 ms for each call's SQLite commit (request, response and label rows), and
  about 0.5 ms of IPC per call with worker processes;
- the loopback server, in its own process, about 0.5 ms per call.

What tiap does about it (inside ``tiap.runtime.tuned()``, which the ``tiap``
command enters and so does this script): litellm's import-time objects are
frozen out of the cyclic GC and the GC runs less often while calls are in flight (GC took about
1.6 ms per call before, 0.9 ms with the freeze, 0.4 ms with both); a judge
priced in its panel (as here) passes its price to litellm, sparing a failing
price-table lookup on every call (about 19 % more function calls); and large
runs spread the calls over worker processes (one per core; the parent alone
writes SQLite, committing each call as its answer arrives), which halves the
wall time on two cores (wall/ideal about 21 in one process, about 11 with two
workers, same machine, same hour). The ``hosted_vllm`` route measured about
20 % less client CPU per call than ``openai`` (``--route``).

No documented litellm setting removes the rest. Counted in Python function calls
per call: ``no-log``, ``turn_off_message_logging`` and ``disable_token_counter``
change nothing measurable (no callbacks are registered, yet the success handler
still builds its payload); a caller-supplied ``client=`` costs more (plain
httpx); synchronous ``completion`` in threads costs the same. litellm's Rust path
does not serve chat completions in this version.

Run: ``python benchmarks/judge_throughput.py`` (``--cases 200`` for a quick look;
``--workers 0`` for one process). The last line printed is one JSON object:
``{"wall_over_ideal": r, "cached_calls_per_s": n, "cpu_ms_per_call": m}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the loopback server is test infrastructure (tests/support), not part of tiap
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import loopback

from tiap.cases import Case, EvidenceItem, Workspace, rank_bucket
from tiap.judge import parse_panel, plan_run, run_panel
from tiap.judge.plan import RunPlan
from tiap.judge.runner import execute, pool_size
from tiap.judge.workers import CallPool
from tiap.rubric import load_rubric
from tiap.runtime import tuned

KEY_ENV = "TIAP_BENCH_KEY"
HTTP = {
    "openai": "openai SDK, httpx, aiohttp",
    "hosted_vllm": "litellm's HTTP handler, httpx, aiohttp",
    "openrouter": "litellm's HTTP handler, httpx, aiohttp",
}


def make_cases(n: int) -> list[Case]:
    out = []
    for i in range(n):
        day = i % 28 + 1
        out.append(
            Case(
                case_id=f"b{i:05d}",
                dataset="bench",
                run=f"run-{i % 8}",
                store="store",
                query_id=f"q{i}",
                query_index=i,
                question=f"When did Caroline go to support group meeting number {i}?",
                answer=f"{day} May 2023",
                category="temporal",
                evidence=[
                    EvidenceItem(
                        source_id=f"D{i}:1",
                        text=f"I went to a LGBTQ support group yesterday, meeting {i}. "
                        "It was so powerful and I felt accepted by everyone there.",
                        speaker="Caroline",
                        time="8 May 2023",
                    )
                ],
                memory_id=f"m{i}",
                memory_text=f"Caroline attended an LGBTQ support group on {day} May 2023.",
                memory_source_ids=[f"D{i}:1"],
                rank=i % 60 + 1,
                rank_bucket=rank_bucket(i % 60 + 1),
                k=60,
            )
        )
    return out


def panel_text(url: str, judges: int, concurrency: int, route: str = "openai") -> str:
    lines = ['name = "bench"', "temperature = 0", "max_tokens = 100", "timeout_s = 30"]
    for j in range(judges):
        lines += [
            "[[judges]]",
            f'name = "judge-{j}"',
            f'model = "{route}/bench-model-{j}"',
            f'api_base = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            f"concurrency = {concurrency}",
            "input_cost_per_mtok = 0.15",
            "output_cost_per_mtok = 0.60",
        ]
    return "\n".join(lines) + "\n"


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, loopback.__file__, "--delay", str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"loopback server did not start: {line!r}")
    return proc, line.split()[1]


def litellm_cpu_ms(n: int = 300) -> float:
    """litellm's own CPU per call: acompletion with mock_response (no HTTP)."""
    from tiap.judge.call import litellm_module

    litellm = litellm_module()
    messages = [{"role": "system", "content": "x" * 2000}, {"role": "user", "content": "y" * 1500}]

    async def calls(k: int) -> None:
        await asyncio.gather(
            *[
                litellm.acompletion(
                    model="openai/bench-mock",
                    messages=messages,
                    mock_response='{"label": "supports"}',
                    max_retries=0,
                    temperature=0,
                    input_cost_per_token=1e-7,
                    output_cost_per_token=1e-7,
                )
                for _ in range(k)
            ]
        )

    asyncio.run(calls(30))
    start = time.process_time()
    asyncio.run(calls(n))
    return (time.process_time() - start) / n * 1000.0


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a running process, from ``/proc`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed_run(
    ws: Workspace, plan: RunPlan, workers: int
) -> tuple[Any, float, float, float, float]:
    """Run the plan with ``workers`` worker processes (started, and litellm imported
    in each, before the clock starts). Returns (summary, wall s, client CPU s, of
    which the parent's, worker start-up s); the client is the parent and its workers."""
    keys = {jp.judge.name: jp.judge.api_key() for jp in plan.judges}
    t0 = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        pool = None
        if workers:
            pool = await stack.enter_async_context(CallPool(workers, plan.panel, keys))
        startup = time.perf_counter() - t0
        pids = pool.pids if pool else []
        workers0 = sum(process_cpu_s(pid) for pid in pids)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        summary = await execute(ws, plan, workers=workers, pool=pool)
        wall = time.perf_counter() - wall0
        parent = time.process_time() - cpu0
        worker_cpu = sum(process_cpu_s(pid) for pid in pids) - workers0
    return summary, wall, parent + worker_cpu, parent, startup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: as tiap chooses)"
    )
    parser.add_argument(
        "--route",
        default="openai",
        choices=["openai", "hosted_vllm", "openrouter"],
        help="litellm provider prefix of the judges' models",
    )
    args = parser.parse_args()

    os.environ[KEY_ENV] = "bench-key-not-secret"
    rubric = load_rubric()
    tmp = Path(tempfile.mkdtemp(prefix="tiap-judge-bench-"))
    server, url = start_server(args.latency)
    try:
        text = panel_text(url, args.judges, args.concurrency, args.route)
        panel = parse_panel(text, "<bench panel>")
        db = tmp / "bench.db"
        with Workspace(db) as ws:
            ws.add_cases(make_cases(args.cases))

        from tiap.judge.call import litellm_module

        t0 = time.perf_counter()
        litellm_module()  # imported before the clock starts: import time is not throughput
        import_s = time.perf_counter() - t0

        with Workspace(db) as ws:
            # every case, with no agreement report behind it: past the scale gate (recorded)
            plan = plan_run(ws, panel, rubric, force=True)
            calls = sum(len(jp.to_call) for jp in plan.judges)
            workers = pool_size(plan, args.workers)
            server0 = process_cpu_s(server.pid)
            summary, wall, cpu, parent_cpu, startup = asyncio.run(timed_run(ws, plan, workers))
            server_cpu = process_cpu_s(server.pid) - server0
        if summary.calls != calls or summary.valid != calls:
            raise SystemExit(f"run incomplete: {summary.model_dump_json()}")
        ideal = calls * args.latency / (args.judges * args.concurrency)

        cached_db = tmp / "cached.db"
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        shutil.copyfile(db, cached_db)
        con = sqlite3.connect(cached_db)
        with con:
            con.execute("DELETE FROM labels")
        con.close()
        with Workspace(cached_db) as ws:
            c_cpu0, c_wall0 = time.process_time(), time.perf_counter()
            cached = run_panel(ws, panel, rubric, force=True)
            c_wall = time.perf_counter() - c_wall0
            c_cpu = time.process_time() - c_cpu0
        if cached.cache_hits != calls or cached.calls != 0:
            raise SystemExit(f"cached re-run made calls: {cached.model_dump_json()}")

        lite_ms = litellm_cpu_ms()
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)

    result = {
        "wall_over_ideal": round(wall / ideal, 3),
        "cached_calls_per_s": round(calls / c_wall, 1),
        "cpu_ms_per_call": round(cpu / calls * 1000.0, 3),
    }
    print(
        f"calls: {calls} ({args.cases} cases x {args.judges} judges), "
        f"concurrency {args.concurrency} per judge, latency {args.latency * 1000:.0f} ms"
    )
    print(
        f"litellm import (not timed): {import_s:.1f} s; worker processes: {workers}"
        f" (start-up, not timed: {startup:.1f} s)"
    )
    print(
        f"run: wall {wall:.2f} s, ideal {ideal:.2f} s, wall/ideal {wall / ideal:.2f}, "
        f"client CPU {cpu:.1f} s ({cpu / calls * 1000:.2f} ms per call; parent process "
        f"{parent_cpu / calls * 1000:.2f} ms); loopback server CPU "
        f"{server_cpu / calls * 1000:.2f} ms per call"
    )
    print(
        f"cached re-run: {calls} judgments in {c_wall:.2f} s "
        f"({calls / c_wall:,.0f}/s), CPU {c_cpu / calls * 1000:.3f} ms per judgment"
    )
    print(
        f"where a call's CPU goes: litellm.acompletion alone (mock reply, no HTTP) "
        f"{lite_ms:.2f} ms; tiap's own work per judgment (as in the cached re-run) "
        f"{c_cpu / calls * 1000:.3f} ms; the rest is mostly HTTP under litellm ({HTTP[args.route]})"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    with tuned():  # the process tuning the tiap command runs with
        main()
