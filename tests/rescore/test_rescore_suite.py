"""Suite-level scores (LMEB's Mean(Dataset) and Mean(Type)) over a small LMEB tree built
with ``tiap traces build lmeb --tree-root``, worked out by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tiap.cli import main
from tiap.errors import TiapError
from tiap.rescore.suite import find_bundles, is_suite
from tiap.traces.bundle import read_bundle
from tiap.traces.lmeb import load_lmeb, tree_place

# Each task: one relevant document per query; nDCG@10 is 1 when it is ranked first and 0
# when it is not ranked, so every task's mean is a share of queries found at rank 1.
#
#   task                              sys          alt          extra
#   Dialogue/LoCoMo/single_hop  q1: d1 -> 1     d1 -> 1
#                               q2: d1 -> 0     d2 -> 1
#                               mean 0.5        1.0
#   Dialogue/LoCoMo/multi_hop   q1: d1 -> 1     d2 -> 0      (mean 1.0 / 0.0)
#   Dialogue/MSC                q1: d2 -> 0     d1 -> 1      (a dataset that is its own task)
#   Episodic/EPBench/t1         q1: d1 -> 1     d2 -> 0      d1 -> 1 (only here)
#
# sys: LoCoMo (0.5 + 1.0)/2 = 0.75, MSC 0.0, EPBench 1.0
#      Mean(Dataset) = (0.75 + 0.0 + 1.0)/3 = 0.583333...
#      Dialogue (0.75 + 0.0)/2 = 0.375, Episodic 1.0 -> Mean(Type) = (0.375 + 1.0)/2 = 0.6875
#      (the plain mean over the four tasks would be 0.625)
# alt: LoCoMo (1.0 + 0.0)/2 = 0.5, MSC 1.0, EPBench 0.0
#      Mean(Dataset) = 1.5/3 = 0.5; Dialogue (0.5 + 1.0)/2 = 0.75, Episodic 0.0 -> 0.375
# extra: only in one task -> every mean above the task is undefined.
TASKS = {
    "Dialogue/LoCoMo/single_hop": {
        "queries": {"q1": "d1", "q2": "d2"},
        "runs": {"sys": {"q1": "d1", "q2": "d1"}, "alt": {"q1": "d1", "q2": "d2"}},
    },
    "Dialogue/LoCoMo/multi_hop": {
        "queries": {"q1": "d1"},
        "runs": {"sys": {"q1": "d1"}, "alt": {"q1": "d2"}},
    },
    "Dialogue/MSC": {"queries": {"q1": "d1"}, "runs": {"sys": {"q1": "d2"}, "alt": {"q1": "d1"}}},
    "Episodic/EPBench/t1": {
        "queries": {"q1": "d1"},
        "runs": {"sys": {"q1": "d1"}, "alt": {"q1": "d2"}, "extra": {"q1": "d1"}},
    },
}


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The LMEB tree: corpus one level up for LoCoMo's subsets (LMEB's layout)."""
    root = tmp_path_factory.mktemp("lmeb") / "LMEB"
    corpus = [{"id": "d1", "title": "", "text": "first"}, {"id": "d2", "title": "", "text": "x"}]
    for task, spec in TASKS.items():
        d = root / task
        d.mkdir(parents=True)
        _jsonl(d / "queries.jsonl", [{"id": q, "text": f"query {q}"} for q in spec["queries"]])
        (d / "qrels.tsv").write_text(
            "".join(f"{q}\t{doc}\t1\n" for q, doc in spec["queries"].items()), encoding="utf-8"
        )
        corpus_dir = d.parent if task.startswith("Dialogue/LoCoMo") else d
        _jsonl(corpus_dir / "corpus.jsonl", corpus)
    return root


