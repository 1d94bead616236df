"""`tiap rescore` end to end: files, determinism, errors, imports."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from bundle_support import random_bundle
from support.cli import TiapCli
from tiap.cli import main
from tiap.traces.bundle import write_bundle


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = random_bundle(21, n_queries=120, n_sources=100, n_runs=3, repeat_rate=0.2)
    bundle.config.runs["run0"].config = {"parser_max_facts": 2}
    bundle.config.runs["run1"].config = {"parser_max_facts": 5}
    return write_bundle(bundle, tmp_path_factory.mktemp("cli") / "bundle")


@pytest.fixture(scope="module")
def tiap_cli(tiap_cli: TiapCli) -> TiapCli:
    """``tiap`` with ``COLUMNS=120``."""
    return tiap_cli.with_env(COLUMNS="120")


def test_writes_three_files_byte_identical_and_never_imports_litellm(
    tiap_cli, bundle_dir: Path, tmp_path: Path
) -> None:
    out1, out2 = tmp_path / "one", tmp_path / "two"
    args = ["rescore", str(bundle_dir), "--out", str(out1), "--resamples", "400"]
    first = tiap_cli.subprocess(*args, python=("-X", "importtime"), env={"COLUMNS": None})
    assert first.returncode == 0, first.stderr
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in first.stderr.splitlines() if "|" in line
    ]
    assert "tiap.rescore.api" in imported  # the import log is really there
    assert not [m for m in imported if m.split(".")[0] in {"litellm", "openai", "pandas"}]
    assert "wrote" in first.stdout
    assert "mean ndcg@60" in first.stdout
    assert "warning:" in first.stderr  # repeated memories are reported

    # another string-hash seed: ids are matched on their hashes, the output must not move
    second = tiap_cli.subprocess(
        "rescore", str(bundle_dir), "--out", str(out2), "--resamples", "400",
        env={"PYTHONHASHSEED": "4711"},
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    for name in ("per_query.csv", "report.json", "report.md"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name

    with (out1 / "per_query.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == [
        "run", "query_id", "target", "target_size",
        "ndcg@10", "ndcg@60", "recall@10", "recall@60", "mrr@10", "mrr@60",
        "map@10", "map@60", "p@10", "p@60", "hit@10", "hit@60",
    ]  # fmt: skip
    assert len(rows) == 3 * 120 * 3
    empty = [r for r in rows if r["target_size"] == "0"]
    assert empty
    assert all(r["ndcg@10"] == "" for r in empty)

    report = json.loads((out1 / "report.json").read_text())
    assert report["parameters"]["resamples"] == 400
    assert report["parameters"]["seed"] == 1337
    assert report["warnings"]["count"] > 0
    assert report["warnings"]["messages"][0].startswith("runs/")  # no absolute paths
    assert sum(r["n_rankings_with_repeats"] for r in report["runs"].values()) > 0
    assert report["headline"]["design"][0]["key"] == "parser_max_facts"
    md = (out1 / "report.md").read_text()
    titles = ["Means per run", "Paired differences", "instability", "Winner flips"]
    titles += ["Design recommendation", "Exclusions", "Conventions"]
    for title in titles:
        assert title in md


def test_options_runs_metrics_k(bundle_dir: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["rescore", str(bundle_dir), "--out", str(tmp_path), "--k", "5,20",
              "--metrics", "ndcg,p@3", "--runs", "run2,run0", "--resamples", "50",
              "--seed", "3"])  # fmt: skip
    assert exc.value.code == 0
    header = (tmp_path / "per_query.csv").read_text().splitlines()[0]
    assert header == "run,query_id,target,target_size,ndcg@5,ndcg@20,p@3"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["parameters"]["runs"] == ["run0", "run2"]
    assert report["parameters"]["primary_measure"] == "ndcg@5"
    assert report["parameters"]["seed"] == 3
    assert [(p["run_a"], p["run_b"]) for p in report["run_pairs"]] == [("run0", "run2")]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "10,x"], "cut-off 'x' is not an integer"),
        (["--metrics", "ndcg,bleu"], "unknown measure 'bleu'"),
        (["--runs", "nope"], "unknown run 'nope'"),
        (["--resamples", "0"], "--resamples must be at least 1"),
    ],
)
def test_bad_options_one_line_exit_2(
    bundle_dir: Path, tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["rescore", str(bundle_dir), "--out", str(tmp_path / "o"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1


def test_bad_bundle_is_one_line_without_traceback(
    tiap_cli, bundle_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for p in bundle_dir.rglob("*"):
        if p.is_file():
            dest = broken / p.relative_to(bundle_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(p.read_bytes())
    run_file = broken / "runs" / "run1.jsonl"
    lines = run_file.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["ranking"] = ["no-such-memory", *entry["ranking"]]
    lines[2] = json.dumps(entry)
    run_file.write_text("\n".join(lines) + "\n")
    res = tiap_cli("rescore", str(broken), "--out", str(tmp_path / "o"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().count("\n") == 0
    assert "runs/run1.jsonl:3: unknown memory id 'no-such-memory'" in res.stderr

    missing = tiap_cli("rescore", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 2
    assert "bundle directory not found" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_trec_runs_give_the_same_scores(tmp_path: Path) -> None:
    bundle = random_bundle(22, n_queries=80, n_sources=70, n_runs=2, repeat_rate=0.0)
    jsonl = write_bundle(bundle, tmp_path / "jsonl")
    trec = write_bundle(bundle, tmp_path / "trec", run_format="trec")
    for src, out in ((jsonl, tmp_path / "o1"), (trec, tmp_path / "o2")):
        with pytest.raises(SystemExit) as exc:
            main(["rescore", str(src), "--out", str(out), "--resamples", "20"])
        assert exc.value.code == 0
    # queries with an empty ranking are not in a TREC file: both count as empty rankings
    assert (tmp_path / "o1" / "per_query.csv").read_bytes() == (
        tmp_path / "o2" / "per_query.csv"
    ).read_bytes()


def test_output_path_that_is_a_file(bundle_dir: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(SystemExit) as exc:
        main(["rescore", str(bundle_dir), "--out", str(target), "--resamples", "10"])
    assert exc.value.code == 2
    assert "not a directory" in capsys.readouterr().err
