"""One progress protocol (:class:`tiap.progress.Reporter`) and one display of it: the
plain lines that show a bundle build, an import and a judge run outside a terminal
come from the same reporter of :mod:`tiap.cli.progress_display`; the protocol's
default reporter prints nothing."""

from __future__ import annotations

import io
import itertools
import json
import re
from pathlib import Path

import pytest

from support.locomo_sample import locomo_sample
from tiap.cases import Case, EvidenceItem, Workspace, rank_bucket
from tiap.cli.progress_display import PlainProgress, RichProgress, progress_reporter
from tiap.judge import load_panel, plan_run
from tiap.judge.reporting import run_with_progress
from tiap.progress import NoReporter, Reporter
from tiap.rubric import load_rubric
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.build import BuildOptions, build_bundle
from tiap.traces.imports import SystemExport, import_bundle, load_mapping
from tiap.traces.locomo import load_locomo

LOCOMO = locomo_sample()
MEMORIES = {
    "results": [
        {"id": "m1", "memory": "Ann adopted Rex", "metadata": {"source_ids": ["conv-1:D1:1"]}},
        {"id": "m2", "memory": "Bob plays the violin", "metadata": {"source_ids": "conv-1:D1:2"}},
    ]
}
SEARCH = {
    "conv-1:q0": {"results": [{"id": "m1", "score": 0.9}]},
    "conv-1:q1": {"results": [{"id": "m2", "score": 0.7}]},
}
CASES = 3


class Ticks:
    """A clock that moves one second each time it is read: every progress call is
    an interval after the last line."""

    def __init__(self) -> None:
        self._ticks = itertools.count(100.0)

    def __call__(self) -> float:
        return float(next(self._ticks))


def _dataset(tmp_path: Path) -> DatasetTraces:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([LOCOMO]), encoding="utf-8")
    return load_locomo(path)


def _system(tmp_path: Path) -> SystemExport:
    memories, search = tmp_path / "memories.json", tmp_path / "search.json"
    memories.write_text(json.dumps(MEMORIES), encoding="utf-8")
    search.write_text(json.dumps(SEARCH), encoding="utf-8")
    return SystemExport("mem0", memories, load_mapping("mem0"), "mem0", {"mem0-search": search})


def _case(i: int) -> Case:
    return Case(
        case_id=f"c{i}",
        dataset="toy",
        run="run-a",
        store="store-a",
        query_id=f"q{i}",
        query_index=i,
        question=f"What pet did Ann adopt ({i})?",
        answer="a puppy",
        evidence=[EvidenceItem(source_id=f"D1:{i}", text="I adopted a puppy named Rex.")],
        memory_id=f"m{i}",
        memory_text="Ann adopted a puppy named Rex.",
        memory_source_ids=[f"D1:{i}"],
        rank=1,
        rank_bucket=rank_bucket(1),
        k=10,
    )


def _judge(tmp_path: Path, reporter: Reporter | None) -> int:
    """Judge :data:`CASES` cases with the offline panel; the pairs it judged."""
    with Workspace(tmp_path / "ws.db") as ws:
        ws.add_cases([_case(i) for i in range(CASES)])
        plan = plan_run(ws, load_panel("offline"), load_rubric(), force=True)
        pairs = sum(len(jp.pairs) for jp in plan.judges)
        summary = run_with_progress(ws, plan, reporter=reporter)
    assert summary.valid == pairs
    return pairs


def test_one_display_shows_build_import_and_judging_as_plain_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = io.StringIO()
    ds = _dataset(tmp_path)
    with PlainProgress(interval=1.0, stream=lines, clock=Ticks()) as shown:
        build_bundle(ds, BuildOptions(stores=["raw"]), shown)
        import_bundle(ds, [_system(tmp_path)], reporter=shown)
        pairs = _judge(tmp_path, shown)
    printed = lines.getvalue().splitlines()
    # the build: a step per retriever and per run, with what is done of its total
    assert any(re.match(r"^bm25: preparing 3 texts: \d/3 \(\d+%\), ", x) for x in printed)
    assert any(re.match(r"^bm25-raw: ranking 2 queries: \d/2 \(\d+%\), ", x) for x in printed)
    assert any(re.match(r"^bm25-raw: ranking 2 queries: 2 done in \d+s$", x) for x in printed)
    # the import: a step per export read
    memories, search = tmp_path / "memories.json", tmp_path / "search.json"
    assert any(re.match(rf"^reading {re.escape(str(memories))}: done in", x) for x in printed)
    assert any(re.match(rf"^reading {re.escape(str(search))}: done in", x) for x in printed)
    # judging: the judges' parts summed on one line, and the run's closing line
    assert any(re.match(rf"^judging: \d+/{pairs} \(\d+%\), ", x) for x in printed), printed
    assert re.match(rf"^judging: {pairs}/{pairs} in \S+$", printed[-1]), printed
    assert all("\x1b" not in x for x in printed)
    # what each step made: one line each, on stdout
    out = capsys.readouterr().out
    assert "store raw: 3 memories (0 derived)" in out
    assert "run bm25-raw: 2 queries ranked over 1 pools" in out
    assert "store mem0: 2 memories read, 0 without lineage, 0 links unresolved" in out
    assert "run mem0-search: 2 queries ranked, 0 ranked ids not in the store dropped" in out


def test_the_command_line_gets_plain_lines_outside_a_terminal_and_nothing_quiet(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with progress_reporter(False) as shown:
        assert isinstance(shown, PlainProgress)  # stderr is captured: no terminal
        assert not isinstance(shown, RichProgress)
    with progress_reporter(True) as quiet:
        assert isinstance(quiet, NoReporter)


def test_the_default_reporter_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ds = _dataset(tmp_path)
    build_bundle(ds, BuildOptions(stores=["raw"]))
    import_bundle(ds, [_system(tmp_path)])
    _judge(tmp_path, None)
    quiet = NoReporter()
    with quiet.step("a step", 3) as advance:
        advance(3)
    with quiet.parts("judging"):
        quiet.start("a", 2)
        quiet.advance("a", 2)
    quiet.message("a summary")
    quiet.batch("batch-1", "a batch in_progress", 1, 2)
    assert capfd.readouterr() == ("", "")
