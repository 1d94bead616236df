"""Latency of the terminal labelling app (`tiap annotate tui`) on a 2,000-case workspace.

Builds a workspace with 2,000 contested cases in a subset, with real LoCoMo
text when ../shared/data is there (question, answer, evidence turns, and as the
memory the observation fact or session summary derived from the evidence; else
synthetic text), plus five judges' labels on every case (10,000 label rows),
then drives the app headless (Textual's Pilot driver):

- ``startup_s``: from importing the app module (Textual included) to the first
  case on the terminal (session built, workspace opened, first frame composed
  and turned into terminal output);
- ``keypress_to_next_ms_p50`` / ``_p95``: from a label key event sent to the
  app to the first frame that shows the next case: the label is committed to
  SQLite, the next case loaded by id, the panes updated, the frame composed on
  Textual's own refresh timer and turned into the output a terminal would
  receive (the headless driver skips that step; the benchmark does it), and
  that output carries the next case's credited-memory line. The benchmark
  waits on that frame without polling (Pilot's ``press`` adds about 40 ms of
  idle waiting per key, which is not the app's latency). The CPU time from
  the key to that frame is printed too: on a busy machine it shows what the
  wall time would be on an idle one. Between key presses the benchmark waits
  50 ms, as a person reads; the app uses such pauses to render the next
  cases ahead.

Goal: at most 50 ms per keypress (p95). Last line:
{"keypress_to_next_ms_p50": a, "keypress_to_next_ms_p95": b, "startup_s": c}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace
from tiap.runtime import tuned

_VOCABULARY = (
    "Caroline Melanie painted sunrise lake support group adoption agency camping beach "
    "kids pottery class guitar concert friends family summer August 2023 identity "
    "transgender counseling career mentor library book novel recipe garden dog the a of "
    "and to in was she her they had went about with for on at after because really"
)
WORDS = _VOCABULARY.split()
JUDGES = ("judge-a", "judge-b", "judge-c", "judge-d", "judge-e")
LABELS = ("supports", "partial", "does_not_support")


def shared_locomo() -> Path | None:
    root = Path(os.environ.get("TIAP_SHARED_DIR", Path(__file__).parents[1] / ".." / "shared"))
    path = root / "data" / "locomo" / "locomo10.json"
    return path if path.exists() else None


def locomo_material(path: Path) -> list[tuple[str, str, str, list[EvidenceItem], str]]:
    """(conversation, question, answer, evidence turns, memory) from LoCoMo: the
    memory is the observation fact derived from the first evidence turn, or (one in
    four) the session summary, so texts have real lengths and word overlap."""
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        turns = {
            t["dia_id"]: (t["text"], t["speaker"], conv.get(f"{key}_date_time"))
            for key, value in conv.items()
            if key.startswith("session_") and isinstance(value, list)
            for t in value
        }
        facts = {
            dia: fact
            for obs in sample["observation"].values()
            for items in obs.values()
            for fact, dia in items
            if isinstance(dia, str)
        }
        summaries = list(sample["session_summary"].values())
        for i, qa in enumerate(sample["qa"]):
            ev = [e for e in qa.get("evidence", []) if e in turns]
            if "answer" not in qa or not ev:
                continue
            evidence = [
                EvidenceItem(source_id=e, text=turns[e][0], speaker=turns[e][1], time=turns[e][2])
                for e in ev
            ]
            session = int(ev[0].split(":")[0][1:])
            memory = facts.get(ev[0]) if i % 4 else None
            memory = memory or summaries[min(session, len(summaries)) - 1]
            out.append((sample["sample_id"], qa["question"], str(qa["answer"]), evidence, memory))
    return out


def synthetic_material(n: int, seed: int) -> list[tuple[str, str, str, list[EvidenceItem], str]]:
    rng = np.random.default_rng(seed)

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS, size=int(rng.integers(lo, hi))).tolist()) + "."

    return [
        (
            "synthetic",
            text(6, 16).rstrip(".") + "?",
            text(1, 6),
            [EvidenceItem(source_id=f"D1:{i + 1}", text=text(10, 60), speaker="Caroline")],
            text(8, 120),
        )
        for i in range(n)
    ]


def build_workspace(path: Path, n: int, seed: int) -> str:
    """A workspace of ``n`` cases (LoCoMo text when available) in subset 'validation'
    with five judges' labels on every case; returns where the text came from."""
    rng = np.random.default_rng(seed)
    locomo = shared_locomo()
    material = locomo_material(locomo) if locomo else synthetic_material(n, seed)
    cases: list[Case] = []
    for i in range(n):
        conv, question, answer, evidence, memory = material[i % len(material)]
        rank = int(rng.integers(1, 61))
        run = f"run{i // len(material)}-{i % 8}"
        cases.append(
            Case(
                case_id=f"{run}-q{i:05d}",
                dataset="locomo",
                run=run,
                store="native",
                query_id=f"{conv}/q{i:05d}",
                query_index=i,
                question=question,
                answer=answer,
                category="single-hop",
                conversation_id=conv,
                evidence=evidence,
                memory_id=f"m{i:05d}",
                memory_text=memory,
                memory_source_ids=[evidence[0].source_id],
                rank=rank,
                rank_bucket=rank_bucket(rank),
                k=60,
            )
        )
    with Workspace(path) as ws:
        ws.add_cases(cases)
        ids = [c.case_id for c in cases]
        ws.save_subset("validation", ids, overlap=ids[:36])
        ws.add_labels(
            LabelRecord(
                case_id=cid,
                rater=judge,
                rater_kind="judge",
                label=LABELS[int(rng.integers(0, 3))],
                origin="judge",
            )
            for cid in ids
            for judge in JUDGES
        )
    return f"LoCoMo text from {locomo}" if locomo else "synthetic text (no shared LoCoMo data)"


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class FrameClock:
    """Watches what the app sends to the terminal.

    Wraps the app's display step, which receives every frame Textual composes;
    the frame is also turned into the terminal output a real terminal would be
    sent (the headless driver skips that step). A waiter resolves at the first
    frame whose output shows the case now on screen: its credited memory line
    (``· m00042``, the first line of the memory pane).
    """

    def __init__(self, app) -> None:
        from textual._compositor import CompositorUpdate

        self._waiter: tuple[str | None, asyncio.Future[tuple[float, float]]] | None = None
        inner = app._display
        console = app.console

        def display(target, renderable) -> None:
            inner(target, renderable)
            if not isinstance(renderable, CompositorUpdate):
                return
            output = renderable.render_segments(console)
            now, cpu = time.perf_counter(), time.process_time()
            if self._waiter is None:
                return
            before, future = self._waiter
            case_id = getattr(target, "shown_case_id", None)
            if case_id is None or case_id == before or future.done():
                return
            if f"· {memory_id(case_id)}" in _ANSI.sub("", output):
                future.set_result((now, cpu))
                self._waiter = None

        app._display = display

    def next_case(self, before: str | None) -> asyncio.Future[tuple[float, float]]:
        """Resolves with (wall clock, CPU clock) at the first frame on the terminal
        that shows a case other than ``before``."""
        future = asyncio.get_running_loop().create_future()
        self._waiter = (before, future)
        return future


