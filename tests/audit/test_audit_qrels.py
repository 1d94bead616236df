"""`tiap audit --mode qrels` (the LMEB procedure) on LMEB task trees written from the
real LoCoMo and LongMemEval data, with known errors written into the qrels: random
documents labelled relevant, and evidence left out of the qrels but ranked first by
the run. An oracle panel answers from the truth (the datasets' evidence) over real
HTTP; the report must show the errors in its figures and verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.lmeb import RUN_FILE, Tree, prompt_key, write_tree
from support.loopback import LoopbackServer, Script, label_reply
from tiap.annotate.session import AnnotationSession
from tiap.audit import AuditSettings, StepName, run_audit
from tiap.cases import Workspace
from tiap.rubric import load_rubric
from tiap.traces.bundle import read_bundle

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

KEY_ENV = "TIAP_TEST_ORACLE_KEY"
SINGLE, MULTI = "Dialogue/LoCoMo/single_hop", "Dialogue/LoCoMo/multi_hop"
LME = "Dialogue/LongMemEval/single_session_user"
# 40 negatives per dataset: none found relevant shows a missed rate of at most 0.10 only
# from 35 decided negatives on (the Wilson upper bound of 0 of 35 is 0.099)
WRONG, MISSED, NEGATIVES = {SINGLE: 30}, {LME: 10}, 40


@pytest.fixture(scope="module")
def tree(built, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    root = tmp_path_factory.mktemp("lmeb") / "LMEB"
    locomo, lme = (
        read_bundle(built.copy(k, root.parent / k)) for k in ("locomo-raw", "longmemeval-raw")
    )
    return write_tree(root, locomo, lme, wrong=WRONG, missed=MISSED)


def oracle(tree: Tree) -> Script:
    """Answers every qrels prompt from the truth; anything else is not a qrels prompt."""

    def answer(body: dict[str, Any]) -> Any:
        key = prompt_key(body)
        if key is None:
            return label_reply("not_a_label", "not a qrels prompt")
        return label_reply("relevant" if key in tree.truth else "not_relevant", "oracle")

    return Script(default=answer)


@pytest.fixture
def panel(tmp_path: Path, tree: Tree, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_ENV, "sk-oracle-test")
    with LoopbackServer(oracle(tree)) as server:
        lines = ['name = "oracle"', "temperature = 0", "max_tokens = 100", "timeout_s = 10"]
        for name in ("oracle-a", "oracle-b", "oracle-c"):
            lines += [
                "[[judges]]",
                f'name = "{name}"',
                f'model = "openai/{name}"',
                f'api_base = "{server.url}"',
                f'api_key_env = "{KEY_ENV}"',
                "concurrency = 8",
                'response_format = "none"',
            ]
        path = tmp_path / "oracle.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        yield path, server


def _settings(tree: Tree, out: Path, panel: Path, **kw: Any) -> AuditSettings:
    return AuditSettings(
        bundle=tree.root,
        out=out,
        panel=str(panel),
        mode="qrels",
        per_dataset=500,  # every qrels line
        group_by="task",  # each task has errors of its own written in
        negatives=NEGATIVES,
        run=RUN_FILE,
        n=30,
        agreement_resamples=1000,
        progress=False,
        **kw,
    )


def _label_as_the_truth(db: Path, tree: Tree) -> int:
    """A person labels the validation subset in the terminal app's session, from the truth."""
    with Workspace(db, create=False) as ws:
        rubric = load_rubric("qrels-relevance")
        session = AnnotationSession(ws, rubric, "alice", subset="validation")
        for i in range(len(session)):
            session.position = i
            case = session.current
            key = (case.question.strip(), (case.title or "").strip(), case.memory_text.strip())
            session.label("relevant" if key in tree.truth else "not_relevant")
        return len(session)


