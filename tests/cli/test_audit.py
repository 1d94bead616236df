"""`tiap audit` and `tiap demo` end to end, on the sample bundle with the offline panel.

Each test runs the command (the demo in a process of its own, once per session; the
audits in this process, from the states made once per session where they resume),
then reads the workspace and the files it wrote.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from support.cli import TiapCli
from support.markdown_render import md_tags
from tiap.cases import LabelRecord, Workspace


@pytest.fixture(scope="module")
def tiap_cli(tiap_cli: TiapCli) -> TiapCli:
    """``tiap`` with wide tables (``COLUMNS=200``)."""
    return tiap_cli.with_env(COLUMNS="200")


def counts(db: Path) -> tuple[int, int, int]:
    """(labels rows, model_calls rows, gate_force events)."""
    con = sqlite3.connect(db)
    try:
        labels = con.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
        calls = con.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0]
        forced = con.execute("SELECT COUNT(*) FROM events WHERE kind='gate_force'").fetchone()[0]
    finally:
        con.close()
    return labels, calls, forced


def test_demo_runs_every_step_and_resumes(tiap_cli, demo_run) -> None:
    out = demo_run.root / "tiap-demo"
    first = demo_run.made  # tiap demo in its own process, in demo_run.root: once per session
    assert first.returncode == 0, first.stderr
    for rel in (
        "index.md",
        "index.html",
        "rescore/report.md",
        "rescore/report.json",
        "rescore/per_query.csv",
        "validation/report.html",
        "validation/report.json",
        "final/report.html",
        "final/report.json",
        "probe/report.json",
        "probe/report.html",
    ):
        assert (out / rel).is_file(), rel
    db = out / "workspace.sqlite"
    with Workspace(db, create=False) as ws:
        n_cases = ws.count_cases()
        judges = ws.raters("judge")
        latest = ws.latest_labels(rater_kind="judge")
    # The offline panel has five judges; every one labelled every case exactly once.
    assert len(judges) == 5
    assert len(latest) == 5 * n_cases
    labels, calls, forced = counts(db)
    with Workspace(db, create=False) as ws:
        subset = ws.case_ids(subset="validation")
        reference = ws.latest_labels(rater_kind="human")
    # the demo's illustrative reference labels every case of its validation subset
    assert {r.rater for r in reference} == {"demo-reference"}
    assert sorted(r.case_id for r in reference) == sorted(subset)
    assert labels == 5 * n_cases + len(subset)
    assert calls > 0
    assert forced == 1  # the demo goes past the failed gate with --force, recorded
    assert "human labels: done (complete: demo-reference)" in first.stdout
    validation = json.loads((out / "validation/report.json").read_text())
    assert validation["vs_reference"]["available"] is True
    assert validation["vs_reference"]["reference"]["raters"] == ["demo-reference"]

    final = json.loads((out / "final/report.json").read_text())
    assert final["n_cases"] == n_cases
    index = (out / "index.md").read_text()
    share = final["majority"]["labels"]["shares"]["supports"]
    assert f"{100 * share:.1f}%" in index
    # the calibrated (PPI) share beside the panel's, against the demo's reference
    ppi = final["calibrated"]["overall"]["labels"]["shares"]["supports"]["ppi"]
    assert ppi["n"] == len(subset)
    assert f"calibrated {100 * ppi['value']:.1f}%" in index
    assert "No calibrated share" not in index
    assert "supports (calibrated, PPI)" in index
    assert "Scale gate: FAIL" in index  # five lexical baselines do not agree at 0.80
    # the demo probes its judges (order, repeat, injection) after the gate, and the
    # final report's diagnostics section shows each judge's latest probe run
    diagnostics = final["diagnostics"]
    assert diagnostics["available"] is True
    probed = {p["judge"]: p for p in diagnostics["probes"]}
    assert sorted(probed) == sorted(judges)
    for p in probed.values():
        assert [k["kind"] for k in p["kinds"]] == ["order", "repeat", "injection"]
        repeat = next(k for k in p["kinds"] if k["kind"] == "repeat")
        assert (repeat["flips"], repeat["status"]) == (0, "noise floor")  # deterministic
    assert diagnostics["drift"] == []
    assert "no drift run" in diagnostics["drift_reason"]
    assert "## Diagnostics: probes and drift" in (out / "final/report.md").read_text()
    assert "probe the judges on 'validation': done" in first.stdout
    assert "probe/report.html" in index
    with Workspace(db, create=False) as ws:
        assert ws.probe_label_count(kind="order") == 5 * len(ws.case_ids(subset="validation"))
        assert len(ws.events("probe")) == 1

    # Running again resumes: nothing is judged or called twice.
    second = tiap_cli("demo", cwd=demo_run.root)
    assert second.returncode == 0, second.stderr
    assert "skipped (bundle and settings unchanged)" in second.stdout
    labels2, calls2, _ = counts(db)
    assert (labels2, calls2) == (labels, calls)
    assert json.loads((out / "final/report.json").read_text()) == final
    assert "every probe already judged and recorded" in second.stdout
    with Workspace(db, create=False) as ws:
        assert len(ws.events("probe")) == 1  # nothing probed or recorded twice


def test_audit_waits_for_humans_then_continues(
    tiap_cli, audit_waiting_6, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = audit_waiting_6.root / "audit"
    args = ("audit", sample_bundle_dir, "--out", out, "--panel", "offline", "--n", "6")
    paused = audit_waiting_6.made  # tiap *args --overlap 2 --no-progress, once per session
    assert paused.returncode == 3, paused.stderr
    assert "tiap annotate tui --db" in paused.stderr
    assert "--subset validation" in paused.stderr
    assert "Traceback" not in paused.stderr
    db = out / "workspace.sqlite"
    index = (out / "index.md").read_text()
    assert "Status: waiting" in index
    with Workspace(db, create=False) as ws:
        subset = ws.case_ids(subset="validation")
        assert len(subset) == 6
        # Judged the validation subset only, not yet every case.
        judged = {r.case_id for r in ws.latest_labels(rater_kind="judge")}
        assert judged == set(subset)
        # A person labels all but one case: still waiting.
        for cid in subset[:-1]:
            ws.add_label(LabelRecord(case_id=cid, rater="ann", rater_kind="human", label="partial"))
    again = tiap_cli(*args, "--no-progress", cwd=tmp_path)
    assert again.returncode == 3
    assert "ann 5/6" in again.stdout
    with Workspace(db, create=False) as ws:
        ws.add_label(
            LabelRecord(case_id=subset[-1], rater="ann", rater_kind="human", label="supports")
        )
    done = tiap_cli(*args, "--no-progress", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "validation/report.json").read_text())
    # The human labels are the reference: every judge is compared with them on 6 cases.
    assert report["vs_reference"]["available"] is True
    assert {r["rater"] for r in report["vs_reference"]["raters"]} == {
        "answer-containment",
        "evidence-overlap",
        "qa-overlap",
        "key-facts",
        "char-similarity",
    }
    assert all(r["labels"]["n"] == 6 for r in report["vs_reference"]["raters"])
    # The final report calibrates its prevalence on the six labelled cases, and the
    # index puts the calibrated share beside the panel's.
    final = json.loads((out / "final/report.json").read_text())
    calibrated = final["calibrated"]
    assert calibrated["available"] is True
    overall = calibrated["overall"]["labels"]
    assert overall["labelled"] <= 6
    ppi = overall["shares"]["supports"]["ppi"]
    assert ppi["n"] + ppi["n_unlabelled"] == overall["used"]
    assert ppi["n"] == overall["labelled"]
    for name in ("index.md", "index.html"):
        index = (out / name).read_text()
        assert "Share of relaxed credit that is fully supported" in index
        assert "Calibrated against the human reference (prediction-powered" in index
        assert "supports (calibrated, PPI)" in index
        assert ", calibrated " in index  # the final step's line


def test_audit_stops_at_a_failed_gate_without_force(
    tiap_cli, audit_waiting_8, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    # from the audit of the same subset that judged it and stopped for human labels
    out = audit_waiting_8.root / "audit"
    res = tiap_cli(
        "audit",
        sample_bundle_dir,
        "--out",
        out,
        "--panel",
        "offline",
        "--n",
        "8",
        "--no-humans",
        "--no-progress",
        "--probes",
        "order",
        cwd=tmp_path,
    )
    assert res.returncode == 3
    assert "scale gate failed" in res.stderr
    assert not (out / "probe").exists()  # probes run only when the audit goes on
    assert "binary Fleiss' kappa over the judges" in res.stderr
    with Workspace(out / "workspace.sqlite", create=False) as ws:
        judged = {r.case_id for r in ws.latest_labels(rater_kind="judge")}
        assert judged == set(ws.case_ids(subset="validation"))
        assert ws.count_cases() > len(judged)
        assert ws.events("gate_force") == []
    assert not (out / "final").exists()
    # judge run refuses beyond the validation subset for the same reason.
    refused = tiap_cli(
        "judge", "run", "--db", out / "workspace.sqlite", "--panel", "offline", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "scale gate failed" in refused.stderr


def test_audit_bad_bundle_is_one_line(tiap_cli, tmp_path: Path) -> None:
    res = tiap_cli(
        "audit", tmp_path / "nope", "--out", tmp_path / "o", "--panel", "offline", cwd=tmp_path
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "bundle directory not found" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--probes", "order,bogus"), "--probes: unknown probe kind 'bogus'"),
        (("--probes", ","), "--probes: unknown probe kind (none)"),
        (("--probes", "order", "--probe-repeats", "1"), "--probe-repeats must be from 2 to 20"),
    ],
)
def test_audit_bad_probes_are_one_line_before_any_work(
    tiap_cli, tmp_path: Path, sample_bundle_dir: Path, args: tuple[str, ...], message: str
) -> None:
    out = tmp_path / "o"
    res = tiap_cli(
        "audit", sample_bundle_dir, "--out", out, "--panel", "offline", *args, cwd=tmp_path
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert message in res.stderr
    assert not out.exists()  # nothing created


@pytest.mark.parametrize("evil", ["<script>alert(1)</script>"])
def test_index_html_escapes_text(tmp_path: Path, evil: str) -> None:
    from tiap.audit import AuditContext, StepName, StepRecord, StepRun, write_index
    from tiap.audit.steps import utc_now

    context = AuditContext(
        bundle=evil,
        dataset=evil,
        panel=evil,
        judges=[evil],
        rubric=evil,
        rubric_hash=evil,
        workspace=evil,
        subset=evil,
        humans="required",
    )
    step = StepRecord(
        step=StepName.RESCORE,
        title=evil,
        runs=[StepRun(at=utc_now(), status="done", detail=evil)],
    )
    md, page = write_index(tmp_path, context, [step], "complete", evil, None)
    text = page.read_text()
    assert evil not in text
    assert "&lt;script&gt;" in text
    # index.md shows the same text literally: with Markdown's escapes, which render as
    # the characters, never as raw HTML
    markdown = md.read_text()
    assert evil not in markdown
    assert "\\<script\\>alert(1)\\</script\\>" in markdown
    assert "script" not in md_tags(markdown)
