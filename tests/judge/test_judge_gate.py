"""The scale gate as a rule of judging, through the real offline panel on a small
workspace: plan_run / run_panel refuse beyond the validation subset without a
passed gate for the panel as it is now (judges, models, request settings), go on
with force (recorded), and a dry run only looks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from judge_support import execute, make_case

from tiap.agreement import compute_report, labels_from_workspace, write_report_and_record_gate
from tiap.cases import Workspace
from tiap.cases.events import GateEvent, GateForceEvent, read_events
from tiap.errors import TiapError
from tiap.judge import load_panel, panel_identity, plan_run, run_panel
from tiap.judge.panel import Panel
from tiap.rubric import Rubric, load_rubric

N_CASES, N_VALIDATION = 10, 6


@pytest.fixture
def rubric() -> Rubric:
    return load_rubric()


@pytest.fixture
def offline() -> Panel:
    return load_panel("offline")


@pytest.fixture
def db(tmp_path: Path, offline: Panel, rubric: Rubric) -> Path:
    """Ten cases, six of them in the validation subset, judged there by the offline
    panel (nothing else judged, no gate recorded yet)."""
    path = tmp_path / "ws.sqlite"
    with Workspace(path) as ws:
        cases = [make_case(i) for i in range(N_CASES)]
        ws.add_cases(cases)
        ids = [c.case_id for c in cases[:N_VALIDATION]]
        ws.save_subset("validation", ids, params={"kind": "validation"})
        summary = run_panel(ws, offline, rubric, subset="validation")
        assert summary.valid == N_VALIDATION * len(offline.judges)
    return path


def report_gate(ws: Workspace, rubric: Rubric, out: Path, **thresholds: float) -> GateEvent:
    """The agreement report on the validation subset, written, then its gate
    recorded; returns the recorded event."""
    table = labels_from_workspace(ws, subset="validation")
    thresholds.setdefault("min_cases", 3)  # six validation cases, deliberately
    report = compute_report(table, rubric, resamples=0, **thresholds)
    written = write_report_and_record_gate(report, out, ws)
    assert written.gate_event is not None
    return read_events(ws, GateEvent)[-1]


def judged_beyond_validation(ws: Workspace) -> int:
    ids = set(ws.case_ids()) - set(ws.case_ids(subset="validation"))
    return sum(1 for r in ws.latest_labels(rater_kind="judge") if r.case_id in ids)


def test_run_panel_without_a_passed_gate_raises_and_force_is_recorded(
    db: Path, offline: Panel, rubric: Rubric, tmp_path: Path
) -> None:
    with Workspace(db) as ws:
        # no gate at all: refused before anything is judged
        with pytest.raises(TiapError, match="no agreement report with a gate for panel offline"):
            run_panel(ws, offline, rubric)
        assert judged_beyond_validation(ws) == 0
        # a failed gate (five lexical rules do not agree at 0.80): refused, figures named
        event = report_gate(ws, rubric, tmp_path / "r1")
        assert not event.passed
        with pytest.raises(TiapError) as err:
            run_panel(ws, offline, rubric)
        assert "scale gate failed" in str(err.value)
        assert "Fleiss' kappa over the judges" in str(err.value)
        assert "\n" not in str(err.value)
        assert judged_beyond_validation(ws) == 0
        assert read_events(ws, GateForceEvent) == []
        # a dry run looks at the gate without refusing or recording
        plan = plan_run(ws, offline, rubric, enforce_gate=False)
        assert plan.gate.refused
        assert plan.gate.check is not None
        assert "scale gate failed" in plan.gate.check.message
        assert read_events(ws, GateForceEvent) == []
        # force goes on, records the decision, and the plan says so
        plan = plan_run(ws, offline, rubric, force=True)
        assert plan.gate_note is not None
        assert "--force" in plan.gate_note
        summary = run_panel(ws, offline, rubric, force=True)
        assert summary.valid == (N_CASES - N_VALIDATION) * len(offline.judges)
        forced = read_events(ws, GateForceEvent)
        assert len(forced) == 2  # the plan above and this run
        assert forced[-1].subset is None
        assert forced[-1].rubric_hash == rubric.content_hash
        assert "Fleiss" in forced[-1].message
        identity = panel_identity(offline, rubric)
        assert {j.name: j.settings_hash for j in forced[-1].judges or []} == {
            name: j.settings_hash for name, j in identity.items()
        }


def test_a_passed_gate_holds_for_the_panel_as_it_was_judged(
    db: Path, offline: Panel, rubric: Rubric, tmp_path: Path
) -> None:
    with Workspace(db) as ws:
        event = report_gate(ws, rubric, tmp_path / "r", min_fleiss=-1.0)
        assert event.passed
        identity = panel_identity(offline, rubric)
        # the event names, per judge, the models and the settings its labels came from
        assert {j.name: (j.models, j.settings_hashes) for j in event.judges} == {
            name: ([j.model], [j.settings_hash]) for name, j in identity.items()
        }
        assert event.report is not None
        assert event.report.out_dir == str((tmp_path / "r").resolve())

        # the temperature edited under the same name: refused, naming the judges whose
        # settings changed and what to run
        warmer = offline.model_copy(update={"temperature": 0.7})
        with pytest.raises(TiapError) as err:
            plan_run(ws, warmer, rubric)
        message = str(err.value)
        assert "but not for the panel as it is now" in message
        for name in identity:
            assert f"judge {name}'s request settings changed since the gate" in message
        assert "tiap judge run --db" in message
        assert "--subset validation" in message
        assert "tiap agreement report --db" in message
        assert "\n" not in message
        # the same for max_tokens, the seed or a judge's params
        for update in ({"max_tokens": 300}, {"seed": 7}):
            with pytest.raises(TiapError, match="request settings changed"):
                plan_run(ws, offline.model_copy(update=update), rubric)
        one_param = offline.model_copy(
            update={
                "judges": [
                    offline.judges[0].model_copy(update={"params": {"top_p": 0.5}}),
                    *offline.judges[1:],
                ]
            }
        )
        with pytest.raises(TiapError) as err:
            plan_run(ws, one_param, rubric)
        assert f"judge {offline.judges[0].name}'s request settings changed" in str(err.value)
        assert f"judge {offline.judges[1].name}'s request" not in str(err.value)

        # a judge dropped, or one added, is refused too
        with pytest.raises(TiapError, match="the gated report also had judge char-similarity"):
            plan_run(ws, offline.model_copy(update={"judges": offline.judges[:4]}), rubric)
        extra = offline.judges[0].model_copy(update={"name": "extra-judge"})
        with pytest.raises(TiapError, match="judge extra-judge was not among the raters"):
            plan_run(ws, offline.model_copy(update={"judges": [*offline.judges, extra]}), rubric)

        # renamed since, with the same judges, models and settings: the gate holds
        renamed = offline.model_copy(update={"name": "renamed"})
        plan = plan_run(ws, renamed, rubric)
        assert plan.gate.check is not None
        assert plan.gate.check.passed
        assert "panel offline" in plan.gate.check.message
        # renamed and warmer: not the panel the gate saw, and the message says why
        with pytest.raises(TiapError) as err:
            plan_run(ws, renamed.model_copy(update={"temperature": 0.7}), rubric)
        assert "no agreement report with a gate for panel renamed" in str(err.value)
        assert "the latest gate for this rubric, for panel offline, does not hold" in str(err.value)
        assert "request settings changed" in str(err.value)

        # the panel as it was judged goes on without force, and nothing is recorded
        summary = run_panel(ws, offline, rubric)
        assert summary.valid == (N_CASES - N_VALIDATION) * len(offline.judges)
        assert read_events(ws, GateForceEvent) == []
        # judging the validation subset needs no gate whatever the settings
        plan_run(ws, warmer, rubric, subset="validation")


def test_labels_without_settings_do_not_satisfy_the_gate(
    db: Path, offline: Panel, rubric: Rubric, tmp_path: Path
) -> None:
    # labels as an earlier tiap stored them: no settings hash
    execute(db, "UPDATE labels SET settings_hash = NULL")
    with Workspace(db) as ws:
        event = report_gate(ws, rubric, tmp_path / "r", min_fleiss=-1.0)
        assert event.passed
        assert all(j.labels_without_settings == N_VALIDATION for j in event.judges)
        with pytest.raises(TiapError, match="carry no request settings"):
            plan_run(ws, offline, rubric)


def test_cli_refuses_an_edited_temperature_and_dry_run_shows_the_gate(
    tiap_cli,
    db: Path,
    rubric: Rubric,
    tmp_path: Path,
    write_offline: Callable[[float], Path],
) -> None:
    with Workspace(db) as ws:
        report_gate(ws, rubric, tmp_path / "r", min_fleiss=-1.0)
    base = ("judge", "run", "--db", str(db), "--no-progress", "--json")
    # the panel as judged: the dry run says the gate passed; the run goes on
    same = write_offline(0.0)
    code, out, err = tiap_cli(*base, "--panel", str(same), "--dry-run")
    assert code == 0, err
    assert '"passed": true' in out
    # the temperature edited under the same panel name: refused, one line
    warmer = write_offline(0.4)
    code, out, err = tiap_cli(*base, "--panel", str(warmer), "--dry-run")
    assert code == 0, err
    assert '"would_refuse": true' in out
    code, out, err = tiap_cli(*base, "--panel", str(warmer))
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert line.startswith("tiap: error: ")
    assert "judge answer-containment's request settings changed since the gate" in line
    assert "tiap agreement report --db" in line
    with Workspace(db) as ws:
        assert judged_beyond_validation(ws) == 0
    code, out, err = tiap_cli(*base, "--panel", str(same))
    assert code == 0, err
    with Workspace(db) as ws:
        assert judged_beyond_validation(ws) == (N_CASES - N_VALIDATION) * 5


@pytest.fixture
def write_offline(tmp_path: Path) -> Callable[[float], Path]:
    """The built-in offline panel as a file named ``offline``, at a temperature."""
    from importlib import resources

    text = (resources.files("tiap.judge") / "panels" / "offline.toml").read_text("utf-8")
    assert "temperature = 0\n" in text

    def write(temperature: float) -> Path:
        path = tmp_path / f"offline-{temperature}.toml"
        path.write_text(text.replace("temperature = 0\n", f"temperature = {temperature}\n"))
        return path

    return write


def test_a_judge_failing_on_most_cases_leaves_too_few_to_gate_on(
    tiap_cli, tmp_path: Path, loopback, write_panel, key_env
) -> None:
    """Through the real loopback server and the command line: three judges agree on
    every case, but one answers 400 (bad_request) on 16 of the 20 validation cases.
    Four complete cases do not pass the gate, and judging beyond stays refused."""
    import re

    from support.loopback import label_reply, question_key, status

    def scripted(body: dict) -> object:
        match = re.search(r"meeting number (\d+)\?", question_key(body))
        assert match is not None
        i = int(match.group(1))
        if str(body["model"]).endswith("model-c") and 4 <= i < 20:
            return status(400, message="bad request")
        return label_reply(("supports", "does_not_support")[i % 2])

    loopback.script.default = scripted
    db = tmp_path / "ws.sqlite"
    with Workspace(db) as ws:
        cases = [make_case(i) for i in range(30)]
        ws.add_cases(cases)
        ws.save_subset("validation", [c.case_id for c in cases[:20]], params={"kind": "validation"})
    judges = ("judge-a", "judge-b", "judge-c")
    models = {j: f"openai/model-{j[-1]}" for j in judges}
    panel = write_panel(loopback.url, judges=judges, model=models, max_attempts=1)
    base = ("--db", str(db), "--panel", str(panel), "--no-progress")
    code, _, err = tiap_cli("judge", "run", *base, "--subset", "validation")
    assert code == 0, err
    with Workspace(db) as ws:
        invalid = [r for r in ws.latest_labels(raters=["judge-c"]) if r.label is None]
    assert len(invalid) == 16
    assert {r.reason for r in invalid} == {"bad_request"}

    out = tmp_path / "r"
    code, printed, err = tiap_cli(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out)
    )
    assert code == 3, printed + err
    assert "scale gate: FAIL" in printed
    assert "fewer than the 30 complete cases the gate needs" in printed
    assert "judge judge-c labelled 4 of 20 case(s) validly (0.200; 16 invalid" in printed
    assert "(n=4, interval unreliable" in printed

    # judging beyond the validation subset is refused, naming the thin evidence
    code, _, err = tiap_cli("judge", "run", *base)
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert "scale gate failed" in line
    assert "judge judge-c labelled 4 of 20 case(s) validly" in line
    with Workspace(db) as ws:
        assert judged_beyond_validation(ws) == 0
