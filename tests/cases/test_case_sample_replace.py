"""`tiap cases sample` on an existing subset: the error names --replace, and a
subset whose cases have labels is replaced only with --force too."""

from __future__ import annotations

from pathlib import Path

from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace


def test_replacing_a_subset(tiap_cli, tmp_path: Path, sample_bundle_dir: Path) -> None:
    db = str(tmp_path / "w.sqlite")
    assert tiap_cli("cases", "extract", str(sample_bundle_dir), "--db", db)[0] == 0
    assert tiap_cli("cases", "sample", "--db", db, "--n", "6")[0] == 0
    code, _, err = tiap_cli("cases", "sample", "--db", db, "--n", "6")
    assert code == 2
    assert err.count("\n") == 1
    assert "subset 'validation' exists already: choose another --name, or draw it again" in err
    assert "--replace" in err
    # no labels yet: --replace is enough
    code, out, _ = tiap_cli("cases", "sample", "--db", db, "--n", "4", "--replace")
    assert code == 0
    assert "subset 'validation': 4 of" in out
    with Workspace(db) as ws:
        ids = ws.case_ids(subset="validation")
        ws.add_label(LabelRecord(case_id=ids[0], rater="ann", rater_kind="human", label="partial"))
    code, _, err = tiap_cli("cases", "sample", "--db", db, "--n", "5", "--replace")
    assert code == 2
    assert "has labels on 1 of its 4 cases: add --force to replace it anyway" in err
    with Workspace(db) as ws:
        assert ws.case_ids(subset="validation") == ids  # unchanged
    code, out, _ = tiap_cli("cases", "sample", "--db", db, "--n", "5", "--replace", "--force")
    assert code == 0
    with Workspace(db) as ws:
        assert len(ws.case_ids(subset="validation")) == 5
        assert ws.latest_labels(case_ids=[ids[0]])[0].label == "partial"  # labels stay
