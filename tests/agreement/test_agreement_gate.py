"""The scale gate: verdict, recording on validation subsets only, and
check_scale_gate as judging uses it."""

from __future__ import annotations

from agreement_support import SETTINGS, add_labels, make_case

from tiap.agreement import compute_report, labels_from_workspace, record_gate
from tiap.cases.workspace import Workspace
from tiap.judge import JudgeIdentity, check_scale_gate
from tiap.rubric import Rubric, load_rubric

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]


def gate_report(ws: Workspace, rubric: Rubric, subset: str | None = "validation", **kw):
    """The report's gate, recorded. The subsets here are small on purpose (six or
    twelve cases): --min-cases 6 unless a test says otherwise."""
    kw.setdefault("min_cases", 6)
    rep = compute_report(labels_from_workspace(ws, subset=subset), rubric, resamples=0, **kw)
    return rep, record_gate(ws, rep)


def panel_of_five(ws: Workspace, flips: dict[int, dict[int, str]] | None = None) -> None:
    for j in range(5):
        labels = list(TRUTH)
        for i, lab in (flips or {}).get(j, {}).items():
            labels[i] = lab
        add_labels(ws, f"judge-{j}", labels)


def test_pass_is_recorded_and_checked(workspace: Workspace, rubric: Rubric) -> None:
    panel_of_five(workspace, {1: {2: D}})
    add_labels(workspace, "alice", TRUTH, kind="human")
    rep, event = gate_report(workspace, rubric)
    g = rep.gate
    assert g.status == "PASS"
    assert g.passed
    assert g.applies
    assert event is not None
    assert g.panel == "panel-a"
    assert g.rubric_hash == rubric.content_hash
    assert g.figures.scale == "binary"
    assert g.figures.fleiss_kappa == rep.gate.figures.fleiss_kappa
    assert g.figures.fleiss_kappa is not None
    assert g.figures.fleiss_kappa >= 0.8
    assert set(g.figures.judge_kappa) == {f"judge-{j}" for j in range(5)}
    check = check_scale_gate(workspace, panel="panel-a", rubric_hash=rubric.content_hash)
    assert check.passed
    assert "passed" in check.message
    payload = workspace.events("gate")[-1]
    assert payload["subset"] == "validation"
    assert payload["rubric_id"] == "contested-credit"
    assert payload["failures"] == []
    assert payload["figures"]["fleiss_n"] == 12
    models = {f"judge-{j}": f"provider/judge-{j}" for j in range(5)}
    assert {j["name"]: j["models"] for j in payload["judges"]} == {
        j: [m] for j, m in models.items()
    }
    assert {j["name"]: j["settings_hashes"] for j in payload["judges"]} == {
        j: [SETTINGS] for j in models
    }

    def check(judges: dict[str, str] | None, panel: str = "panel-a"):
        identity = (
            {j: JudgeIdentity(m, SETTINGS) for j, m in judges.items()}
            if judges is not None
            else None
        )
        return check_scale_gate(
            workspace, panel=panel, rubric_hash=rubric.content_hash, judges=identity
        )

    # the panel as it is now: the same judges and models pass ...
    assert check(models).passed
    # ... a judge the gate did not see, a judge whose model changed, or a judge
    # fewer (the kappa was about five judges, not these four) does not
    for judges, message in (
        ({**models, "judge-9": "provider/judge-9"}, "judge judge-9 was not among the raters"),
        ({**models, "judge-0": "provider/other"}, "judge judge-0 is now model provider/other"),
        (
            {j: m for j, m in models.items() if j != "judge-4"},
            "the gated report also had judge judge-4",
        ),
    ):
        result = check(judges)
        assert not result.passed
        assert message in result.message
    # a panel renamed since, with the same judges and models, is the panel the gate saw
    renamed = check(models, panel="panel-b")
    assert renamed.passed
    assert "panel panel-a" in renamed.message
    assert not check(None, panel="panel-b").passed


def test_unknown_panel_or_rubric_says_what_to_run(workspace: Workspace, rubric: Rubric) -> None:
    panel_of_five(workspace)
    gate_report(workspace, rubric)
    other = load_rubric("qrels-relevance").content_hash
    for panel, rhash in (("panel-b", rubric.content_hash), ("panel-a", other)):
        check = check_scale_gate(workspace, panel=panel, rubric_hash=rhash)
        assert not check.passed
        assert check.message == (
            f"no agreement report with a gate for panel {panel} and rubric {rhash[:12]} has been "
            f"run: run tiap agreement report --db {workspace.path} --subset validation --out DIR"
        )