def test_the_audit_surfaces_wrong_and_missing_labels(tmp_path: Path, tree: Tree, panel) -> None:
    panel_file, server = panel
    out = tmp_path / "audit"
    lines: list[str] = []
    first = run_audit(_settings(tree, out, panel_file), say=lines.append)
    assert first.status == "waiting"
    assert first.next_command is not None
    assert "--subset validation --rubric qrels-relevance" in first.next_command
    assert lines[0].startswith("[1] draw qrels pairs: done")
    labelled = _label_as_the_truth(out / "workspace.sqlite", tree)
    assert labelled == 30

    done = run_audit(_settings(tree, out, panel_file), say=lines.append)
    assert done.status == "complete", done.message
    assert done.step(StepName.EXTRACT).found_done.endswith("already drawn")  # type: ignore[union-attr]
    assert done.validation is not None
    assert done.validation.gate.passed  # the oracle judges agree, with each other and alice
    assert done.qrels_verdicts == {
        MULTI: "labels reliable",
        SINGLE: "labels unreliable",
        LME: "missing labels",
    }
    final = done.final
    assert final is not None
    assert final.qrels is not None
    for name, task in tree.tasks.items():
        g = final.qrels.by_dataset[name]
        wrong, missed = len(task.wrong), len(task.missed)
        assert (wrong, missed) == (WRONG.get(name, 0), MISSED.get(name, 0))
        # every qrels line was drawn; the confirmed share drops by the wrong labels
        assert g.annotated_relevant == task.lines
        assert g.confirmed.relevant == task.lines - wrong
        assert g.confirmed.value == pytest.approx((task.lines - wrong) / task.lines)
        # the negatives are the run's top unjudged documents: the left-out evidence
        # among them is found relevant, the rest is not
        assert g.negatives == NEGATIVES
        assert g.negatives_found_relevant.relevant == missed
        assert g.negatives_found_relevant.value == pytest.approx(missed / NEGATIVES)
        # the person labelled part of the pairs, exactly as the panel did
        vs = g.panel_vs_reference
        assert vs is not None
        if vs.n:
            assert vs.agreement.value == 1.0
    with Workspace.open_readonly(out / "workspace.sqlite") as ws:
        drawn = ws.cases(subset="qrels")
        negatives = {(c.dataset, c.query_id, c.memory_id) for c in drawn if c.pair == "negative"}
    for name, task in tree.tasks.items():
        assert {(name, q, d) for q, d in task.missed} <= negatives
    # each pair was asked once per judge, however often the audit ran
    assert server.count == 3 * len(drawn)

    index = (out / "index.md").read_text(encoding="utf-8")
    assert "## 3. Every drawn pair: are the relevance labels right?" in index
    assert f"| {SINGLE} | labels unreliable |" in index
    report = json.loads((out / "final" / "report.json").read_text(encoding="utf-8"))
    assert report["qrels"]["by_dataset"][LME]["verdict"] == "missing labels"
    assert report["qrels"]["by_dataset"][LME]["missed"] == "fail"
    assert report["qrels"]["by_dataset"][SINGLE]["precision"] == "fail"


def test_the_command_runs_the_qrels_audit(tiap_cli, tmp_path: Path, tree: Tree, panel) -> None:
    panel_file, _ = panel
    out = tmp_path / "cli"
    args = ("audit", tree.root, "--mode", "qrels", "--out", out, "--panel", panel_file)
    opts = ("--per-dataset", "500", "--negatives", str(NEGATIVES), "--run", RUN_FILE)
    opts += ("--group-by", "task")
    done = tiap_cli(*args, *opts, "--n", "30", "--no-humans", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"qrels {SINGLE}: labels unreliable" in done.stdout
    assert f"qrels {LME}: missing labels" in done.stdout
    bad = tiap_cli(*args, "--min-confirmed", "1.2", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--min-confirmed must be a finite number in [0, 1] (got 1.2)" in bad.stderr
    mixed = tiap_cli(*args, "--rubric", "contested-credit", cwd=tmp_path)
    assert mixed.returncode == 2
    assert "rubric 'contested-credit' judges contested credits" in mixed.stderr
