"""Judge throughput: a panel against a slow loopback provider, then a cached re-run.

Setup: a loopback OpenAI-compatible server in its own process (so it does not
compete for the client's GIL) answering every request after ``--latency``
seconds; ``--cases`` cases x ``--judges`` judges (distinct model names, so no
call answers another's), concurrency ``--concurrency`` per judge, through the
whole judge path in one process: the judges' route (``--route``: ``auto``, the
default, takes the direct OpenAI-protocol route for these ``openai/`` models, which
builds litellm's request itself), tiap's retry policy (tenacity), the ``model_calls``
and label rows stored by the run's group-commit writer (a thread of its own, groups
of at most 64 calls, written at most 1 ms after their first result). The direct
route with its HTTP client (tiap's own keep-alive HTTP/1.1 client) and litellm (for
the run on the litellm route) are imported before the clock starts: import time is
not throughput. Then the same run on the litellm route over ``--litellm-cases`` cases,
for its CPU per call.

Figures (last line):

- ``wall_over_ideal``: wall time of the run divided by the ideal
  ``calls x latency / (judges x concurrency)`` (goal: at most 1.25);
- ``cached_calls_per_s``: a re-run answered entirely from ``model_calls``: a
  copy of the workspace with every label removed (the stored calls kept), run
  again; judgments per second of wall time (goal: at least 2,000/s);
- ``cpu_ms_per_call``: CPU time of the client per call in the main run;
  ``cpu_ms_per_call_by_route``: the same for each route measured;
- ``probe_wall_over_ideal``: ``tiap judge probe`` of ``--probe-cases`` of the
  judged cases with the four kinds (order, verbosity, three repeats, injection: six
  calls per case and judge, the variants of a judge sharing its concurrency), wall
  time over the same ideal (goal: the same as the run's);
- ``load_average``: the machine's 1-minute load average when the run started
  (the machine has 2 cores; other work on it slows the run down).

Where a call's CPU goes on the direct route (py-spy; about 0.3 ms per call in all
at load below 1, 0.36-0.43 ms when the route used aiohttp and the writer was woken
for every result): the event loop's thread about two thirds, the writer's about a
third. On the loop: tiap's HTTP client (the request written, the reply's head and
body read, the connection pool: about a fifth of the loop's share, where aiohttp
took about half), the messages' JSON (encoded once for the request sent and the
request stored), the reply read into the record litellm gives, asyncio's own
scheduling (a task and a timer per call, the socket calls) and the runner (claim,
the check before each send, record, the tally); the retry policy costs a call
answered at once nothing (tenacity takes over only from a failed first attempt).
The writer's thread builds and stores the rows (request, response, label parsed
from the reply, the budget ledger and the pair's lease) for a whole group, a
statement per kind of row, and is woken only when it has a group to write (a first
result, a full group, a flush). Each statement hands the interpreter to the event
loop's thread and waits to get it back, so few statements make a group commit soon;
the event loop neither waits for the workspace's lock nor for a WAL checkpoint, and
a send is checked against the lease the run took without a query.

Where the wall time beyond the ideal goes: a call keeps its concurrency slot until
its group has committed, so a slot is held for the server's latency, plus about
5 ms of loopback round trip (the server's and the client's work on bursts of
requests), plus about 7 ms to record the call (at most 1 ms of waiting for the
group, its transaction, the hand-back to the loop): about 113 ms a call, where it
was about 127 ms with aiohttp and groups that waited up to 10 ms. A run also starts
(the first claims: about 40 ms) and ends (its last calls finishing one by one) with
slots idle, which weighs more on the shorter probe run; and since the calls move in
bursts (a group's calls free their slots together), the judges served first in each
burst stay ahead: the five judges finish up to about 80 ms apart, and the run ends
with the last. The loopback server, in its own
process, takes about 0.2 ms per call. At 10,000 calls in the ideal 6.25 s the
client (event loop and writer, which share the interpreter) has at most 0.6 ms per
call: the two cores are shared with the server, so on a machine with other work
the figure is that work's as much as tiap's, hence the load average printed with it.
On the litellm route one ``litellm.acompletion`` alone costs several milliseconds
(request and parameter mapping, model-info and cost lookups, logging objects, a
thread-pool hop), the openai SDK and httpx under it a few more: about 3-5 ms per
call on a quiet machine.

Run: ``python benchmarks/judge_throughput.py`` (``--cases 200`` for a quick look).
The last line printed is one JSON object: ``{"wall_over_ideal": r,
"cached_calls_per_s": n, "cpu_ms_per_call": m, "cpu_ms_per_call_by_route": {...},
"probe_wall_over_ideal": p, "load_average": l}``.
"""