def test_failing_figures_are_named_and_latest_report_wins(
    workspace: Workspace, rubric: Rubric
) -> None:
    # judge-4 says the opposite binary label on half the cases; alice differs from every
    # judge on the first four cases
    flips = {4: {i: (D if TRUTH[i] != D else S) for i in range(0, 12, 2)}}
    panel_of_five(workspace, flips)
    alice = [D if lab != D else S for lab in TRUTH[:4]] + TRUTH[4:]
    add_labels(workspace, "alice", alice, kind="human")
    rep, event = gate_report(workspace, rubric, min_fleiss=0.95)
    assert event is not None
    assert rep.gate.status == "FAIL"
    failures = rep.gate.failures
    assert any(
        f.startswith("binary Fleiss' kappa over the judges") and "< 0.95" in f for f in failures
    )
    assert any("judge judge-4 vs the human reference" in f for f in failures)
    check = check_scale_gate(workspace, panel="panel-a", rubric_hash=rubric.content_hash)
    assert not check.passed
    assert "scale gate failed" in check.message
    assert "judge-4" in check.message
    assert "Fleiss" in check.message

    # the judges are fixed (latest label wins) and the gate rerun: it passes now
    panel_of_five(workspace)
    add_labels(workspace, "alice", TRUTH, kind="human")
    rep2, _ = gate_report(workspace, rubric)
    assert rep2.gate.passed
    assert check_scale_gate(workspace, panel="panel-a", rubric_hash=rubric.content_hash).passed


def test_judge_kappa_threshold(workspace: Workspace, rubric: Rubric) -> None:
    panel_of_five(workspace)
    # alice differs from every judge on one case: each judge's kappa against her is
    # the same, below 1
    add_labels(workspace, "alice", [D, *TRUTH[1:]], kind="human")
    rep, _ = gate_report(workspace, rubric, min_judge_kappa=0.99)
    assert rep.gate.status == "FAIL"
    assert len(rep.gate.failures) == 5
    (kappa,) = set(rep.gate.figures.judge_kappa.values())
    assert kappa is not None
    assert 0.5 < kappa < 0.99
    assert all(f"vs the human reference {kappa:.3f} < 0.99" in f for f in rep.gate.failures)
    # the same figures pass at a threshold they reach
    rep, _ = gate_report(workspace, rubric, min_judge_kappa=round(kappa - 0.001, 3))
    assert rep.gate.passed


def test_without_humans_only_fleiss_counts(workspace: Workspace, rubric: Rubric) -> None:
    panel_of_five(workspace)
    rep, event = gate_report(workspace, rubric)
    assert rep.gate.passed
    assert event is not None
    assert rep.gate.figures.judge_kappa == {}


def test_undefined_fleiss_fails(workspace: Workspace, rubric: Rubric) -> None:
    for j in range(3):
        add_labels(workspace, f"judge-{j}", [S] * 12)
    rep, _ = gate_report(workspace, rubric)
    assert rep.gate.status == "FAIL"
    assert rep.gate.figures.fleiss_kappa is None
    assert "undefined" in rep.gate.failures[0]


def test_only_validation_subsets_record(tmp_path, rubric: Rubric) -> None:
    ws = Workspace(tmp_path / "w.sqlite")
    ws.add_cases(make_case(i) for i in range(12))
    ids = ws.case_ids()
    ws.save_subset("validation", ids[:6], params={"kind": "validation"})
    ws.save_subset("spot", ids[6:], params={"kind": "sample"})
    panel_of_five(ws)
    for subset in (None, "spot"):
        rep, event = gate_report(ws, rubric, subset=subset)
        assert event is None
        assert not rep.gate.applies
        assert rep.gate.status == "PASS"
        assert "not recorded" in (rep.gate.note or "")
    assert ws.events("gate") == []
    assert not check_scale_gate(ws, panel="panel-a", rubric_hash=rubric.content_hash).passed
    _, event = gate_report(ws, rubric, subset="validation")
    assert event is not None
    assert check_scale_gate(ws, panel="panel-a", rubric_hash=rubric.content_hash).passed
    ws.close()


def test_judges_without_panel_are_not_recorded(workspace: Workspace, rubric: Rubric) -> None:
    for j in range(3):
        add_labels(workspace, f"judge-{j}", TRUTH, panel=None)
    rep, event = gate_report(workspace, rubric)
    assert event is None
    assert "name no panel" in (rep.gate.note or "")


def test_mixed_panels_are_named_together(workspace: Workspace, rubric: Rubric) -> None:
    add_labels(workspace, "judge-0", TRUTH, panel="p1")
    add_labels(workspace, "judge-1", TRUTH, panel="p2")
    rep, event = gate_report(workspace, rubric)
    assert event is not None
    assert rep.gate.panel == "p1+p2"
    assert check_scale_gate(workspace, panel="p1+p2", rubric_hash=rubric.content_hash).passed
    assert not check_scale_gate(workspace, panel="p1", rubric_hash=rubric.content_hash).passed
