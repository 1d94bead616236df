"""`tiap traces import` on a small LoCoMo-shaped benchmark: mappings, export shapes, lineage.

Every broken-lineage case is built by hand here; the real LoCoMo file is used in
``test_import_locomo.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.locomo_sample import locomo_sample
from tiap.cli import main
from tiap.errors import InputError, TiapError
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.bundle import read_bundle
from tiap.traces.imports import (
    ImportMapping,
    SystemExport,
    builtin_mappings,
    import_bundle,
    load_mapping,
)
from tiap.traces.imports.mapping import MISSING, get_path
from tiap.traces.locomo import load_locomo
from tiap.traces.report import BuildReport

SAMPLE = locomo_sample({"question": "No evidence", "answer": "x", "evidence": [], "category": 3})

MEM0_MEMORIES = {
    "results": [
        {"id": "m1", "memory": "Ann adopted a puppy named Rex", "hash": "h1",
         "metadata": {"source_ids": ["conv-1:D1:1"]}, "user_id": "conv-1",
         "created_at": "2024-01-01T00:00:00"},
        {"id": "m2", "memory": "Bob plays the violin", "metadata": {"source_ids": "conv-1:D1:2"}},
        # lineage that does not resolve
        {"id": "m3", "memory": "A memory with no metadata at all"},
        {"id": "m4", "memory": "Linked to a turn that does not exist",
         "metadata": {"source_ids": ["conv-1:D9:9"]}},
        {"id": "m5", "memory": "Ann's sister and Rex",
         "metadata": {"source_ids": ["conv-1:D1:3", "conv-1:D1:99", "conv-1:D1:3"]}},
        {"id": 6, "memory": "an integer id", "metadata": {"source_ids": [["conv-1:D1:2"]]}},
    ]
}  # fmt: skip
MEM0_SEARCH = {
    "conv-1:q0": {"results": [
        {"id": "m1", "memory": "Ann adopted a puppy named Rex", "score": 0.9},
        {"id": "ghost", "memory": "not in the export", "score": 0.8},
        {"id": "m3", "memory": "A memory with no metadata at all", "score": 0.5},
        {"id": "m1", "memory": "Ann adopted a puppy named Rex", "score": 0.4},
    ]},
    "conv-1:q1": {"results": [{"id": "6", "score": 0.7}, {"id": "m2"}]},
    "conv-1:q2": {"results": [{"id": "m1", "score": 0.1}]},  # a query the build excluded
}  # fmt: skip


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    return _write(tmp_path / "locomo.json", [SAMPLE])


@pytest.fixture
def ds(locomo_file: Path) -> DatasetTraces:
    return load_locomo(locomo_file)


def _system(
    name: str, memories: Path, mapping: str | ImportMapping, **searches: Path
) -> SystemExport:
    m = mapping if isinstance(mapping, ImportMapping) else load_mapping(mapping)
    return SystemExport(name, memories, m, str(mapping), dict(searches))


def _issues(report: BuildReport, kind: str) -> list[tuple[str, str | None]]:
    return [(i.item, i.value) for i in report.issues if i.kind == kind]


# ------------------------------------------------------------------------- mappings


def test_builtin_mappings() -> None:
    assert builtin_mappings() == ["jsonl", "mem0"]
    mem0 = load_mapping("mem0")
    assert mem0.memories.records == "results"
    assert mem0.memories.text == "memory"
    assert mem0.memories.source_ids == "metadata.source_ids"
    assert mem0.memories.raw is False
    assert mem0.memories.canonical is True
    jsonl = load_mapping("jsonl")
    assert jsonl.memories.id == "memory_id"
    assert jsonl.search.results == "ranking"
    assert jsonl.search.layout == "records"


def test_get_path() -> None:
    obj = {"a": {"b": [1]}, "c": None}
    assert get_path(obj, "a.b") == [1]
    assert get_path(obj, "") is obj
    assert get_path(obj, "c") is None
    assert get_path(obj, "a.x") is MISSING
    assert get_path(obj, "a.b.c") is MISSING


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[memories\nid = 1", r"mapping.toml:1: malformed TOML"),
        ("[memories]\nidd = 'x'\n", r"unknown field 'memories.idd'"),
        ("[memories]\nraw = 3\n", r"memories.raw"),
        ("[memories]\nraw = ''\n", r"memories.raw"),
        ("[memories]\nsource_id_template = '{turn}'\n", r"unknown field\(s\) turn"),
        ("[memories]\nsource_id_template = 'x'\n", r"must contain \{value\}"),
        ("[memories]\nsource_id_template = '{conversation}:{value}'\n", r"set 'conversation'"),
        ("[memories]\nsource_ids = 'a..b'\n", r"not a dotted path"),
        # templates take plain fields only: a format spec could crash or allocate without end
        *(
            (f"[memories]\nsource_id_template = '{t}'\n", rf"memories.source_id_template': {m}")
            for t, m in [
                ("{value:d}", r"\{value:d\}: a field takes no format spec or conversion"),
                ("{value:>999999999}", r"\{value:>999999999\}: a field takes no format spec"),
                ("{value!r}", r"\{value!r\}: a field takes no format spec or conversion"),
                ("{value:{conversation}}", r"\{value:\{conversation\}\}: a field takes no"),
                ("x{}{value}", r"unknown field\(s\) \{\}"),
                ("{0}{value}", r"unknown field\(s\) 0"),
                ("{value[0]}", r"unknown field\(s\) value\[0\]"),
                ("{value.__class__}", r"unknown field\(s\) value.__class__"),
                ("{value", r"expected '\}' before end of string"),
                ("{value}}", r"Single '\}' encountered"),
            ]
        ),
        ("[search]\nlayout = 'rows'\n", r"search.layout"),
    ],
)
def test_mapping_errors_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mapping.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        load_mapping(str(path))
    assert str(path) in str(err.value)


def test_unknown_mapping_name() -> None:
    with pytest.raises(TiapError, match=r"unknown mapping 'zep'.*jsonl, mem0"):
        load_mapping("zep")


# ---------------------------------------------------------------- Mem0 exports


def test_mem0_exports_and_every_broken_lineage_case(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES)
    search = _write(tmp_path / "search.json", MEM0_SEARCH)
    result = import_bundle(ds, [_system("mem0", mem, "mem0", mem0=search)])
    b, r = result.bundle, result.report
    store = {m.memory_id: m for m in b.stores["mem0"]}
    assert list(store) == ["m1", "m2", "m3", "m4", "m5", "6"]  # no raw turns without --with-raw
    assert store["m1"].source_ids == ["conv-1:D1:1"]
    assert store["m1"].canonical
    assert not store["m1"].raw
    assert store["m1"].conversation_id == "conv-1"
    assert store["m2"].source_ids == ["conv-1:D1:2"]  # a single value
    assert store["6"].source_ids == ["conv-1:D1:2"]  # a nested list, an integer id
    # unlinked memories are kept, neither raw nor linked
    for mid in ("m3", "m4"):
        assert store[mid].source_ids == []
        assert not store[mid].raw
        assert store[mid].conversation_id is None
    assert store["m5"].source_ids == ["conv-1:D1:3"]  # the bad link dropped, the repeat once
    assert store["m5"].metadata["unresolved_links"] == ["conv-1:D1:99"]
    assert _issues(r, "import_link_unresolved") == [
        ("mem0:m4", "conv-1:D9:9"),
        ("mem0:m5", "conv-1:D1:99"),
    ]
    assert {i.item: i.detail for i in r.issues if i.kind == "import_memory_unlinked"} == {
        "mem0:m3": "no source link",
        "mem0:m4": "no source link resolves",
    }
    # rankings: an unknown id is dropped (the rest move up), a repeat is kept
    rankings = b.rankings("mem0")
    assert rankings["conv-1:q0"] == ["m1", "m3", "m1"]
    assert rankings["conv-1:q1"] == ["6", "m2"]
    entries = {e.query_id: e for e in b.runs["mem0"]}
    assert entries["conv-1:q0"].scores == [0.9, 0.5, 0.4]
    assert entries["conv-1:q1"].scores is None  # one result without a score
    assert _issues(r, "import_ranked_unknown") == [("mem0:conv-1:q0", "ghost")]
    assert _issues(r, "import_ranked_repeat") == [("mem0:conv-1:q0", "m1")]
    assert _issues(r, "import_query_excluded") == [("mem0:conv-1:q2", "search.json")]
    assert "conv-1:q2" not in rankings
    assert r.counts["mem0.memories_read"] == 6
    assert r.counts["mem0.memories_linked"] == 4
    assert r.counts["mem0.memories_unlinked"] == 2
    assert r.counts["mem0.links_read"] == 7
    assert r.counts["mem0.links_unresolved"] == 2
    assert r.counts["mem0.ranked_unknown"] == 1
    assert r.counts["mem0.queries_ranked"] == 2
    assert r.counts["mem0.queries_without_results"] == 0
    assert r.excluded_queries == ["conv-1:q2"]
    assert set(r.rules) == set(r.issue_counts)
    assert b.config.runs["mem0"].retriever == "external"
    assert b.config.stores["mem0"].config["mapping"] == "mem0"
    assert r.options["imported"]["mem0"]["memories"] == "memories.json"
    assert len(r.options["imported"]["mem0"]["memories_sha256"]) == 64


def test_with_raw_adds_the_benchmark_turns(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES)
    search = _write(tmp_path / "s.json", {"conv-1:q0": [{"id": "conv-1:D1:1"}, {"id": "m1"}]})
    result = import_bundle(ds, [_system("mem0", mem, "mem0", mem0=search)], with_raw=True)
    store = result.bundle.stores["mem0"]
    raw = [m for m in store if m.raw]
    assert [m.memory_id for m in raw] == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D1:3"]
    assert store[:3] == raw  # raw turns first: the native-store layout
    assert result.bundle.rankings("mem0")["conv-1:q0"] == ["conv-1:D1:1", "m1"]
    assert result.report.counts["mem0.raw_memories_added"] == 3
    # a memory id that is a source id would collide with the raw turn
    clash = _write(tmp_path / "clash.json", [{"id": "conv-1:D1:1", "memory": "x"}])
    with pytest.raises(InputError, match=r"clash.json: \[0\]: memory id 'conv-1:D1:1' is a"):
        import_bundle(ds, [_system("a", clash, "mem0")], with_raw=True)


def test_search_shapes(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES["results"])  # a bare list
    keyed_lists = _write(tmp_path / "k.json", {"conv-1:q0": [{"id": "m1", "score": 1}]})
    records = _jsonl(
        tmp_path / "r.jsonl",
        [
            {"query_id": "conv-1:q0", "results": [{"id": "m1", "score": 0.5}]},
            {"query_id": "conv-1:q1", "results": [{"id": "m2", "score": 0.25}]},
        ],
    )
    one_line = _jsonl(tmp_path / "one.jsonl", [{"query_id": "conv-1:q1", "results": ["m2"]}])
    as_list = _write(tmp_path / "l.json", [{"query_id": "conv-1:q1", "results": [{"id": "m2"}]}])
    system = _system("mem0", mem, "mem0", a=keyed_lists, b=records, c=one_line, d=as_list)
    b = import_bundle(ds, [system]).bundle
    assert b.rankings("a") == {"conv-1:q0": ["m1"]}
    assert b.rankings("b") == {"conv-1:q0": ["m1"], "conv-1:q1": ["m2"]}
    assert {e.query_id: e.scores for e in b.runs["b"]} == {"conv-1:q0": [0.5], "conv-1:q1": [0.25]}
    assert b.rankings("c") == {"conv-1:q1": ["m2"]}
    assert b.rankings("d") == {"conv-1:q1": ["m2"]}
    assert {n: rc.store for n, rc in b.config.runs.items()} == dict.fromkeys("abcd", "mem0")


def test_jsonl_mapping_reads_tiaps_line_formats(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = _jsonl(
        tmp_path / "m.jsonl",
        [
            {"memory_id": "t1", "text": "Ann adopted Rex", "source_ids": ["conv-1:D1:1"]},
            {"memory_id": "t2", "text": "summary", "source_ids": ["conv-1:D1:1", "conv-1:D1:2"],
             "canonical": False},
            {"memory_id": "conv-1:D1:2", "text": "I started the violin last month.",
             "source_ids": ["conv-1:D1:2"], "raw": True},
            {"memory_id": "t4", "text": "raw but unlinked", "source_ids": [], "raw": True},
        ],
    )  # fmt: skip
    search = _jsonl(
        tmp_path / "s.jsonl",
        [{"query_id": "conv-1:q1", "ranking": ["conv-1:D1:2", "t2"], "scores": [2.0, 1.5]}],
    )
    result = import_bundle(ds, [_system("sys", mem, "jsonl", sys=search)])
    store = {m.memory_id: m for m in result.bundle.stores["sys"]}
    assert store["t1"].canonical  # a missing flag: canonical unless raw
    assert not store["t1"].raw
    assert not store["t2"].canonical
    assert store["conv-1:D1:2"].raw
    assert not store["conv-1:D1:2"].canonical
    assert not store["t4"].raw  # no lineage: kept, not raw
    assert _issues(result.report, "import_raw_unlinked") == [("sys:t4", None)]
    assert result.bundle.runs["sys"][0].scores == [2.0, 1.5]


def test_custom_toml_mapping(ds: DatasetTraces, tmp_path: Path) -> None:
    mapping = tmp_path / "zep.toml"
    mapping.write_text(
        """
