"""A command refused for bad input creates nothing: no workspace, no output directory.

``cases from-qrels`` with an unreadable ``--run`` exited 2 but left an empty
workspace file (the run was read only after the workspace was created); so did
``cases extract --runs`` naming no run of the bundle, and an audit of a bundle
without a contested credit. Every command that creates a workspace (``cases
extract``, ``cases from-qrels``, ``audit``; ``labels import`` and the others need
an existing one) now reads and checks its inputs first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz_support import CSV_LINES, snapshot, write_bundle, write_lmeb


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    write_bundle(root / "bundle")
    write_lmeb(root / "task")
    # a bundle whose runs rank each query's raw turn first: no contested credit
    write_bundle(root / "plain")
    runs = [{"query_id": f"q{i}", "ranking": [f"m{i}"]} for i in (1, 2, 3)]
    (root / "plain" / "runs" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (root / "broken.trec").write_text("q1 Q0 d1 one 1.0 r\n")
    (root / "a-directory.trec").mkdir()
    (root / "labels.csv").write_text("".join(f"{ln}\n" for ln in CSV_LINES))
    return root


def _cases(root: Path, work: Path) -> dict[str, tuple[list[str], str]]:
    """Each refused command and what its one line must say."""
    db = str(work / "w.sqlite")
    task, bundle = str(root / "task"), str(root / "bundle")
    qrels = ["cases", "from-qrels", task, "--db", db, "--negatives", "2", "--run"]
    out = ["--out", str(work / "out"), "--db", db, "--no-progress"]
    audit = ["audit", bundle, *out]
    return {
        "from-qrels-run-missing": ([*qrels, str(root / "none.trec")], "none.trec"),
        "from-qrels-run-malformed": ([*qrels, str(root / "broken.trec")], "broken.trec:1"),
        "from-qrels-run-directory": ([*qrels, str(root / "a-directory.trec")], "a-directory"),
        "from-qrels-no-name": (
            ["cases", "from-qrels", task, "--db", db, "--name", " "],
            "the subset needs a name",
        ),
        "from-qrels-bundle-run-unknown": (
            ["cases", "from-qrels", bundle, "--db", db, "--negatives", "2", "--run", "nope"],
            "nope",
        ),
        "extract-runs-unknown": (
            ["cases", "extract", bundle, "--db", db, "--runs", "nope"],
            "unknown run(s) nope",
        ),
        "audit-panel-missing": ([*audit, "--panel", str(root / "missing.toml")], "missing.toml"),
        "audit-rubric-not-toml": (
            [*audit, "--panel", "offline", "--rubric", str(root / "labels.csv")],
            "labels.csv",
        ),
        "audit-no-contested": (
            ["audit", str(root / "plain"), *out, "--panel", "offline"],
            "no contested credits in",
        ),
        "audit-qrels-run-malformed": (
            ["audit", task, *out, "--mode", "qrels", "--panel", "offline", "--negatives", "2",
             "--run", str(root / "broken.trec")],
            "broken.trec:1",
        ),
        "labels-import-no-workspace": (
            ["labels", "import", str(root / "labels.csv"), "--db", db, "--rater-kind", "judge"],
            "workspace not found",
        ),
    }  # fmt: skip


CASES = [
    "from-qrels-run-missing", "from-qrels-run-malformed", "from-qrels-run-directory",
    "from-qrels-no-name", "from-qrels-bundle-run-unknown", "extract-runs-unknown",
    "audit-panel-missing", "audit-rubric-not-toml", "audit-no-contested",
    "audit-qrels-run-malformed", "labels-import-no-workspace",
]  # fmt: skip


def test_every_case_is_tried(inputs: Path, tmp_path: Path) -> None:
    assert sorted(_cases(inputs, tmp_path)) == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_bad_input_creates_no_workspace(tiap_cli, inputs: Path, tmp_path: Path, case: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args, fragment = _cases(inputs, work)[case]
    before = snapshot(tmp_path)
    code, _, err = tiap_cli(args)
    assert code == 2, (args, err)
    assert err.count("\n") == 1, err
    assert fragment in err, (fragment, err)
    assert snapshot(tmp_path) == before  # no workspace, no --out, inputs as they were


def test_good_input_still_creates_the_workspace(tiap_cli, inputs: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.sqlite"
    code, _, err = tiap_cli(
        "cases",
        "from-qrels",
        str(inputs / "task"),
        "--db",
        str(db),
        "--per-dataset",
        "2",
    )
    assert code == 0, err
    assert db.is_file()
    code, _, err = tiap_cli("cases", "extract", str(inputs / "bundle"), "--db", str(db))
    assert code == 0, err