from __future__ import annotations

import argparse
import asyncio
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
# the loopback server is test infrastructure (tests/support), not part of tiap; the
# folder is put first on the path by name (a package called "tests" installed by a
# dependency would otherwise shadow the repository's)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import loopback
from tiap.cases import Case, EvidenceItem, Workspace, rank_bucket
from tiap.judge import parse_panel, plan_run, run_panel
from tiap.judge.panel import Panel
from tiap.judge.runner import execute
from tiap.rubric import Rubric, load_rubric
from tiap.runtime import tuned

KEY_ENV = "TIAP_BENCH_KEY"


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


def panel_text(
    url: str, judges: int, concurrency: int, route: str = "auto", model: str = "bench-model"
) -> str:
    lines = ['name = "bench"', "temperature = 0", "max_tokens = 100", "timeout_s = 30"]
    for j in range(judges):
        lines += [
            "[[judges]]",
            f'name = "judge-{j}"',
            f'model = "openai/{model}-{j}"',
            f'api_base = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            f"concurrency = {concurrency}",
            f'route = "{route}"',
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


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a running process, from ``/proc`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_run(db: Path, panel: Panel, rubric: Rubric, server: subprocess.Popen) -> dict[str, Any]:
    """Judge every case of ``db`` with ``panel``; wall and CPU figures."""
    with Workspace(db) as ws:
        # every case, with no agreement report behind it: past the scale gate (recorded)
        plan = plan_run(ws, panel, rubric, force=True)
        calls = sum(len(jp.to_call) for jp in plan.judges)
        server0 = process_cpu_s(server.pid)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        summary = asyncio.run(execute(ws, plan))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        server_cpu = process_cpu_s(server.pid) - server0
    if summary.calls != calls or summary.valid != calls:
        raise SystemExit(f"run incomplete: {summary.model_dump_json()}")
    concurrency = sum(j.concurrency for j in panel.judges)
    latency = float(os.environ.get("TIAP_BENCH_LATENCY", "0.1"))
    ideal = calls * latency / concurrency
    return {
        "calls": calls,
        "wall": wall,
        "ideal": ideal,
        "cpu": cpu,
        "server_cpu": server_cpu,
        "cost": summary.cost_usd,
    }


def probe_run(db: Path, panel: Panel, rubric: Rubric, n: int) -> dict[str, Any]:
    """Probe the first ``n`` judged cases with every kind; wall and CPU figures."""
    from tiap.cases.diagnostic_events import ProbeThresholds
    from tiap.probe import plan_probes
    from tiap.probe.run import probe_event

    with Workspace(db) as ws:
        ws.save_subset("probed", ws.case_ids()[:n], params={"kind": "probe"})
        kinds = ["order", "verbosity", "repeat", "injection"]
        plan = plan_probes(ws, panel, rubric, subset="probed", kinds=kinds)
        calls = sum(len(jp.to_call) for jp in plan.run.judges)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        summary = asyncio.run(execute(ws, plan.run))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        probe_event(ws, plan, ProbeThresholds(max_injection=0.05, min_cases=10))
    if summary.calls != calls:
        raise SystemExit(f"probe run incomplete: {summary.model_dump_json()}")
    latency = float(os.environ.get("TIAP_BENCH_LATENCY", "0.1"))
    ideal = calls * latency / sum(j.concurrency for j in panel.judges)
    return {"calls": calls, "wall": wall, "ideal": ideal, "cpu": cpu}


def cached_rerun(db: Path, tmp: Path, panel: Panel, rubric: Rubric, calls: int) -> dict[str, float]:
    """A copy of the workspace without its labels, judged again from ``model_calls``."""
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
        cpu0, wall0 = time.process_time(), time.perf_counter()
        cached = run_panel(ws, panel, rubric, force=True)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    if cached.cache_hits != calls or cached.calls != 0:
        raise SystemExit(f"cached re-run made calls: {cached.model_dump_json()}")
    return {"wall": wall, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument(
        "--route",
        default="auto",
        choices=["auto", "openai", "litellm"],
        help="the judges' route in the main run (auto: the direct route for openai/ models)",
    )
    parser.add_argument(
        "--litellm-cases",
        type=int,
        default=200,
        help="cases of the run on the litellm route, for its CPU per call (0: none)",
    )
    parser.add_argument(
        "--probe-cases", type=int, default=115, help="cases of the probe run (0: none)"
    )
    args = parser.parse_args()

    load = os.getloadavg()[0]
    os.environ[KEY_ENV] = "bench-key-not-secret"
    os.environ["TIAP_BENCH_LATENCY"] = str(args.latency)
    rubric = load_rubric()
    tmp = Path(tempfile.mkdtemp(prefix="tiap-judge-bench-"))
    server, url = start_server(args.latency)
    try:
        from tiap.judge.routes.litellm_core import litellm_module

        t0 = time.perf_counter()
        import tiap.judge.routes.openai_http  # noqa: F401  (the direct route and its client)

        litellm_module()  # imported before the clock starts: import time is not throughput
        import_s = time.perf_counter() - t0

        panel = parse_panel(panel_text(url, args.judges, args.concurrency, args.route), "<bench>")
        db = tmp / "bench.db"
        with Workspace(db) as ws:
            ws.add_cases(make_cases(args.cases))
        main_run = timed_run(db, panel, rubric, server)
        calls = main_run["calls"]
        route = "litellm" if args.route == "litellm" else "openai"
        cached = cached_rerun(db, tmp, panel, rubric, calls)
        probes = probe_run(db, panel, rubric, args.probe_cases) if args.probe_cases else None

        by_route = {route: main_run}
        if args.litellm_cases and route != "litellm":
            # distinct model names: none of these calls is answered from the first run
            text = panel_text(url, args.judges, args.concurrency, "litellm", "litellm-model")
            lite_db = tmp / "litellm.db"
            with Workspace(lite_db) as ws:
                ws.add_cases(make_cases(args.litellm_cases))
            lite_panel = parse_panel(text, "<bench litellm>")
            by_route["litellm"] = timed_run(lite_db, lite_panel, rubric, server)
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)

    wall, ideal = main_run["wall"], main_run["ideal"]
    per_route = {name: round(r["cpu"] / r["calls"] * 1000.0, 3) for name, r in by_route.items()}
    result = {
        "wall_over_ideal": round(wall / ideal, 3),
        "cached_calls_per_s": round(calls / cached["wall"], 1),
        "cpu_ms_per_call": per_route[route],
        "cpu_ms_per_call_by_route": per_route,
        "load_average": round(load, 2),
    }
    if probes is not None:
        result["probe_wall_over_ideal"] = round(probes["wall"] / probes["ideal"], 3)
    print(
        f"calls: {calls} ({args.cases} cases x {args.judges} judges), "
        f"concurrency {args.concurrency} per judge, latency {args.latency * 1000:.0f} ms; "
        f"load average {load:.2f} on {os.cpu_count()} cores at the start"
    )
    print(f"direct route and litellm import (not timed): {import_s:.1f} s")
    for name, r in by_route.items():
        print(
            f"route {name}: {r['calls']} calls, wall {r['wall']:.2f} s, ideal {r['ideal']:.2f} s, "
            f"wall/ideal {r['wall'] / r['ideal']:.2f}, client CPU {r['cpu']:.1f} s "
            f"({r['cpu'] / r['calls'] * 1000:.3f} ms per call); loopback server CPU "
            f"{r['server_cpu'] / r['calls'] * 1000:.3f} ms per call; cost ${r['cost']:.4f}"
        )
    print(
        f"cached re-run: {calls} judgments in {cached['wall']:.2f} s "
        f"({calls / cached['wall']:,.0f}/s), CPU {cached['cpu'] / calls * 1000:.3f} ms per judgment"
    )
    if probes is not None:
        print(
            f"probe run: {probes['calls']} calls ({args.probe_cases} cases x {args.judges} "
            f"judges x 6), wall {probes['wall']:.2f} s, ideal {probes['ideal']:.2f} s, "
            f"wall/ideal {probes['wall'] / probes['ideal']:.2f}, client CPU "
            f"{probes['cpu'] / probes['calls'] * 1000:.3f} ms per call"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    with tuned():  # the process tuning the tiap command runs with
        main()
