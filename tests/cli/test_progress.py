"""Plain progress lines (:class:`tiap.cli.progress_display.PlainProgress`): what they say and
how often, on a clock the test moves; and a real build with stderr a pipe."""

from __future__ import annotations

import io
import itertools
import re
import threading
import time
from pathlib import Path

from tiap.cli.progress_display import (
    PlainProgress,
    RichProgress,
    duration,
    interval_from_env,
    plain,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _reporter(interval: float = 5.0) -> tuple[PlainProgress, io.StringIO, Clock]:
    out, clock = io.StringIO(), Clock()
    return PlainProgress(interval=interval, stream=out, clock=clock), out, clock


def test_a_step_prints_at_most_once_per_interval() -> None:
    rep, out, clock = _reporter()
    with rep.step("bm25-raw: ranking 100 queries", 100) as advance:
        for _ in range(100):
            clock.now += 0.25  # 25 s in all: 4 per second
            advance(1)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("bm25-raw: ranking 100 queries: 20/100 (20%), 4.0/s, 5s elapsed, ETA 20s")
    assert len(lines) == 6  # at 5, 10, 15, 20 and 25 s, and the closing line
    assert lines[-1] == "bm25-raw: ranking 100 queries: 100 done in 25s"


def test_a_short_step_prints_nothing() -> None:
    rep, out, clock = _reporter()
    with rep.step("reading x", None) as advance:
        clock.now += 1
        advance(3)
    assert out.getvalue() == ""
    with rep.step("reading y", None):
        clock.now += 7
    assert out.getvalue() == "reading y: done in 7s\n"


def test_judge_runs_sum_their_judges_and_measure_from_the_first_call() -> None:
    rep, out, clock = _reporter(interval=2.0)
    with rep:
        rep.start("a", 10)
        rep.start("b", 10)
        rep.start("idle", 0)
        clock.now += 6  # importing litellm: not part of the rate
        rep.advance("a", 4)  # the cache's answers, at once
        for _ in range(4):
            clock.now += 1
            rep.advance("b")
            rep.advance("a")
    lines = out.getvalue().splitlines()
    # a line when 2 s have passed since the last, written at that advance:
    # t=8, after b's advance: the run 4 + 2 (t=7) + 1 = 7, (7-4)/(8-6) = 1.5/s; each
    # part at its own rate since its first advance: a 5/10, (5-4)/(8-6) = 0.5/s, 10 s
    # left; b 2/10, (2-1)/(8-7) = 1/s, 8 s left: the run's time left is the longer, 10 s.
    # t=10, after b's: the run 11, (11-4)/4 = 1.75/s; a 7/10 at 3/4 = 0.75/s, 4 s left;
    # b 4/10 at 3/3 = 1/s, 6 s left: 6 s. (The run's own rate would say 9/1.75 = 5 s.)
    assert lines == [
        "judging: 4/20 (20%), rate unknown, 6s elapsed, ETA unknown (a 4/10, b 0/10)",
        "judging: 7/20 (35%), 1.5/s, 8s elapsed, ETA 10s (a 5/10, b 2/10)",
        "judging: 11/20 (55%), 1.8/s, 10s elapsed, ETA 6s (a 7/10, b 4/10)",
        "judging: 12/20 in 10s",
    ]


def test_the_time_left_of_parts_side_by_side_is_the_slowest_parts() -> None:
    """A fast part (an in-process baseline) beside a slow one (a local model): the
    run's rate is the fast part's, but the time left is the slow part's."""
    rep, out, clock = _reporter(interval=1.0)
    with rep:
        rep.start("fast", 100)
        rep.start("slow", 10)
        rep.advance("fast", 1)
        rep.advance("slow", 1)
        for _ in range(4):
            clock.now += 1
            rep.advance("fast", 24)
        rep.advance("fast", 3)  # done
        clock.now += 1
        rep.advance("slow", 1)
    lines = out.getvalue().splitlines()
    # t=4: the run 98, (98-1)/4 = 24.25/s; fast 97/100 at 96/4 = 24/s, 0.125 s left;
    # slow 1/10 with nothing since its first advance: no rate, the time left unknown.
    # t=5: fast done; slow 2/10 at 1/5 = 0.2/s: 8 / 0.2 = 40 s (the run's own rate,
    # (102-1)/5 = 20.2/s, would say 8 / 20.2: under a second)
    assert lines[3] == (
        "judging: 98/110 (89%), 24.2/s, 4s elapsed, ETA unknown (fast 97/100, slow 1/10)"
    )
    assert lines[4] == "judging: 102/110 (93%), 20.2/s, 5s elapsed, ETA 40s (slow 2/10)"
    assert lines[5:] == ["judging: 102/110 in 5s"]


def test_a_run_of_many_parts_names_its_first_unfinished_ones_and_counts_the_rest() -> None:
    rep, out, clock = _reporter(interval=1.0)
    with rep:
        for i in range(9):
            rep.start(f"j{i}", 2)
        clock.now += 1
        rep.advance("j0", 2)  # finished: no longer named
        clock.now += 1
        rep.advance("j1", 1)
    first, second, _ = out.getvalue().splitlines()
    # 8 unfinished parts: six named, two counted
    assert first.endswith("(j1 0/2, j2 0/2, j3 0/2, j4 0/2, j5 0/2, j6 0/2, 2 more)")
    assert second.endswith("(j1 1/2, j2 0/2, j3 0/2, j4 0/2, j5 0/2, j6 0/2, 2 more)")


def test_a_second_run_starts_afresh() -> None:
    rep, out, clock = _reporter(interval=1.0)
    rep.start("a", 2)
    clock.now += 3
    rep.advance("a", 2)
    rep.start("a", 5)  # the next judging step of an audit
    clock.now += 0.5
    rep.advance("a", 1)
    rep.__exit__()
    assert out.getvalue().splitlines() == [
        "judging: 2/2 (100%), rate unknown, 3s elapsed, ETA unknown",
        "judging: 2/2 in 3s",
    ]


def test_a_named_run_closes_when_its_block_ends() -> None:
    rep, out, clock = _reporter(interval=1.0)
    with rep.parts("judging qrels"):
        rep.start("a", 3)
        clock.now += 2
        rep.advance("a", 1)
    assert out.getvalue().splitlines() == [
        "judging qrels: 1/3 (33%), rate unknown, 2s elapsed, ETA unknown",
        "judging qrels: 1/3 in 2s",
    ]
    rep.start("b", 1)  # outside a named run: the display's own
    clock.now += 2
    rep.advance("b", 1)
    assert out.getvalue().splitlines()[-1].startswith("judging: 1/1 (100%)")


def test_a_batch_shows_each_status_and_otherwise_once_an_interval() -> None:
    rep, out, clock = _reporter(interval=5.0)
    rep.batch("batch-1", "a b-1 validating", 0, 4)
    rep.batch("batch-1", "a b-1 in_progress", 1, 4)
    clock.now += 1
    rep.batch("batch-1", "a b-1 in_progress", 2, 4)  # same status, within the interval
    clock.now += 5
    rep.batch("batch-1", "a b-1 in_progress", 3, 4)
    assert out.getvalue().splitlines() == [
        "a b-1 validating: 0/4 answered",
        "a b-1 in_progress: 1/4 answered",
        "a b-1 in_progress: 3/4 answered",
    ]


def test_bars_of_a_named_run_end_with_it(capsys) -> None:
    with RichProgress() as bars:
        with bars.parts("judging"):
            bars.start("a", 2)
            bars.start("idle", 0)
            bars.advance("a", 2)
            assert list(bars._tasks) == ["a"]  # no bar for nothing to do
        assert bars._tasks == {}
        with bars.step("reading x", None) as advance:  # a step's bar: only on a terminal
            advance(1)
    err = capsys.readouterr().err
    assert "2/2" in err
    assert "reading x" not in err


def test_text_stays_inert_and_helpers() -> None:
    rep, out, clock = _reporter(interval=0.0)
    with rep.step("reading \x1b[31mred\x1b[0m", 2) as advance:
        clock.now += 1
        advance(1)
    assert "\x1b" not in out.getvalue()
    assert "reading ␛[31mred␛[0m: 1/2" in out.getvalue()  # the placeholders of tiap.text
    assert plain("a\tb\x07") == "a b␇"  # inert, on one line
    assert [duration(s) for s in (0.4, 59, 61, 3600 + 125)] == ["0s", "59s", "1m01s", "1h02m"]


def test_interval_from_the_environment(monkeypatch) -> None:
    for text, value in (("2.5", 2.5), ("0", 5.0), ("-1", 5.0), ("x", 5.0), ("inf", 5.0)):
        monkeypatch.setenv("TIAP_PROGRESS_INTERVAL", text)
        assert interval_from_env() == value
    monkeypatch.delenv("TIAP_PROGRESS_INTERVAL")
    assert interval_from_env() == 5.0


PARTIAL = re.compile(r"^(.*): ([\d,]+)/([\d,]+) \(\d+%\), ")


def test_a_build_outside_a_terminal_prints_progress_as_it_goes(
    tiap_cli, shared_data_dir: Path, tmp_path: Path
) -> None:
    locomo = shared_data_dir / "locomo" / "locomo10.json"
    interval = 0.2
    env = {"TIAP_PROGRESS_INTERVAL": str(interval), "HF_HUB_OFFLINE": "1"}
    args = ["traces", "build", "locomo", str(locomo), "--out", str(tmp_path / "b")]
    args += ["-s", "raw", "-s", "parser-D5"]
    proc = tiap_cli.popen(*args, env=env, new_session=False)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for text in proc.stderr:
            lines.append((time.monotonic(), text.rstrip("\n")))

    reader = threading.Thread(target=read)
    reader.start()
    stdout = proc.stdout.read() if proc.stdout is not None else ""
    reader.join(timeout=300)
    assert proc.wait(timeout=60) == 0, lines
    partial = [(t, m) for t, m in lines if PARTIAL.match(m)]
    for _, text in lines:
        assert "\x1b" not in text
        assert "\r" not in text
    # lines while a step works: part of its total done
    unfinished = [m for _, m in partial if PARTIAL.match(m)[2] != PARTIAL.match(m)[3]]  # type: ignore[index]
    assert unfinished, lines
    assert any(m.startswith("bm25-parser-D5: ranking 1,971 queries: ") for m in unfinished)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(partial)]
    assert all(g >= interval * 0.8 for g in gaps), gaps
    # the step lines on stdout, the rules applied adding up to the total printed
    rules = next(x for x in stdout.splitlines() if x.startswith("rules applied: "))
    counted = sum(int(v.replace(",", "")) for v in re.findall(r" ([\d,]+)(?:,|$)", rules))
    assert "parser_no_facts" in rules
    total = re.search(r"([\d,]+) rule applications counted", stdout)
    assert total is not None
    assert counted == int(total.group(1).replace(",", ""))
