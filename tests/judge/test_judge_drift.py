"""``tiap judge drift`` on a frozen anchor set, against the loopback server: a judge
whose answers change after a model switch is found drifted (exit 3), a stable one
steady; drift calls bypass the cache, are budgeted and resume their run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judge_support import rows

from support.browser import assert_renders
from support.cli import TiapCli
from support.loopback import Behaviour, LoopbackServer, Script, label_reply, question_key
from tiap.cases import LabelRecord, Workspace

N = 24
LABELS = ("supports", "partial", "does_not_support")


def _judge(body: dict[str, Any]) -> Behaviour:
    if "v2" in str(body.get("model")):  # the new model under the old name says no
        return label_reply("does_not_support")
    return label_reply(LABELS[sum(question_key(body).encode()) % 3])


@pytest.fixture
def server() -> Any:
    with LoopbackServer(Script(default=_judge)) as s:
        yield s


def _panel(write_panel: Callable[..., Path], url: str, switched: bool, name: str) -> Path:
    models = {"steady": "openai/steady-v1", "switched": "openai/switched-v1"}
    if switched:
        models["switched"] = "openai/switched-v2"
    return write_panel(
        url, filename=name, judges=("steady", "switched"), model=models, prices=(1.0, 1.0)
    )


def _judged_before(
    make_workspace: Callable[..., Path],
    write_panel: Callable[..., Path],
    server: LoopbackServer,
    tiap_cli: TiapCli,
) -> tuple[Path, Path]:
    """A workspace of N cases judged by the panel before the switch: (db, that panel)."""
    db = make_workspace(N)
    before = _panel(write_panel, server.url, False, "before.toml")
    assert (
        tiap_cli("judge", "run", "--db", db, "--panel", before, "--subset", "val", "-q").code == 0
    )
    return db, before


def test_drift_finds_the_switched_judge_and_resumes_its_run(
    make_workspace: Callable[..., Path],
    write_panel: Callable[..., Path],
    server: LoopbackServer,
    key_env: str,
    tiap_cli: TiapCli,
    tmp_path: Path,
) -> None:
    db, before = _judged_before(make_workspace, write_panel, server, tiap_cli)
    with Workspace(db) as ws:  # a person agrees with the steady rule on every case
        for i in range(N):
            label = LABELS[sum(_question(i).encode()) % 3]
            ws.add_label(
                LabelRecord(case_id=f"c{i:04d}", rater="ann", rater_kind="human", label=label)
            )
    frozen = tiap_cli(
        "judge", "anchor", "freeze", "a1", "--db", db, "--subset", "val", "--panel", before
    )
    assert frozen.code == 0, frozen.err
    served = server.served
    same = tiap_cli(
        "judge",
        "drift",
        "a1",
        "--db",
        db,
        "--panel",
        before,
        "--out",
        tmp_path / "d1",
        "--json",
        "-q",
    )
    assert same.code == 0, same.err
    # the same requests as the frozen labels', called again: the cache is bypassed
    assert server.served - served == 2 * N
    figures = {j["name"]: j for j in json.loads(same.out)["judges"]}
    assert {n: (j["n"], j["changed"], j["drifted"]) for n, j in figures.items()} == {
        "steady": (N, 0, False),
        "switched": (N, 0, False),
    }
    assert figures["steady"]["kappa"] == 1.0
    # the model behind the name changes; a budget stops the run half way
    after = _panel(write_panel, server.url, True, "after.toml")
    served = server.served
    stopped = tiap_cli(
        "judge",
        "drift",
        "a1",
        "--db",
        db,
        "--panel",
        after,
        "--out",
        tmp_path / "d2",
        "--max-cost",
        "0.002",
        "-q",
    )
    assert stopped.code == 3, stopped.err
    assert "stopped by the budget" in stopped.err
    assert 0 < server.served - served < 2 * N
    drifted = tiap_cli(
        "judge",
        "drift",
        "a1",
        "--db",
        db,
        "--panel",
        after,
        "--out",
        tmp_path / "d2",
        "--json",
        "-q",
    )
    assert drifted.code == 3, drifted.err
    assert "judges drifted: switched" in drifted.err
    assert server.served - served == 2 * N  # the stopped run was resumed: nothing twice
    event = json.loads(drifted.out)
    figures = {j["name"]: j for j in event["judges"]}
    assert figures["steady"]["drifted"] is False
    switched = figures["switched"]
    relevant = sum(1 for i in range(N) if _relevant(i))
    assert (switched["mcnemar_b"], switched["mcnemar_c"]) == (relevant, 0)
    assert switched["mcnemar_p"] == pytest.approx(2 / 2**relevant)
    assert switched["drifted"] is True
    assert switched["model"] == "openai/switched-v2"
    assert switched["frozen_models"] == ["openai/switched-v1"]
    runs = rows(db, "SELECT DISTINCT drift_run FROM probe_labels ORDER BY drift_run")
    assert len(runs) == 2  # one run per completed drift; the stopped one was resumed
    # accuracy against the person: all then, only the cases she said no to now
    no = N - relevant
    assert (switched["accuracy_n"], switched["accuracy_then"]) == (N, 1.0)
    assert switched["accuracy_now"] == pytest.approx(no / N, abs=1e-6)
    low, high = switched["accuracy_diff_ci"]
    assert low < switched["accuracy_diff"] < high < 0
    # with no repeat probe the EWMA target is 0: any change raises the alarm
    assert switched["alarm"] is True
    assert switched["noise_source"].startswith("none")
    # checked independently: scipy's exact binomial test is McNemar's exact test
    from scipy.stats import binomtest

    assert switched["mcnemar_p"] == pytest.approx(binomtest(0, relevant, 0.5).pvalue)
    # one EWMA chart per judge, over both completed drift runs; the switch raised an alarm
    page = assert_renders(tmp_path / "d2" / "report.html", tmp_path / "d2.png", min_figures=2)
    assert sum("EWMA of the share changed" in box.label for box in page.svgs) == 2
    assert 'fill="#d73027"' in (tmp_path / "d2" / "report.html").read_text(encoding="utf-8")


def _question(i: int) -> str:
    return f"When did Caroline go to support group meeting number {i}?"


def _relevant(i: int) -> bool:
    """Whether the steady rule labels case ``i`` supports or partial."""
    return LABELS[sum(_question(i).encode()) % 3] != "does_not_support"


def test_drift_of_an_unknown_anchor_set_is_a_one_line_error(
    make_workspace: Callable[..., Path],
    write_panel: Callable[..., Path],
    server: LoopbackServer,
    tiap_cli: TiapCli,
) -> None:
    db = make_workspace(3)
    panel = _panel(write_panel, server.url, False, "p.toml")
    r = tiap_cli("judge", "drift", "nope", "--db", db, "--panel", panel)
    assert r.code == 2
    assert "no anchor set named 'nope'" in r.err
    assert len(r.err.strip().splitlines()) == 1


async def test_the_offline_panel_does_not_drift_through_the_python_api(
    make_workspace: Callable[..., Path],
) -> None:
    from tiap.judge import load_panel, plan_run
    from tiap.judge.runner import execute
    from tiap.probe import freeze_anchor, run_drift
    from tiap.rubric import load_rubric

    panel, rubric = load_panel("offline"), load_rubric("contested-credit")
    with Workspace(make_workspace(12)) as ws:
        await execute(ws, plan_run(ws, panel, rubric, subset="val"))
        anchor = freeze_anchor(ws, "a1", panel, rubric, subset="val")
        assert (anchor.cases, anchor.reference) == (12, None)
        run = await run_drift(ws, "a1", panel, rubric)
        assert run.summary.calls == 12 * len(panel.judges)  # the cache is bypassed
        assert run.result.drifted == []
        assert all(j.n == 12 and j.changed == 0 for j in run.result.judges)


def test_the_agreement_report_warns_of_a_gated_judge_that_drifted_since_the_gate(
    make_workspace: Callable[..., Path],
    write_panel: Callable[..., Path],
    server: LoopbackServer,
    key_env: str,
    tiap_cli: TiapCli,
    tmp_path: Path,
) -> None:
    from tiap.cases.events import GateEvent, read_events

    db, before = _judged_before(make_workspace, write_panel, server, tiap_cli)
    freeze = ("judge", "anchor", "freeze", "a1", "--db", db, "--subset", "val", "--panel", before)
    assert tiap_cli(*freeze).code == 0

    def agreement(out: Path) -> tuple[Any, dict[str, Any]]:
        r = tiap_cli(
            "agreement", "report", "--db", db, "--subset", "val", "--out", out,
            "--resamples", "0", "--min-cases", "10",
        )  # fmt: skip
        assert r.code == 0, r.out + r.err  # both judges agree on every case: the gate passes
        return r, json.loads((out / "report.json").read_text(encoding="utf-8"))["diagnostics"]

    _, shown = agreement(tmp_path / "r1")
    assert (shown["gate"], shown["drift"], shown["warnings"]) == (None, [], [])
    with Workspace(db) as ws:
        gate = read_events(ws, GateEvent)[-1]
    assert gate.passed
    assert gate.anchor == "a1"  # frozen from the very labels the gate judged
    # the switched model answers otherwise: a drift run after the gate finds it
    after = _panel(write_panel, server.url, True, "after.toml")
    drift = ("judge", "drift", "a1", "--db", db, "--panel", after, "--out", tmp_path / "d", "-q")
    assert tiap_cli(*drift).code == 3
    second, shown = agreement(tmp_path / "r2")
    assert shown["gate_anchor"] == "a1"
    by_judge = {d["judge"]: d for d in shown["drift"]}
    assert by_judge["switched"]["drifted"] is True
    assert by_judge["switched"]["after_gate"] is True
    assert by_judge["steady"]["drifted"] is False
    assert [w["judge"] for w in shown["warnings"]] == ["switched"]
    assert "drifted since" in shown["warnings"][0]["message"]
    assert "judge switched passed the gate" in second.err
    md = (tmp_path / "r2" / "report.md").read_text(encoding="utf-8")
    assert "WARNING: judge switched passed the gate" in md
    html = (tmp_path / "r2" / "report.html").read_text(encoding="utf-8")
    assert "WARNING: " in html
    # a report without a workspace says why it has no diagnostics
    labels = tmp_path / "labels.csv"
    assert tiap_cli("labels", "export", "--db", db, "--out", labels).code == 0
    r = tiap_cli("agreement", "report", "--labels", labels, "--out", tmp_path / "r3")
    assert r.code == 0, r.err
    none = json.loads((tmp_path / "r3" / "report.json").read_text(encoding="utf-8"))
    assert none["diagnostics"]["available"] is False
    assert "no workspace" in none["diagnostics"]["reason"]
