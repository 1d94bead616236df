"""An output path that is an input, holds one or lies inside one is refused.

``tiap traces build lmeb DIR --out DIR --force`` cleared the task's own
``queries.jsonl`` before writing the bundle there, and the task could not be read
again. Every command that reads inputs and writes an output directory (or file)
now refuses such an output before it reads or writes anything, with or without
``--force``: one check, :func:`tiap.io.check_apart`, on resolved paths (symbolic
links followed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz_support import (
    LABELS,
    jsonl,
    snapshot,
    workspace_with_cases,
    write_bundle,
    write_lmeb,
)
from tiap.errors import TiapError


def refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("tiap: error: "), err
    assert "write somewhere apart from the inputs (--force does not change this)" in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.mark.parametrize("where", ["same", "inside", "holds", "link"])
@pytest.mark.parametrize("force", [True, False])
def test_build_lmeb_never_writes_into_its_task(
    tiap_cli, tmp_path: Path, where: str, force: bool
) -> None:
    task = tmp_path / "data" / "task"
    write_lmeb(task)
    out = {
        "same": task,
        "inside": task / "bundle",
        "holds": tmp_path / "data",
        "link": tmp_path / "link",
    }[where]
    if where == "link":
        out.symlink_to(task)
    before = snapshot(tmp_path)
    args = ["traces", "build", "lmeb", str(task), "--out", str(out), "-r", "none", "-q"]
    code, _, err = tiap_cli(args + (["--force"] if force else []))
    problem = {
        "same": "is the input",
        "inside": "lies inside the input",
        "holds": "holds the input",
        "link": "is the input",
    }[where]
    refused(code, err, f"--out {out}: {problem} {task}")
    assert snapshot(tmp_path) == before
    # the task is still readable, and a bundle apart from it is built
    code, _, err = tiap_cli(
        "traces",
        "build",
        "lmeb",
        str(task),
        "--out",
        str(tmp_path / "b"),
        "-r",
        "none",
        "-q",
    )
    assert code == 0, err


def test_every_command_with_inputs_and_an_output(tiap_cli, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    write_bundle(bundle)
    task = tmp_path / "task"
    write_lmeb(task)
    labels = tmp_path / "labels" / "labels.jsonl"
    labels.parent.mkdir()
    labels.write_bytes(jsonl(LABELS))
    # a workspace whose name ends in .csv: an export to it would replace it
    db = workspace_with_cases(tmp_path / "w.csv", ["c0", "c1", "c2"])
    memories = tmp_path / "exports" / "m.jsonl"
    memories.parent.mkdir()
    memories.write_bytes(jsonl([{"memory_id": "x", "text": "t", "source_ids": ["d1"]}]))
    search = memories.parent / "s.jsonl"
    search.write_bytes(jsonl([{"query_id": "q1", "ranking": ["x"]}]))
    cases = [
        (["rescore", str(bundle), "--out", str(bundle)], f"--out {bundle}: is the bundle"),
        (["rescore", str(bundle), "--out", str(bundle / "runs" / "x")], "lies inside the bundle"),
        (["traces", "export", "lmeb", str(bundle), str(bundle), "--force"],
         f"{bundle}: is the bundle"),
        (["traces", "import", "lmeb", str(task), "--memories", f"st={memories}",
          "--search", f"st={search}", "--mapping", "jsonl", "--out", str(memories.parent),
          "--force", "-q"], f"holds the memories export of st {memories}"),
        (["traces", "import", "lmeb", str(task), "--memories", f"st={memories}", "--mapping",
          "jsonl", "--out", str(task), "--force", "-q"], f"is the input {task}"),
        (["agreement", "report", "--labels", str(labels), "--out", str(labels.parent)],
         f"holds the labels file {labels}"),
        (["labels", "export", "--db", str(db), "--out", str(db)], f"is the workspace {db}"),
        (["audit", str(bundle), "--out", str(bundle / "audit"), "--panel", "offline",
          "--no-progress"], "lies inside the bundle"),
    ]  # fmt: skip
    for args, fragment in cases:
        before = snapshot(tmp_path)
        code, _, err = tiap_cli(args)
        refused(code, err, fragment)
        assert snapshot(tmp_path) == before, args


def test_the_check(tmp_path: Path) -> None:
    from tiap.io import check_apart

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "f.json").write_text("[]")
    (tmp_path / "other").mkdir()
    inputs = [("input", tmp_path / "in"), ("panel", "offline"), ("run", None)]
    check_apart(tmp_path / "other", inputs)  # apart: fine
    check_apart(tmp_path / "in-2", inputs)  # a sibling whose name starts alike: fine
    check_apart(tmp_path / "new" / "deeper", inputs)  # not there yet: fine
    for out in (tmp_path / "in", tmp_path / "in" / "x" / "y", tmp_path, tmp_path / "in" / ".."):
        with pytest.raises(TiapError, match="write somewhere apart"):
            check_apart(out, inputs)
    (tmp_path / "to-in").symlink_to(tmp_path / "in")
    with pytest.raises(TiapError, match=r"is the input"):
        check_apart(tmp_path / "to-in", inputs)
    with pytest.raises(TiapError, match=r"lies inside the input"):
        check_apart(tmp_path / "to-in" / "sub", inputs)
