"""`tiap traces import` on the real LoCoMo file, against the native observations store.

LoCoMo's observations are exported as a memory system would export them (Mem0's
``get_all`` JSON with the turn ids in ``metadata``, and a custom system whose
links are bare turn ids to be completed by the mapping), the native BM25
rankings over them as that system's search results, with every broken-lineage
case added. Imported with the raw turns (``--with-raw``), the bundle must
score exactly as the native ``observations`` store does, under every target.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tiap.traces.bundle import Bundle, read_bundle
from tiap.traces.report import BuildReport

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

CUSTOM_MAPPING = """
name = "bare-turn-ids"
[memories]
records = "items"
id = "key"
text = "body"
source_ids = "origin.turns"
split = ","
conversation = "origin.chat"
source_id_template = "{conversation}:{value}"
raw = false
canonical = true
[search]
layout = "records"
query_id = "qid"
results = "hits"
memory_id = "key"
score = ""
scores = "similarity"
"""


def _rows(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    with path.open(newline="") as fh:
        return {(r["run"], r["query_id"], r["target"]): r for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def locomo_path(shared_data_dir: Path) -> Path:
    return shared_data_dir / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def native(built, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    return read_bundle(
        built.copy("locomo-observations", tmp_path_factory.mktemp("native") / "bundle")
    )


@pytest.fixture(scope="module")
def exports(native: Bundle, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The two systems' exports, built from the native store and run."""
    d = tmp_path_factory.mktemp("exports")
    observations = [m for m in native.stores["observations"] if not m.raw]
    mem0_id = {m.memory_id: f"mem0-{i:05d}" for i, m in enumerate(observations)}
    bare_id = {m.memory_id: f"k{i}" for i, m in enumerate(observations)}
    mem0: list[dict[str, Any]] = [
        {
            "id": mem0_id[m.memory_id],
            "memory": m.text,
            "hash": f"h{i}",
            "metadata": {"source_ids": list(m.source_ids), "session": m.metadata["session"]},
            "user_id": m.conversation_id,
            "created_at": "2024-01-01T00:00:00+00:00",
        }
        for i, m in enumerate(observations)
    ]
    # every broken-lineage case (none of them may change a figure)
    mem0 += [
        {"id": "no-metadata", "memory": "A memory with no lineage"},
        {"id": "bad-turn", "memory": "Linked to nothing",
         "metadata": {"source_ids": ["conv-26:D99:1"]}},
        {"id": "bad-conv", "memory": "Unknown chat", "metadata": {"source_ids": "conv-99:D1:1"}},
    ]  # fmt: skip
    first = observations[0]
    mem0[0]["metadata"]["source_ids"] = [*first.source_ids, "conv-26:D1:999"]  # one good, one bad
    (d / "mem0_memories.json").write_text(json.dumps({"results": mem0}), encoding="utf-8")

    bare = [
        {
            "key": bare_id[m.memory_id],
            "body": m.text,
            "origin": {
                "chat": m.conversation_id,
                "turns": ", ".join(s.split(":", 1)[1] for s in m.source_ids),
            },
        }
        for m in observations
    ]
    (d / "bare_memories.json").write_text(json.dumps({"items": bare}), encoding="utf-8")

    keyed: dict[str, Any] = {}
    lines: list[str] = []
    for e in native.runs["bm25-observations"]:
        scores = e.scores or []
        results = [
            {"id": mem0_id.get(mid, mid), "memory": "...", "score": s}
            for mid, s in zip(e.ranking, scores, strict=True)
        ]
        # appended after the last rank: an unknown id, a repeat, an unlinked memory
        results += [{"id": "not-exported", "score": 0.0}, {"id": "no-metadata", "score": 0.0}]
        if results[0]["id"] != "not-exported":
            results.append(dict(results[0], score=0.0))
        keyed[e.query_id] = {"results": results}
        hits = [{"key": bare_id.get(mid, mid)} for mid in e.ranking]
        lines.append(json.dumps({"qid": e.query_id, "hits": hits, "similarity": scores}))
    keyed["conv-26:q30"] = {"results": []}  # a query the build excluded (no evidence)
    (d / "mem0_search.json").write_text(json.dumps(keyed), encoding="utf-8")
    (d / "bare_search.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "bare.toml").write_text(CUSTOM_MAPPING, encoding="utf-8")
    return {
        "dir": d,
        "n_observations": len(observations),
        "n_queries": len(native.queries),
        "n_ranked": sum(bool(e.ranking) for e in native.runs["bm25-observations"]),
    }


@pytest.fixture(scope="module")
def imported(tiap_cli, locomo_path: Path, exports: dict[str, Any], tmp_path_factory) -> Path:
    d = exports["dir"]
    out = tmp_path_factory.mktemp("imported") / "bundle"
    tiap_cli.ok(
        "traces", "import", "locomo", str(locomo_path), "-o", str(out), "-q", "--with-raw",
        "--memories", f"mem0={d / 'mem0_memories.json'}",
        "--search", f"mem0={d / 'mem0_search.json'}",
        "--memories", f"bare={d / 'bare_memories.json'}",
        "--search", f"bare={d / 'bare_search.jsonl'}",
        "--mapping", "mem0", "--mapping", f"bare={d / 'bare.toml'}",
    )  # fmt: skip
    return out


def test_import_report_counts_every_broken_link(imported: Path, exports: dict[str, Any]) -> None:
    report = BuildReport.model_validate_json((imported / "build_report.json").read_text())
    n_obs, n_q = exports["n_observations"], exports["n_queries"]
    c = report.counts
    assert c["mem0.memories_read"] == n_obs + 3
    assert c["mem0.memories_unlinked"] == 3
    assert c["mem0.memories_linked"] == n_obs
    assert c["mem0.links_unresolved"] == 3
    assert c["mem0.raw_memories_added"] == 5882
    assert c["bare.memories_unlinked"] == 0
    assert c["bare.links_unresolved"] == 0
    assert c["mem0.queries_ranked"] == c["bare.queries_ranked"] == n_q
    assert c["mem0.queries_excluded"] == 1
    assert c["mem0.ranked_unknown"] == n_q  # one "not-exported" per query
    assert report.issue_counts["import_ranked_unknown"] == n_q
    assert report.issue_counts["import_ranked_repeat"] == exports["n_ranked"]
    links = sorted((i.item, i.value) for i in report.issues if i.kind == "import_link_unresolved")
    assert links == [
        ("mem0:bad-conv", "conv-99:D1:1"),
        ("mem0:bad-turn", "conv-26:D99:1"),
        ("mem0:mem0-00000", "conv-26:D1:999"),
    ]
    unlinked = {i.item for i in report.issues if i.kind == "import_memory_unlinked"}
    assert unlinked == {"mem0:no-metadata", "mem0:bad-turn", "mem0:bad-conv"}
    assert [i.item for i in report.issues if i.kind == "import_query_excluded"] == [
        "mem0:conv-26:q30"
    ]
    b = read_bundle(imported)
    assert {n: len(m) for n, m in b.stores.items()} == {
        "mem0": 5882 + n_obs + 3,
        "bare": 5882 + n_obs,
    }
    assert b.config.stores["bare"].config["mapping"].endswith("bare.toml")


def test_imported_stores_score_as_the_native_observations(
    tiap_cli, native: Bundle, imported: Path, tmp_path: Path
) -> None:
    assert native.root is not None
    tiap_cli.ok("rescore", str(native.root), "--out", str(tmp_path / "native"), "--resamples", "50")
    tiap_cli.ok("rescore", str(imported), "--out", str(tmp_path / "imported"), "--resamples", "50")
    want = _rows(tmp_path / "native" / "per_query.csv")
    got = _rows(tmp_path / "imported" / "per_query.csv")
    measures = [k for k in next(iter(want.values())) if "@" in k]
    assert "ndcg@60" in measures
    compared = 0
    for (run, qid, target), row in want.items():
        assert run == "bm25-observations"
        for system in ("mem0", "bare"):
            other = got[(system, qid, target)]
            assert other["target_size"] == row["target_size"], (system, qid, target)
            for m in measures:
                assert other[m] == row[m], (system, qid, target, m)
            compared += 1
    assert compared == 2 * 3 * len(native.queries)
    native_report = json.loads((tmp_path / "native" / "report.json").read_text())
    imported_report = json.loads((tmp_path / "imported" / "report.json").read_text())
    for t in ("raw", "source", "canonical"):
        n_means = native_report["runs"]["bm25-observations"]["targets"][t]["means"]
        assert imported_report["runs"]["mem0"]["targets"][t]["means"] == n_means
        assert imported_report["runs"]["bare"]["targets"][t]["means"] == n_means


def test_import_without_raw_has_no_raw_target(
    tiap_cli, locomo_path: Path, exports: dict[str, Any], tmp_path: Path
) -> None:
    d = exports["dir"]
    search = tmp_path / "search.json"
    data = json.loads((d / "mem0_search.json").read_text())
    for value in data.values():  # the raw turns are not in this store: their ids are dropped
        value["results"] = [r for r in value["results"] if not str(r["id"]).startswith("conv-")]
    search.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "b"
    tiap_cli.ok("traces", "import", "locomo", str(locomo_path), "-o", str(out), "-q",
                "--memories", f"mem0={d / 'mem0_memories.json'}", "--search", f"mem0={search}",
                "--mapping", "mem0")  # fmt: skip
    tiap_cli.ok("rescore", str(out), "--out", str(tmp_path / "r"), "--resamples", "50")
    rows = _rows(tmp_path / "r" / "per_query.csv")
    assert {r["target_size"] for (_, _, t), r in rows.items() if t == "raw"} == {"0"}
    assert any(r["target_size"] != "0" for (_, _, t), r in rows.items() if t == "canonical")
