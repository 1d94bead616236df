"""Every figure counts labels of one rubric version: the judges'. Labels made under
another version of the rubric (same id, another content hash) are left out of every
figure, counted per rater and noted; when the subset's human labels were all made
under another version, the gate fails naming it (label again, or --no-humans,
which is recorded); the gate records the reference's rubric hash."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from agreement_support import add_labels, validation_workspace

from tiap.agreement import compute_report, labels_from_workspace
from tiap.cases.events import GateEvent, read_events
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric, load_rubric

S, P, D = "supports", "partial", "does_not_support"
N = 30


def truth(n: int) -> list[str]:
    return [(S, D, P, D)[i % 4] for i in range(n)]


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    """Version 2 of contested-credit: the same id and labels, 'partial' redefined."""
    text = (resources.files("tiap.rubric") / "builtin" / "contested-credit.toml").read_text()
    assert 'version = "1"' in text
    text = text.replace('version = "1"', 'version = "2"').replace(
        "The memory carries some of the needed information",
        "The memory carries at least half of the needed information",
    )
    path = tmp_path / "contested-credit-v2.toml"
    path.write_text(text, encoding="utf-8")
    return path


def write_labels(path: Path, rater: str, ids: list[str], labels: list[str]) -> Path:
    rows = [f"{cid},{rater},{lab}" for cid, lab in zip(ids, labels, strict=True)]
    path.write_text("case_id,rater,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def judged_under_v2(path: Path, v2: Rubric) -> tuple[Path, list[str]]:
    ws = validation_workspace(path, N, beyond=5)
    ids = ws.case_ids(subset="validation")
    for j in ("judge-a", "judge-b", "judge-c"):
        add_labels(ws, j, truth(N), rubric=v2, case_ids=ids)
    ws.close()
    return path, ids


def test_human_labels_of_another_version_do_not_pass_the_gate(
    tiap_cli, tmp_path: Path, v2: Path, capsys
) -> None:
    v1, rub2 = load_rubric("contested-credit"), load_rubric(str(v2))
    assert (v1.id, v1.label_names) == (rub2.id, rub2.label_names)
    assert v1.content_hash != rub2.content_hash
    db, ids = judged_under_v2(tmp_path / "ws.sqlite", rub2)
    # alice labelled the subset under version 1 (the built-in), exactly like the judges
    alice = write_labels(tmp_path / "alice.csv", "alice", ids, truth(N))
    assert tiap_cli("labels", "import", alice, "--db", db, "--rater-kind", "human",
                    "--rubric", "contested-credit").code == 0  # fmt: skip
    capsys.readouterr()
    report = ["agreement", "report", "--db", db, "--subset", "validation", "--rubric", v2]
    code = tiap_cli(*report, "--out", tmp_path / "r").code
    printed = capsys.readouterr().out
    assert code == 3, printed
    assert (
        f"failed: the human labels on this subset were made under another version of rubric "
        f"contested-credit (hash {v1.content_hash[:12]}), not the judges' "
        f"({rub2.content_hash[:12]}): 30 label(s) by alice, left out of every figure; label "
        "the subset again under this version, or gate on the judges alone with --no-humans "
        "(recorded)"
    ) in printed
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["vs_reference"]["available"] is False
    assert data["gate"]["reference_rubric_hash"] is None
    assert data["gate"]["other_version_labels"] == {"alice": 30}
    assert [r["name"] for r in data["raters"]] == ["judge-a", "judge-b", "judge-c"]
    assert any(
        n.startswith("left out rater(s) alice: their 30 label(s) were made under another")
        for n in data["notes"]
    )
    with Workspace(db, create=False) as ws:
        (event,) = read_events(ws, GateEvent)
    assert not event.passed
    assert event.reference_rubric_hash is None
    assert event.no_humans is False

    # gating on the judges alone is a choice, recorded
    assert tiap_cli(*report, "--no-humans", "--out", tmp_path / "r2").code == 0
    assert "scale gate: PASS" in capsys.readouterr().out
    with Workspace(db, create=False) as ws:
        event = read_events(ws, GateEvent)[-1]
    assert (event.passed, event.no_humans, event.reference_rubric_hash) == (True, True, None)
    assert event.figures.judge_kappa == {}

    # alice labels again under version 2: she is the reference, and the gate says so
    assert tiap_cli("labels", "import", alice, "--db", db, "--rater-kind", "human",
                    "--rubric", v2).code == 0  # fmt: skip
    assert tiap_cli(*report, "--out", tmp_path / "r3").code == 0
    capsys.readouterr()
    with Workspace(db, create=False) as ws:
        event = read_events(ws, GateEvent)[-1]
    assert (event.passed, event.no_humans) == (True, False)
    assert event.reference_rubric_hash == rub2.content_hash == event.rubric_hash
    assert set(event.figures.judge_kappa) == {"judge-a", "judge-b", "judge-c"}
    data = json.loads((tmp_path / "r3" / "report.json").read_text())
    assert data["gate"]["other_version_labels"] == {}


def test_labels_of_another_version_are_left_out_and_counted(tmp_path: Path, v2: Path) -> None:
    v1, rub2 = load_rubric("contested-credit"), load_rubric(str(v2))
    db, ids = judged_under_v2(tmp_path / "ws.sqlite", rub2)
    with Workspace(db) as ws:
        # alice under version 2 on every case; bob under version 1, disagreeing with
        # everyone; carol under version 2 on the first 10 cases and version 1 after
        add_labels(ws, "alice", truth(N), kind="human", rubric=rub2, case_ids=ids)
        add_labels(ws, "bob", [S] * N, kind="human", rubric=v1, case_ids=ids)
        add_labels(ws, "carol", truth(10), kind="human", rubric=rub2, case_ids=ids[:10])
        add_labels(ws, "carol", [S] * 20, kind="human", rubric=v1, case_ids=ids[10:])
        table = labels_from_workspace(ws, subset="validation")
        rep = compute_report(table, rub2, resamples=0)
    assert rep.gate.passed, rep.gate.failures
    assert rep.gate.other_version_labels == {"bob": 30, "carol": 20}
    assert rep.gate.reference_rubric_hash == rub2.content_hash
    # bob is left out entirely; carol counts on her 10 labels under version 2
    assert [r.name for r in rep.raters] == ["judge-a", "judge-b", "judge-c", "alice", "carol"]
    carol = next(r for r in rep.raters if r.name == "carol")
    assert (carol.n_valid, carol.n_missing) == (10, 20)
    ref = rep.vs_reference.reference
    assert ref is not None
    assert (ref.raters, ref.n_cases, ref.unresolved) == (["alice", "carol"], N, 0)
    assert all(v.labels.kappa.value == 1.0 for v in rep.vs_reference.raters)
    assert any("left out rater(s) bob: their 30 label(s)" in n for n in rep.notes)
    assert any("left out 20 label(s) of rater carol" in n for n in rep.notes)
    # the caller's table is unchanged
    assert [r.name for r in table.raters][-3:] == ["alice", "bob", "carol"]


def test_a_named_rater_of_another_version_is_an_error(tmp_path: Path, v2: Path) -> None:
    v1, rub2 = load_rubric("contested-credit"), load_rubric(str(v2))
    db, ids = judged_under_v2(tmp_path / "ws.sqlite", rub2)
    with Workspace(db) as ws:
        add_labels(ws, "bob", truth(N), kind="human", rubric=v1, case_ids=ids)
        table = labels_from_workspace(ws, subset="validation")
    for kwargs in ({"reference": "bob"}, {"raters": ["judge-a", "bob"]}):
        with pytest.raises(TiapError) as err:
            compute_report(table, rub2, resamples=0, **kwargs)  # type: ignore[arg-type]
        assert str(err.value) == (
            f"rater 'bob' has no label under the judges' rubric contested-credit "
            f"({rub2.content_hash[:12]}): its 30 label(s) were made under rubric "
            f"contested-credit ({v1.content_hash[:12]})"
        )


def test_no_humans_with_a_reference_is_an_error(tmp_path: Path, v2: Path) -> None:
    db, _ = judged_under_v2(tmp_path / "ws.sqlite", load_rubric(str(v2)))
    with Workspace(db) as ws:
        table = labels_from_workspace(ws, subset="validation")
    with pytest.raises(TiapError, match="--no-humans leaves human labels out"):
        compute_report(table, load_rubric(str(v2)), reference="alice", no_humans=True)


def test_a_reference_whose_version_is_unknown_does_not_pass(tmp_path: Path) -> None:
    import sqlite3

    from tiap.agreement import record_gate

    rubric = load_rubric("contested-credit")
    db = tmp_path / "ws.sqlite"
    ws = validation_workspace(db, N)
    ids = ws.case_ids(subset="validation")
    for j in ("judge-a", "judge-b"):
        add_labels(ws, j, truth(N), rubric=rubric, case_ids=ids)
    add_labels(ws, "alice", truth(N), kind="human", rubric=rubric, case_ids=ids)
    ws.close()
    # alice's labels as an earlier tool stored them: no rubric hash
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE labels SET rubric_hash = NULL WHERE rater = 'alice'")
    conn.close()
    line = (
        "the human reference's labels do not say which rubric version they were made under, "
        f"so they cannot be shown to be of the judges' ({rubric.content_hash[:12]}); label the "
        "subset again under this version, or gate on the judges alone with --no-humans "
        "(recorded)"
    )
    with Workspace(db) as ws:
        rep = compute_report(labels_from_workspace(ws, subset="validation"), rubric)
        assert rep.gate.failures == [line]
        assert record_gate(ws, rep) is not None
    # nobody's labels say their version (the judges' neither): the verdict is recorded
    # for the report's rubric, so the reference must be shown to be of it too
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE labels SET rubric_hash = NULL")
    conn.close()
    with Workspace(db) as ws:
        rep = compute_report(labels_from_workspace(ws, subset="validation"), rubric)
        assert rep.gate.rubric_hash == rubric.content_hash
        assert rep.gate.failures == [line]
        assert record_gate(ws, rep) is not None
        (_, event) = read_events(ws, GateEvent)
    assert not event.passed
