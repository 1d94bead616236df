"""`tiap judge run` and `tiap judge panels`: the scale gate, one-line errors before
any call, the JSON summary, dry runs that never import litellm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from judge_support import KEY_ENV, SECRET, make_case, rows

from support.cli import process_env
from support.loopback import LoopbackServer
from tiap.cases import Workspace
from tiap.cases.events import GatedJudge, GateEvent, GateFigures, GateThresholds, record_event
from tiap.judge import load_panel, panel_identity
from tiap.rubric import load_rubric


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("tiap: error: ")
    assert "Traceback" not in err
    return lines[0]


def cli_error(tiap_cli, *args: str) -> str:
    code, _, err = tiap_cli(*args)
    return one_line_error(code, err)


def gate_event(
    ws: Workspace,
    panel_file: Path,
    passed: bool,
    failures: list[str],
    judges: tuple[str, ...] = ("judge-a",),
) -> None:
    """A gate event as the agreement report records it, for ``judges`` of the panel in
    ``panel_file`` as they are (models and request settings)."""
    rubric = load_rubric()
    panel = load_panel(panel_file)
    identity = panel_identity(panel, rubric)
    record_event(
        ws,
        GateEvent(
            subset="val",
            panel=panel.name,
            rubric_id=rubric.id,
            rubric_hash=rubric.content_hash,
            judges=[
                GatedJudge(
                    name=j, models=[identity[j].model], settings_hashes=[identity[j].settings_hash]
                )
                for j in judges
            ],
            # three validation cases, deliberately: --min-cases 3
            thresholds=GateThresholds(
                min_fleiss=0.8, min_judge_kappa=0.6, min_cases=3, min_valid=0.9
            ),
            figures=GateFigures(
                scale="binary",
                fleiss_kappa=0.9 if passed else 0.412,
                fleiss_n=3,
                judge_kappa={},
                judge_n={},
                cases=3,
                judge_valid=dict.fromkeys(judges, 3),
            ),
            passed=passed,
            failures=failures,
        ),
    )


def test_gate_refuses_beyond_the_validation_subset(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(3)
    panel = write_panel(loopback.url)
    base = ("judge", "run", "--db", str(db), "--panel", str(panel), "--no-progress")

    # no gate result at all
    line = cli_error(tiap_cli, *base)
    assert "--force" in line
    assert "agreement report" in line

    # a failed gate: the failing figures are named
    with Workspace(db) as ws:
        gate_event(ws, panel, False, ["binary Fleiss' kappa over the judges 0.412 < 0.80 (n=3)"])
    line = cli_error(tiap_cli, *base)
    assert "0.412 < 0.80" in line
    assert loopback.count == 0

    # --force goes on, and is recorded
    code, out, err = tiap_cli(*base, "--force", "--json")
    assert code == 0, err
    assert "--force" in err
    assert json.loads(out)["valid"] == 3
    with Workspace(db) as ws:
        (forced,) = ws.events("gate_force")
    assert forced["panel"] == "loop"
    assert forced["subset"] is None
    assert forced["rubric_hash"] == load_rubric().content_hash
    assert "0.412" in forced["message"]
    assert loopback.count == 3


def test_gate_passed_or_validation_subset_needs_no_force(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(4)
    panel = write_panel(loopback.url)
    base = ("judge", "run", "--db", str(db), "--panel", str(panel), "--no-progress", "--json")
    code, out, err = tiap_cli(*base, "--subset", "val")
    assert code == 0, err
    assert json.loads(out)["calls"] == 4

    with Workspace(db) as ws:
        ws.add_cases([make_case(9)])
        gate_event(ws, panel, True, [])
    code, out, err = tiap_cli(*base)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["calls"] == 1  # only the new case; the others were labelled
    assert summary["judges"][0]["already_labelled"] == 4
    with Workspace(db) as ws:
        assert ws.events("gate_force") == []


def test_a_passed_gate_covers_only_the_judges_and_models_it_saw(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(2)
    base = ("judge", "run", "--db", str(db), "--no-progress", "--json")
    # the gate passed on judge-a alone (say, a report with --raters judge-a)
    two = write_panel(loopback.url, "two.toml", judges=("judge-a", "judge-b"))
    with Workspace(db) as ws:
        gate_event(ws, two, True, [])
    line = cli_error(tiap_cli, *base, "--panel", str(two))
    assert "judge judge-b was not among the raters of the gated report" in line
    # under another panel name, the refusal still says how the panel differs
    renamed = write_panel(loopback.url, "renamed.toml", judges=("judge-a", "judge-b"), name="new")
    line = cli_error(tiap_cli, *base, "--panel", str(renamed))
    assert "no agreement report with a gate for panel new" in line
    assert "the latest gate for this rubric, for panel loop, does not hold" in line
    assert "judge judge-b was not among the raters of the gated report" in line
    # the same judge name, now another model
    other = write_panel(loopback.url, "other.toml", model="openai/gpt-4o")
    line = cli_error(tiap_cli, *base, "--panel", str(other))
    assert "judge judge-a is now model openai/gpt-4o, the gate saw openai/gpt-4o-mini" in line
    assert loopback.count == 0
    # the panel the gate saw goes on
    same = write_panel(loopback.url, "same.toml")
    code, out, err = tiap_cli(*base, "--panel", str(same))
    assert code == 0, err
    assert json.loads(out)["calls"] == 2


def test_missing_key_is_one_line_before_any_call(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, monkeypatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = make_workspace(2)
    panel = write_panel(loopback.url)
    code, _, err = tiap_cli(
        "judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"
    )
    line = one_line_error(code, err)
    assert KEY_ENV in line
    assert loopback.count == 0
    assert rows(db, "SELECT COUNT(*) FROM model_calls") == [(0,)]


def test_fatal_judge_error_prints_summary_then_one_line_without_the_key(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    from support.loopback import status

    loopback.script.always.extend([status(401, message=f"bad key {SECRET}")])
    db = make_workspace(2)
    panel = write_panel(loopback.url)
    code, out, err = tiap_cli(
        "judge",
        "run",
        "--db",
        str(db),
        "--panel",
        str(panel),
        "--subset",
        "val",
        "--no-progress",
    )
    line = one_line_error(code, err)
    assert "auth_error" in line
    assert SECRET not in out + err
    assert "judge-a" in out  # the summary table was printed first


@pytest.mark.parametrize(
    ("panel_text", "fragments"),
    [
        ("name = \n", ["panel.toml:1", "malformed TOML"]),
        ('name = "x"\njudges = []\n', ["panel.toml", "invalid panel", "judges"]),
        (
            'name = "x"\n[[judges]]\nname = "a"\nmodel = "m"\n'
            '[[judges]]\nname = "a"\nmodel = "n"\n',
            ["unique", "a"],
        ),
        (
            'name = "x"\n[[judges]]\nname = "a"\nmodel = "m"\nparams = {api_key = "k"}\n',
            ["params may not set"],
        ),
    ],
)
def test_bad_panel_files_are_one_line_errors(
    tiap_cli, make_workspace, tmp_path: Path, panel_text: str, fragments: list[str]
) -> None:
    db = make_workspace(1)
    path = tmp_path / "panel.toml"
    path.write_text(panel_text, encoding="utf-8")
    line = cli_error(tiap_cli, "judge", "run", "--db", str(db), "--panel", str(path))
    for fragment in fragments:
        assert fragment in line


def test_unknown_panel_rubric_workspace_subset(tiap_cli, make_workspace, tmp_path: Path) -> None:
    db = make_workspace(1)
    line = cli_error(tiap_cli, "judge", "run", "--db", str(db), "--panel", "nope")
    assert "frontier" in line
    assert "offline" in line
    run = ("judge", "run", "--db", str(db), "--panel", "offline")
    line = cli_error(tiap_cli, *run, "--rubric", "nope")
    assert "contested-credit" in line
    line = cli_error(
        tiap_cli, "judge", "run", "--db", str(tmp_path / "none.db"), "--panel", "offline"
    )
    assert "workspace not found" in line
    line = cli_error(tiap_cli, *run, "--subset", "zzz")
    assert "zzz" in line


def test_dry_run_in_a_fresh_process_never_imports_litellm(make_workspace, tmp_path: Path) -> None:
    db = make_workspace(5)
    code = (
        "import sys, json\n"
        "from tiap.cli import main\n"
        "try:\n"
        f"    main(['judge', 'run', '--db', {str(db)!r}, '--panel', 'frontier', '--dry-run',"
        " '--json'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('LITELLM', 'litellm' in sys.modules)\n"
    )
    env = process_env({"OPENROUTER_API_KEY": None})
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    body, last = proc.stdout.rsplit("LITELLM", 1)
    assert last.strip() == "False"
    report = json.loads(body)
    assert report["calls"] == 25  # 5 cases x 5 judges, nothing cached
    assert report["cache_hits"] == 0
    assert {j["missing_key_env"] for j in report["judges"]} == {"OPENROUTER_API_KEY"}
    assert report["est_cost_usd"] > 0
    assert report["max_cost_usd"] > report["est_cost_usd"]


def test_panels_command_lists_builtins(tiap_cli) -> None:
    code, out, _ = tiap_cli("judge", "panels")
    assert code == 0
    assert "frontier" in out
    assert "offline-llm" in out
    assert "smollm2-135m [local_llm]" in out
    assert "answer-containment [baseline]" in out
    assert "claude-sonnet-4 [llm] openrouter/anthropic/claude-sonnet-4" in out


def test_offline_run_summary_names_baselines(tiap_cli, make_workspace) -> None:
    db = make_workspace(2)
    code, out, err = tiap_cli(
        "judge",
        "run",
        "--db",
        str(db),
        "--panel",
        "offline",
        "--subset",
        "val",
        "--no-progress",
    )
    assert code == 0, err
    assert "not LLMs" in out
    assert "calls: 10" in out


def test_the_summary_names_what_was_labelled_before_this_run(tiap_cli, make_workspace) -> None:
    db = make_workspace(2)
    run = ("judge", "run", "--db", db, "--panel", "offline", "--subset", "val", "--no-progress")
    wide = {"COLUMNS": "200"}
    first = tiap_cli.ok(*run, env=wide).out
    assert "labelled before this run" in first
    again = tiap_cli.ok(*run, env=wide).out
    rows = [line for line in again.splitlines() if "baseline" in line and "│" in line]
    assert len(rows) == 5
    for row in rows:  # every judge had both cases labelled before this run, and no call
        cells = [c.strip() for c in row.split("│")]
        assert cells[3:6] == ["2", "0", "0"], row
    # the dry run's table too
    dry = tiap_cli.ok(*run[:-1], "--dry-run", env=wide).out
    assert "labelled before this run" in dry
