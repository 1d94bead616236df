"""`tiap audit` on a rebuilt bundle: the same command on a bundle whose cases
changed stops with an error naming both bundle versions; with --replace-stale it
retires the stale cases and their labels and goes on with the new version, so every
report counts exactly the cases a fresh extraction gives."""

from __future__ import annotations

import json
from pathlib import Path

from tiap.cases import Workspace
from version_support import copy_bundle, reverse_rankings, rewrite_derived_texts


def _fresh(tiap_cli, bundle: Path, tmp: Path, name: str) -> dict:
    """A fresh extraction of the bundle into a new workspace: its JSON report."""
    done = tiap_cli("cases", "extract", bundle, "--db", tmp / f"{name}.sqlite", "--json", cwd=tmp)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _fresh_cases(tmp: Path, name: str) -> dict[str, str]:
    with Workspace.open_readonly(tmp / f"{name}.sqlite") as ws:
        return {c.case_id: c.memory_text for c in ws.cases()}


def _check_replaced(out: Path, tmp: Path, name: str, fresh: dict) -> None:
    """Every figure of the audit is over the fresh extraction's cases, of its version."""
    fingerprint = fresh["version"]["fingerprint"]
    want = _fresh_cases(tmp, name)
    final = json.loads((out / "final" / "report.json").read_text(encoding="utf-8"))
    assert final["n_cases"] == fresh["contested"] == len(want)
    assert final["source"]["bundle_version"] == fingerprint
    validation = json.loads((out / "validation" / "report.json").read_text(encoding="utf-8"))
    assert validation["source"]["bundle_version"] == fingerprint
    assert f"cases of bundle version {fingerprint[:12]}" in (out / "final" / "report.md").read_text(
        encoding="utf-8"
    )
    assert f"bundle version {fingerprint[:12]}" in (out / "index.md").read_text(encoding="utf-8")
    with Workspace.open_readonly(out / "workspace.sqlite") as ws:
        assert {c.case_id: c.memory_text for c in ws.cases()} == want
        assert {r.case_id for r in ws.latest_labels()} <= set(want)
        assert set(ws.case_ids(subset="validation")) <= set(want)
        assert ws.stale_subsets() == []
        assert ws.retired_case_versions()  # the stale ones are kept


def test_a_rebuilt_bundle_stops_the_audit_or_replaces_its_stale_cases(
    tiap_cli, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    bundle = copy_bundle(sample_bundle_dir, tmp_path / "bundle")
    out = tmp_path / "audit"
    args = ("audit", bundle, "--out", out, "--panel", "offline", "--n", "20", "--overlap", "8")
    args += ("--no-humans", "--force", "--no-progress")
    first = tiap_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    v1 = copy_bundle(bundle, tmp_path / "bundle-v1")

    # every derived memory gets a new text: the cases' text is not the workspace's
    assert rewrite_derived_texts(bundle) > 0
    stopped = tiap_cli(*args, cwd=tmp_path)
    assert stopped.returncode == 2, stopped.stdout
    old = _fresh(tiap_cli, v1, tmp_path, "v1")["version"]["fingerprint"]
    fresh = _fresh(tiap_cli, bundle, tmp_path, "v2")
    new = fresh["version"]["fingerprint"]
    assert new != old
    error = stopped.stderr.strip()
    assert len(error.splitlines()) == 1
    assert "Traceback" not in error
    assert old[:12] in error
    assert new[:12] in error
    assert "--replace-stale" in error
    with Workspace.open_readonly(out / "workspace.sqlite") as ws:
        assert ws.current_version("contested").fingerprint == old  # type: ignore[union-attr]

    replaced = tiap_cli(*args, "--replace-stale", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert f"bundle version {old[:12]} -> {new[:12]}" in replaced.stdout
    assert "'validation' drawn again" in replaced.stdout
    _check_replaced(out, tmp_path, "v2", fresh)

    # then the rankings: some cases go, others come
    reverse_rankings(bundle)
    fresh3 = _fresh(tiap_cli, bundle, tmp_path, "v3")
    before = set(_fresh_cases(tmp_path, "v2"))
    assert set(_fresh_cases(tmp_path, "v3")) != before
    assert tiap_cli(*args, cwd=tmp_path).returncode == 2
    again = tiap_cli(*args, "--replace-stale", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    _check_replaced(out, tmp_path, "v3", fresh3)

    # and the same command once more: nothing stale, nothing new
    settled = tiap_cli(*args, cwd=tmp_path)
    assert settled.returncode == 0, settled.stderr
    assert "none new" in settled.stdout


def _task(root: Path) -> Path:
    """A small LMEB task: six queries with graded documents, the corpus one level up."""
    task = root / "Episodic" / "toy" / "graded"
    task.mkdir(parents=True)
    (task / "queries.jsonl").write_text(
        "".join(json.dumps({"id": f"s_{i}_q", "text": f"query {i}"}) + "\n" for i in range(6)),
        encoding="utf-8",
    )
    docs = [{"id": f"d{j}", "title": f"T{j}", "text": f"document {j}"} for j in range(30)]
    (task.parent / "corpus.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8"
    )
    lines = [f"s_{i}_q\td{i + 6 * g}\t{2 - min(g, 2)}\n" for i in range(6) for g in range(4)]
    (task / "qrels.tsv").write_text("".join(lines), encoding="utf-8")
    return task


def test_a_changed_qrels_source_stops_the_qrels_audit_or_is_drawn_again(
    tiap_cli, tmp_path: Path
) -> None:
    task = _task(tmp_path / "src")
    out = tmp_path / "audit"
    args = ("audit", task, "--mode", "qrels", "--out", out, "--panel", "offline", "--n", "6")
    args += ("--overlap", "2", "--per-dataset", "8", "--no-humans", "--force", "--no-progress")
    assert tiap_cli(*args, cwd=tmp_path).returncode == 0
    corpus = task.parent / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("document", "doc"), "utf-8")
    stopped = tiap_cli(*args, cwd=tmp_path)
    assert stopped.returncode == 2, stopped.stdout
    assert "qrels pairs of bundle version" in stopped.stderr
    assert "--replace-stale" in stopped.stderr
    again = tiap_cli(*args, "--replace-stale", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    final = json.loads((out / "final" / "report.json").read_text(encoding="utf-8"))
    with Workspace.open_readonly(out / "workspace.sqlite") as ws:
        pairs = ws.cases(subset="qrels")
        assert all(c.memory_text.startswith("doc ") for c in pairs)
        assert final["n_cases"] == len(pairs)
        assert final["source"]["bundle_version"] == ws.subset("qrels").bundle_fingerprint