def memory_id(case_id: str) -> str:
    """The credited memory of a :func:`build_workspace` case (``run0-3-q00042`` -> ``m00042``)."""
    return "m" + case_id.rsplit("-q", 1)[1]


async def measure(db: Path, presses: int) -> tuple[float, list[float], list[float]]:
    """Start-up seconds, then per key press: wall ms to the next case's frame, CPU ms."""
    t0 = time.perf_counter()
    from textual import events

    from tiap.annotate.session import AnnotationSession
    from tiap.annotate.tui.app import AnnotateApp
    from tiap.rubric import load_rubric

    ws = Workspace(db)
    session = AnnotationSession(ws, load_rubric(), "bench", subset="validation")
    app = AnnotateApp(session)
    wall: list[float] = []
    cpu: list[float] = []
    clock = FrameClock(app)
    first = clock.next_case(None)
    async with app.run_test(size=(100, 40)) as pilot:
        startup = (await asyncio.wait_for(first, 60))[0] - t0
        await pilot.pause()
        screen = app.case_screen
        driver = app._driver
        assert driver is not None
        keys = "123"
        for i in range(presses):
            key = keys[i % 3]
            frame = clock.next_case(screen.shown_case_id)
            start, start_cpu = time.perf_counter(), time.process_time()
            driver.send_message(events.Key(key, key))
            shown, shown_cpu = await asyncio.wait_for(frame, 10)
            wall.append((shown - start) * 1000)
            cpu.append((shown_cpu - start_cpu) * 1000)
            await asyncio.sleep(0.05)  # follow-up frames finish, as between a person's keys
    ws.close()
    return startup, wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--presses", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite"
        t = time.perf_counter()
        origin = build_workspace(db, args.cases, args.seed)
        print(
            f"workspace: {args.cases} cases ({origin}), {5 * args.cases} judge labels, "
            f"built in {time.perf_counter() - t:.1f} s"
        )
        startup, lat, cpu = asyncio.run(measure(db, args.presses))
        conn = sqlite3.connect(db)
        stored = conn.execute("SELECT COUNT(*) FROM labels WHERE rater = 'bench'").fetchone()[0]
        conn.close()
    if stored != args.presses:
        print(f"error: {stored} labels stored for {args.presses} key presses", file=sys.stderr)
        return 1
    arr = np.asarray(lat)
    print(
        f"{args.presses} label key presses: p50 {np.percentile(arr, 50):.2f} ms, "
        f"p95 {np.percentile(arr, 95):.2f} ms, max {arr.max():.2f} ms "
        f"(CPU time p50 {np.percentile(cpu, 50):.2f} ms, p95 {np.percentile(cpu, 95):.2f} ms); "
        f"start-up {startup:.2f} s; {stored} labels committed"
    )
    print(
        json.dumps(
            {
                "keypress_to_next_ms_p50": round(float(np.percentile(arr, 50)), 2),
                "keypress_to_next_ms_p95": round(float(np.percentile(arr, 95)), 2),
                "startup_s": round(startup, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    with tuned():  # the process tuning the tiap command runs with
        status = main()
    raise SystemExit(status)