@pytest.fixture(scope="module")
def bundles(tiap_cli, tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundles")
    for task, spec in TASKS.items():
        args = ["traces", "build", "lmeb", str(tree / task), "--tree-root", str(tree)]
        args += ["--out", str(out / task), "-r", "none", "-q"]
        for run, ranking in spec["runs"].items():
            path = out / f"{task.replace('/', '_')}.{run}.trec"
            path.write_text("".join(f"{q} Q0 {d} 1 1.0 {run}\n" for q, d in ranking.items()))
            args += ["--run", f"{run}={path}"]
        tiap_cli.ok(args)
    return out


def test_tree_place_names_type_dataset_and_task(tree: Path) -> None:
    assert tree_place(tree / "Dialogue/LoCoMo/single_hop", tree) == (
        "Dialogue",
        "LoCoMo",
        "Dialogue/LoCoMo/single_hop",
    )
    assert tree_place(tree / "Dialogue/MSC", tree) == ("Dialogue", "MSC", "Dialogue/MSC")
    with pytest.raises(TiapError, match="MEMORY_TYPE/DATASET"):
        tree_place(tree / "Dialogue", tree)
    with pytest.raises(TiapError, match="not inside the tree root"):
        tree_place(tree, tree / "Dialogue")
    ds = load_lmeb(tree / "Dialogue/LoCoMo/single_hop", tree_root=tree)
    assert (ds.dataset, ds.memory_type) == ("LoCoMo", "Dialogue")
    assert ds.options["lmeb_task"] == "Dialogue/LoCoMo/single_hop"
    plain = load_lmeb(tree / "Dialogue/LoCoMo/single_hop")
    assert (plain.dataset, plain.memory_type) == ("lmeb", None)


def test_bundle_toml_records_dataset_and_memory_type(bundles: Path) -> None:
    config = read_bundle(bundles / "Dialogue/LoCoMo/multi_hop").config
    assert (config.dataset, config.memory_type) == ("LoCoMo", "Dialogue")
    text = (bundles / "Episodic/EPBench/t1" / "bundle.toml").read_text()
    assert 'memory_type = "Episodic"' in text
    assert 'dataset = "EPBench"' in text


def test_find_bundles_names_tasks_by_their_path(bundles: Path) -> None:
    tasks = [e.task for e in find_bundles([bundles])]
    assert tasks == sorted(TASKS)
    assert is_suite([bundles])
    assert not is_suite([bundles / "Dialogue/MSC"])
    assert is_suite([bundles / "Dialogue/MSC", bundles / "Episodic/EPBench/t1"])
    with pytest.raises(TiapError, match="same folder"):
        find_bundles([bundles / "Dialogue/MSC", bundles / "Dialogue/MSC"])


def test_suite_means_by_hand(tiap_cli, bundles: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "suite"
    tiap_cli.ok("rescore", str(bundles), "--out", str(out), "--resamples", "20")
    printed = capsys.readouterr().out
    for task in TASKS:  # one subdirectory per bundle, each with its four files
        for name in ("per_query.csv", "report.json", "report.md", "report.html"):
            assert (out / task / name).is_file(), (task, name)
    suite = json.loads((out / "suite.json").read_text())
    assert suite["measure"] == "ndcg@10"
    assert suite["runs"] == ["alt", "extra", "sys"]
    assert suite["mean_dataset"]["sys"]["raw"] == pytest.approx(0.7 / 1.2)  # 0.583333
    assert suite["mean_type"]["sys"]["raw"] == pytest.approx(0.6875)
    assert suite["mean_dataset"]["alt"]["raw"] == pytest.approx(0.5)
    assert suite["mean_type"]["alt"]["raw"] == pytest.approx(0.375)
    assert suite["mean_type"]["sys"]["source"] == pytest.approx(0.6875)  # raw = source here
    assert suite["mean_type"]["sys"]["canonical"] is None  # no canonical memory anywhere
    assert suite["mean_dataset"]["extra"]["raw"] is None  # missing from three tasks
    datasets = {(d["memory_type"], d["name"]): d for d in suite["datasets"]}
    assert datasets["Dialogue", "LoCoMo"]["members"] == [
        "Dialogue/LoCoMo/multi_hop",
        "Dialogue/LoCoMo/single_hop",
    ]
    assert datasets["Dialogue", "LoCoMo"]["means"]["sys"]["raw"] == pytest.approx(0.75)
    assert datasets["Episodic", "EPBench"]["means"]["extra"]["raw"] == pytest.approx(1.0)
    types = {t["name"]: t for t in suite["memory_types"]}
    assert types["Dialogue"]["members"] == ["LoCoMo", "MSC"]
    assert types["Dialogue"]["means"]["alt"]["raw"] == pytest.approx(0.75)
    tasks = {t["task"]: t for t in suite["tasks"]}
    assert tasks["Dialogue/LoCoMo/single_hop"]["means"]["sys"]["raw"] == pytest.approx(0.5)
    assert tasks["Dialogue/LoCoMo/single_hop"]["n_evaluated"]["sys"]["canonical"] == 0
    assert tasks["Dialogue/MSC"]["dataset"] == "MSC"
    assert "instability" in tasks["Dialogue/MSC"]["headline"]
    assert suite["winners"]["mean_type"]["raw"] == ["sys"]
    assert suite["winner_flip"]["mean_type"] is False
    # each task's report quotes the suite's measure
    task_report = json.loads((out / "Dialogue/MSC" / "report.json").read_text())
    assert task_report["parameters"]["primary_measure"] == "ndcg@10"
    md = (out / "suite.md").read_text()
    assert "Mean(Dataset)" in md
    assert "Mean(Type)" in md
    assert "0.583" in md
    assert "0.688" in md
    assert "<svg" in (out / "suite.html").read_text()
    assert "suite of 4 tasks" in printed
    assert "wrote" in printed


def test_suite_is_deterministic(tiap_cli, bundles: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        tiap_cli.ok("rescore", str(bundles), "--out", str(tmp_path / name), "--resamples", "20")
    for name in ("suite.json", "suite.md", "suite.html"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_suite_errors_are_one_line(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exc:
        main(["rescore", str(empty), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "no bundle found" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["traces", "build", "lmeb", "--help"], "--tree-root"),
        (["rescore", "--help"], "suite.json"),
    ],
)
def test_help_names_the_suite_options(tiap_cli, args: list[str], expected: str, capsys) -> None:
    tiap_cli.ok(args)
    assert expected in capsys.readouterr().out


def test_suite_scores_on_lmebs_scale(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    """--scale 100 shows the suite's scores on LMEB's 0-100 scale; suite.json keeps 0-1."""
    tasks = tmp_path / "tasks"
    for name in ("Dialogue/sample/one", "Episodic/sample-copy/two"):
        shutil.copytree(sample_bundle_dir, tasks / name)
    plain, scaled = tmp_path / "plain", tmp_path / "scaled"
    tiap_cli.ok("rescore", tasks, "--out", plain, "--resamples", "10", "--metrics", "ndcg@10")
    done = tiap_cli.ok("rescore", tasks, "--out", scaled, "--resamples", "10",
                       "--metrics", "ndcg@10", "--scale", "100")  # fmt: skip
    a = json.loads((plain / "suite.json").read_text(encoding="utf-8"))
    b = json.loads((scaled / "suite.json").read_text(encoding="utf-8"))
    assert (a["scale"], b["scale"]) == (1, 100)
    assert a["mean_dataset"] == b["mean_dataset"]  # the file keeps 0-1
    run = a["runs"][0]
    value = a["mean_dataset"][run]["raw"]
    assert 0 < value < 1
    md = (scaled / "suite.md").read_text(encoding="utf-8")
    assert "LMEB's 0-100 scale" in md
    assert f"{value * 100:.3f}" in md
    assert f"{value * 100:.3f}" in done.out
    assert f"{value * 100:.3f}" not in (plain / "suite.md").read_text(encoding="utf-8")
    bad = tiap_cli("rescore", tasks, "--out", tmp_path / "bad", "--scale", "10")
    assert (bad.code, bad.err.strip()) == (2, "tiap: error: --scale must be 1 or 100 (got 10)")
    one = tiap_cli("rescore", sample_bundle_dir, "--out", tmp_path / "one", "--scale", "100")
    assert one.code == 2
    assert "--scale applies to a suite" in one.err