name = "zep-like"
[memories]
records = "data.facts"
id = "uuid"
text = "fact"
source_ids = "provenance.turns"
split = ","
conversation = "provenance.session"
source_id_template = "{conversation}:{value}"
raw = "provenance.is_turn"
canonical = false
[search]
layout = "keyed"
results = "hits"
memory_id = "fact.uuid"
score = "fact.relevance"
""",
        encoding="utf-8",
    )
    mem = _write(
        tmp_path / "facts.json",
        {"data": {"facts": [
            {"uuid": "f1", "fact": "Rex is a puppy",
             "provenance": {"turns": "D1:1, D1:3", "session": "conv-1"}},
            {"uuid": "f2", "fact": "no session", "provenance": {"turns": "D1:2"}},
            {"uuid": "f3", "fact": "flag", "provenance": {"turns": "D1:2", "session": "conv-1",
                                                          "is_turn": "yes"}},
        ]}},
    )  # fmt: skip
    search = _write(tmp_path / "hits.json", {"conv-1:q0": {"hits": [{"fact": {"uuid": "f1"}}]}})
    system = _system("zep", mem, load_mapping(str(mapping)), zep=search)
    with pytest.raises(InputError, match=r"facts.json: data.facts\[2\]: 'provenance.is_turn'"):
        import_bundle(ds, [system])
    facts = json.loads(mem.read_text())
    facts["data"]["facts"].pop()
    _write(mem, facts)
    result = import_bundle(ds, [system])
    store = {m.memory_id: m for m in result.bundle.stores["zep"]}
    assert store["f1"].source_ids == ["conv-1:D1:1", "conv-1:D1:3"]
    assert not store["f1"].canonical
    assert store["f2"].source_ids == []
    assert [i.detail for i in result.report.issues if i.kind == "import_link_unresolved"] == [
        "no 'provenance.session' to fill {conversation}"
    ]
    assert result.bundle.rankings("zep") == {"conv-1:q0": ["f1"]}


@pytest.mark.parametrize(
    ("memories", "search", "message"),
    [
        ([{"id": "a", "memory": "x"}, {"id": "a", "memory": "y"}], None,
         r"\[1\]: duplicate memory id 'a' \(first at \[0\]\)"),
        ([{"id": "a"}], None, r"memory 'a': no text at 'memory'"),
        ([{"memory": "x"}], None, r"no memory id at 'id'"),
        ({"memories": []}, None, r"expected a list of memories at 'results'"),
        ([{"id": "a", "memory": "x"}], {"conv-1:q9": []}, r"key 'conv-1:q9': unknown query id"),
        ([{"id": "a", "memory": "x"}], {"conv-1:q0": {"hits": []}}, r"no list of results"),
        ([{"id": "a", "memory": "x"}], {"conv-1:q0": [True]}, r"a result is true"),
    ],
)  # fmt: skip
def test_bad_exports_name_file_and_place(
    ds: DatasetTraces, tmp_path: Path, memories: Any, search: Any, message: str
) -> None:
    mem = _write(tmp_path / "memories.json", memories)
    searches = {"s": _write(tmp_path / "search.json", search)} if search is not None else {}
    with pytest.raises(InputError, match=message):
        import_bundle(ds, [_system("s", mem, "mem0", **searches)])


def test_bad_jsonl_lines(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = tmp_path / "m.jsonl"
    mem.write_text('{"memory_id": "a", "text": "x", "source_ids": []}\n{"memory_id": \n', "utf-8")
    with pytest.raises(InputError, match=r"m.jsonl:2: malformed JSON line"):
        import_bundle(ds, [_system("s", mem, "jsonl")])
    mem.write_text('{"memory_id": "a", "text": "x"}\n{"memory_id": "a", "text": "y"}\n', "utf-8")
    with pytest.raises(InputError, match=r"m.jsonl:2: duplicate memory id 'a' \(first at line 1\)"):
        import_bundle(ds, [_system("s", mem, "jsonl")])
    mem.write_text('{"memory_id": "a", "text": "x"}\n', "utf-8")
    search = _jsonl(tmp_path / "s.jsonl", [{"query_id": "conv-1:q0", "ranking": ["a"]}] * 2)
    with pytest.raises(InputError, match=r"s.jsonl:2: query 'conv-1:q0' listed twice"):
        import_bundle(ds, [_system("s", mem, "jsonl", s=search)])


def test_names_are_checked(ds: DatasetTraces, tmp_path: Path) -> None:
    mem = _write(tmp_path / "m.json", [])
    with pytest.raises(TiapError, match="store name 'a b'"):
        import_bundle(ds, [_system("a b", mem, "mem0")])
    with pytest.raises(TiapError, match="run 'r' is named twice"):
        import_bundle(ds, [_system("a", mem, "mem0", r=mem), _system("b", mem, "mem0", r=mem)])
    with pytest.raises(TiapError, match="nothing to import"):
        import_bundle(ds, [])


# ------------------------------------------------------------------------ the command


def test_cli_import_writes_a_valid_bundle(tiap_cli, locomo_file: Path, tmp_path: Path) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES)
    search = _write(tmp_path / "search.json", MEM0_SEARCH)
    out = tmp_path / "bundle"
    tiap_cli.ok(
        "traces", "import", "locomo", str(locomo_file), "--out", str(out), "-q",
        "--memories", f"mem0={mem}", "--search", f"mem0={search}",
        "--search", f"mem0:again={search}", "--mapping", "mem0", "--with-raw",
    )  # fmt: skip
    b = read_bundle(out)
    assert set(b.runs) == {"mem0", "again"}
    assert len(b.stores["mem0"]) == 3 + 6
    report = BuildReport.model_validate_json((out / "build_report.json").read_text())
    assert report.issue_counts["import_ranked_unknown"] == 2
    assert report.counts["again.queries_ranked"] == 2
    rescore = tmp_path / "rescore"
    tiap_cli.ok("rescore", str(out), "--out", str(rescore), "--resamples", "50")
    data = json.loads((rescore / "report.json").read_text())
    # q0: m1 (Source and Canonical member) at rank 1; the raw turn is not ranked
    assert data["runs"]["mem0"]["targets"]["canonical"]["n_evaluated"] == 2
    assert data["runs"]["mem0"]["targets"]["raw"]["means"]["hit@60"] == 0.0
    assert data["runs"]["mem0"]["targets"]["source"]["means"]["hit@60"] == 1.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--search", "other=search.json"], "--search other: no --memories other=FILE"),
        (["--search", "mem0"], "expected STORE=FILE"),
        (["--search", "mem0=search.json"] * 2, "run 'mem0' given twice"),
        (["--mapping", "jsonl"], "give one mapping for every store"),
        (["--mapping", "x=jsonl"], "no --memories x=FILE"),
    ],
)  # fmt: skip
def test_cli_import_option_errors(
    locomo_file: Path,
    tmp_path: Path,
    extra: list[str],
    message: str,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "memories.json", MEM0_MEMORIES)
    _write(tmp_path / "search.json", MEM0_SEARCH)
    args = ["traces", "import", "locomo", str(locomo_file), "--out", "b", "-q",
            "--memories", "mem0=memories.json", "--mapping", "mem0", *extra]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_import_without_mapping(locomo_file: Path, tmp_path: Path, capsys) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES)
    with pytest.raises(SystemExit) as exit_info:
        main(["traces", "import", "locomo", str(locomo_file), "--out", str(tmp_path / "b"),
              "--memories", f"mem0={mem}"])  # fmt: skip
    assert exit_info.value.code == 2
    assert "store 'mem0' has no mapping" in capsys.readouterr().err


# ------------------------------------------------------------------ repeated keys

REPEATED = "appears twice in one object (a repeated key would hide a value)"


def test_a_keyed_export_with_a_repeated_query_is_refused_like_the_records_layout(
    ds: DatasetTraces, tmp_path: Path
) -> None:
    mem = _write(tmp_path / "memories.json", MEM0_MEMORIES)
    keyed = tmp_path / "search.json"
    keyed.write_text(
        '{\n"conv-1:q0": {"results": [{"id": "m1"}]},\n'
        '"conv-1:q1": {"results": [{"id": "m2"}]},\n'
        '"conv-1:q0": {"results": [{"id": "m3"}]}\n}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        import_bundle(ds, [_system("s", mem, "mem0", s=keyed)])
    assert str(err.value) == f"{keyed}:4: key 'conv-1:q0' {REPEATED}"
    # the same data as records is refused too (the query is listed twice)
    records = _jsonl(
        tmp_path / "search.jsonl",
        [
            {"query_id": "conv-1:q0", "results": [{"id": "m1"}]},
            {"query_id": "conv-1:q0", "results": [{"id": "m3"}]},
        ],
    )
    with pytest.raises(InputError, match=r"search.jsonl:2: query 'conv-1:q0' listed twice"):
        import_bundle(ds, [_system("s", mem, "mem0", s=records)])


@pytest.mark.parametrize(
    ("name", "text", "line", "key"),
    [
        # a memory whose text or links are given twice: which one is meant?
        ("m.json", '[{"id": "a", "memory": "x",\n  "memory": "y"}]', 2, "memory"),
        ("m.json", '{"results": [{"id": "a", "memory": "x", "metadata":\n'
         '{"source_ids": ["conv-1:D1:1"], "source_ids": []}}]}', 2, "source_ids"),
        ("m.json", '{"results": [],\n\n"results": [{"id": "a", "memory": "x"}]}', 3, "results"),
        # JSON Lines: the line of the object
        ("m.jsonl", '{"id": "a", "memory": "x"}\n{"id": "b", "id": "c", "memory": "y"}\n', 2,
         "id"),
    ],
)  # fmt: skip
def test_a_memories_export_with_a_repeated_key_is_refused(
    ds: DatasetTraces, tmp_path: Path, name: str, text: str, line: int, key: str
) -> None:
    mem = tmp_path / name
    mem.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_bundle(ds, [_system("s", mem, "mem0")])
    assert str(err.value) == f"{mem}:{line}: key '{key}' {REPEATED}"


def test_a_source_id_template_fills_plain_fields_only(ds: DatasetTraces, tmp_path: Path) -> None:
    mapping = tmp_path / "braces.toml"
    mapping.write_text(
        "[memories]\nrecords = 'results'\ntext = 'memory'\nsource_ids = 'turn'\n"
        "source_id_template = 'conv-1:{value}'\n",
        encoding="utf-8",
    )
    mem = _write(tmp_path / "m.json", {"results": [{"id": "a", "memory": "x", "turn": "D1:1"}]})
    result = import_bundle(ds, [_system("s", mem, load_mapping(str(mapping)))])
    assert result.bundle.stores["s"][0].source_ids == ["conv-1:D1:1"]
    # a literal brace is written doubled; it stays literal (no such source here)
    mapping.write_text(
        mapping.read_text().replace("'conv-1:{value}'", "'{{conv-1}}:{value}'"), encoding="utf-8"
    )
    result = import_bundle(ds, [_system("s", mem, load_mapping(str(mapping)))])
    assert _issues(result.report, "import_link_unresolved") == [("s:a", "{conv-1}:D1:1")]


def test_cli_refuses_a_format_spec_in_a_template_in_one_line(
    locomo_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mapping = tmp_path / "spec.toml"
    mapping.write_text("[memories]\nsource_id_template = '{value:d}'\n", encoding="utf-8")
    mem = _write(tmp_path / "m.json", MEM0_MEMORIES)
    out = tmp_path / "bundle"
    with pytest.raises(SystemExit) as exit_info:
        main([
            "traces", "import", "locomo", str(locomo_file), "--out", str(out), "-q",
            "--memories", f"s={mem}", "--mapping", str(mapping),
        ])  # fmt: skip
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        f"tiap: error: {mapping}: invalid mapping: field 'memories.source_id_template': "
        "{value:d}: a field takes no format spec or conversion (write {value})\n"
    )
    assert not out.exists()
