"""The fuzz test's kinds of input read by ``tiap traces import`` and ``tiap labels
import``: mapping files (with their templates), keyed search exports (with
repeated keys), and labels files imported into a workspace (with conflicting rows).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from fuzz_support import (
    BOM,
    CSV_LINES,
    Variant,
    as_directory,
    content,
    dangling,
    deep_array,
    jsonl,
    outside_garbage,
    symlink_to,
    workspace_with_cases,
    write_labels,
    write_lmeb,
)

# ------------------------------------------------------------------- traces import

MAPPING = """name = "fuzz"
[memories]
id = "memory_id"
text = "text"
source_ids = "links"
source_id_template = "d{value}"
[search]
layout = "keyed"
results = "ranking"
"""
IMPORT_MEMORIES = [
    {"memory_id": "m1", "text": "Alice has a cat.", "links": [1]},
    {"memory_id": "m2", "text": "Bob lives in Oslo.", "links": [2]},
    {"memory_id": "m3", "text": "Alice plays the cello.", "links": [3]},
]
SEARCH = {"q1": {"ranking": ["m1", "m2"]}, "q2": {"ranking": ["m2"]}, "q3": {"ranking": ["m3"]}}


def write_import(root: Path) -> None:
    """An LMEB task with a system's memories, its keyed search export and a mapping."""
    write_lmeb(root)
    (root / "memories.jsonl").write_bytes(jsonl(IMPORT_MEMORIES))
    (root / "search.json").write_text(json.dumps(SEARCH, indent=1))
    (root / "mapping.toml").write_text(MAPPING)


def import_args(root: Path, work: Path) -> list[str]:
    return [
        "traces", "import", "lmeb", str(root), "--memories", f"st={root / 'memories.jsonl'}",
        "--search", f"st={root / 'search.json'}", "--mapping", str(root / "mapping.toml"),
        "--out", str(work / "out"), "-q",
    ]  # fmt: skip


def _with_template(template: str) -> Callable[[Path], None]:
    return content(MAPPING.replace('"d{value}"', json.dumps(template)).encode())


def _with_line(key: str, value: str) -> Callable[[Path], None]:
    """The mapping with ``key = value`` added to its [memories] table."""
    return content(MAPPING.replace("[memories]\n", f"[memories]\n{key} = {value}\n").encode())


def mapping_variants() -> list[Variant]:
    t = "mapping.toml"
    out = [
        Variant(f"template-{vid}", t, _with_template(template))
        for vid, template in [
            ("format-int", "d{value:d}"),
            ("format-width", "{value:>999999999}"),
            ("format-fill", "d{value:_<3}"),
            ("format-nested", "{value:{conversation}}"),
            ("conversion-repr", "d{value!r}"),
            ("conversion-ascii", "{value!a}"),
            ("conversion-and-spec", "{value!s:>5}"),
            ("conversion-empty", "{value!}"),
            ("positional-empty", "d{}{value}"),
            ("positional-number", "{0}{value}"),
            ("index", "{value[0]}"),
            ("attribute", "{value.real}"),
            ("dunder", "{value.__class__.__init__}"),
            ("unclosed", "d{value"),
            ("unopened", "d{value}}"),
            ("lone-close", "}{value}"),
            ("braces-literal-only", "{{value}}"),
            ("no-field", "d1"),
            ("empty", ""),
            ("unknown-field", "{value}{turn}"),
            ("spaced-name", "{ value }"),
            ("upper-case", "{VALUE}"),
            ("conversation-without-path", "{conversation}:{value}"),
        ]
    ]
    out += [
        Variant("split-number", t, _with_line("split", "5")),
        Variant("raw-number", t, _with_line("raw", "3")),
        Variant("raw-empty", t, _with_line("raw", "''")),
        Variant("records-empty-part", t, _with_line("records", "'a..b'")),
        Variant("unknown-key", t, _with_line("idd", "'x'")),
        Variant("repeated-key", t, _with_line("text", "'memory'")),
        Variant("layout-unknown", t, content(MAPPING.replace('"keyed"', '"rows"').encode())),
        Variant("memories-not-a-table", t, content(b"memories = 3\n")),
        Variant("unknown-table", t, content((MAPPING + "[extra]\nx = 1\n").encode())),
        Variant("repeated-table", t, content((MAPPING + "[search]\nscore = 'x'\n").encode())),
        Variant("malformed", t, content(MAPPING[:40].encode())),
        Variant("invalid-utf8", t, content(b"# caf\xe9\n" + MAPPING.encode()), line=1),
        Variant("nul-byte", t, content(MAPPING.replace("\n", "\n\x00", 1).encode()), line=2),
        Variant("deep-nesting", t, content(f"deep = {deep_array()}\n{MAPPING}".encode())),
        Variant("binary-garbage", t, content(bytes(range(256)))),
        Variant("directory", t, as_directory),
        Variant("dangling-symlink", t, symlink_to(dangling)),
        Variant("symlink-to-garbage-outside", t, symlink_to(outside_garbage)),
        # taken: a BOM, CRLF, literal braces, a bare template, no mapping keys at all
        Variant("bom", t, content(BOM + MAPPING.encode()), 0),
        Variant("crlf", t, content(MAPPING.replace("\n", "\r\n").encode()), 0),
        Variant("template-literal-braces", t, _with_template("d{value}{{}}"), 0),
        Variant("template-empty-spec", t, _with_template("d{value:}"), 0),
    ]
    return out


def _search(text: str) -> Callable[[Path], None]:
    return content(text.encode())


def keyed_export_variants() -> list[Variant]:
    """A keyed search export (and the memories export beside it), broken; above all
    an object naming a key twice, which a JSON parser resolves to its last value."""
    s, m = "search.json", "memories.jsonl"
    q1, q2 = '"q1": {"ranking": ["m1"]}', '"q2": {"ranking": ["m2"]}'
    out = [
        Variant("repeated-query", s, _search(f"{{\n{q1},\n{q2},\n{q1}\n}}"), line=4),
        Variant("repeated-query-other-results", s,
                _search(f'{{\n{q1},\n"q1": {{"ranking": ["m3"]}}\n}}'), line=3),
        Variant("repeated-query-escaped", s,
                _search(f'{{{q1},\n"\\u0071\\u0031": {{"ranking": []}}}}'), line=2),
        Variant("repeated-query-one-line", s, _search(f"{{{q1}, {q2}, {q2}}}"), line=1),
        Variant("repeated-results-key", s,
                _search('{"q1": {"ranking": ["m1"],\n "ranking": ["m2"]}}'), line=2),
        Variant("repeated-key-in-a-result", s,
                _search('{"q1": {"ranking": [{"id": "m1",\n"id": "m2"}]}}'), line=2),
        Variant("repeated-query-far", s, _search(
            "{\n" + ",\n".join([q1, *(f'"x{i}": 1' for i in range(20)), q1]) + "\n}"), line=23),
        Variant("truncated", s, _search(f"{{\n{q1},\n{q2[:10]}")),
        Variant("truncated-value", s, _search('{"q1": {"ranking": ["m1"')),
        Variant("trailing-comma", s, _search(f"{{{q1},}}")),
        Variant("single-quotes", s, _search("{'q1': {'ranking': []}}")),
        Variant("nan-key", s, _search('{NaN: 1}')),
        Variant("ranking-not-a-list", s, _search('{"q1": {"ranking": "m1"}}')),
        Variant("result-true", s, _search('{"q1": {"ranking": [true]}}')),
        Variant("result-nested-list", s, _search('{"q1": {"ranking": [["m1"]]}}')),
        Variant("no-ranking", s, _search('{"q1": {"hits": []}}')),
        Variant("unknown-query", s, _search('{"q9": {"ranking": ["m1"]}}')),
        Variant("top-level-string", s, _search('"q1"')),
        Variant("top-level-number", s, _search("42")),
        Variant("json-lines", s, _search(f"{{{q1}}}\n{{{q2}}}\n")),
        Variant("empty-file", s, _search("")),
        Variant("whitespace-only", s, _search(" \n\t\n")),
        Variant("deep-nesting", s, _search('{"q1": {"ranking": ' + deep_array() + "}}")),
        Variant("invalid-utf8", s, content(b'{"q1": {"ranking": ["m\xe9"]}}')),
        Variant("nul-byte", s, content(b'{"q1": {"ranking": ["m\x001"]}}')),
        Variant("directory", s, as_directory),
        Variant("dangling-symlink", s, symlink_to(dangling)),
        Variant("symlink-to-garbage-outside", s, symlink_to(outside_garbage)),
        # the memories export: a memory whose text or links are given twice
        Variant("memory-repeated-text", m, content(jsonl(IMPORT_MEMORIES[:1]) +
                b'{"memory_id": "m2", "text": "a", "text": "b", "links": [2]}\n'), line=2),
        Variant("memory-repeated-links", m, content(
            b'{"memory_id": "m1", "text": "a", "links": [1], "links": [9]}\n'), line=1),
        Variant("memory-repeated-id-key", m, content(jsonl(IMPORT_MEMORIES[:2]) +
                b'{"memory_id": "m3", "memory_id": "m4", "text": "c", "links": [3]}\n'), line=3),
        # taken: the same query id in two different objects, a BOM, CRLF, NaN scores
        Variant("same-key-in-two-objects", s,
                _search('{"q1": {"ranking": [{"id": "m1"}, {"id": "m2"}]}}'), 0),
        Variant("bom", s, content(BOM + json.dumps(SEARCH).encode()), 0),
        Variant("crlf", s, content(json.dumps(SEARCH, indent=1).replace("\n", "\r\n").encode()),
                0),
        Variant("nan-score", s, _search('{"q1": {"ranking": [{"id": "m1", "score": NaN}]}}'),
                0),
    ]  # fmt: skip
    return out


# -------------------------------------------------------------------- labels import


def write_labels_for_import(root: Path) -> None:
    """The labels files, and the cases they name in the work directory's workspace."""
    write_labels(root)
    workspace_with_cases(root.parent.parent / "w.sqlite", ["c0", "c1", "c2"])


def labels_import_args(root: Path, work: Path) -> list[str]:
    return ["labels", "import", str(root / "labels.csv"), "--db", str(work / "w.sqlite"),
            "--rater-kind", "judge"]  # fmt: skip


def conflicting_csv_variants() -> list[Variant]:
    """Two rows for one case and rater in a labels CSV file: which label is meant?
    Both readers refuse them, naming the second row's line (and the first's)."""
    t = "labels.csv"
    head, first, *rest = CSV_LINES

    def rows(*lines: str) -> Callable[[Path], None]:
        return content("".join(f"{ln}\n" for ln in lines).encode())

    timed = "case_id,rater,label,rater_kind,created_at"
    at = "2025-01-01T00:00:00+00:00"
    return [
        Variant("conflicting-rows", t, rows(head, first, "c0,ja,partial,judge", *rest), line=3),
        Variant("conflicting-rows-far", t, rows(head, first, *rest, "c0,ja,partial,judge"),
                line=len(CSV_LINES) + 1),
        Variant("conflicting-rows-spaced", t, rows(head, first, " c0 , ja ,partial,judge"),
                line=3),
        Variant("conflicting-rows-quoted", t, rows(head, first, '"c0","ja",partial,judge'),
                line=3),
        Variant("conflicting-empty-label", t, rows(head, first, "c0,ja,,judge"), line=3),
        Variant("conflicting-untimed-after-timed", t,
                rows(timed, f"c0,ja,supports,judge,{at}", "c0,ja,partial,judge,"), line=3),
        Variant("conflicting-timed-after-untimed", t,
                rows(timed, "c0,ja,supports,judge,", f"c0,ja,partial,judge,{at}"), line=3),
    ]  # fmt: skip


def conflicting_jsonl_variants() -> list[Variant]:
    t = "labels.jsonl"
    a = {"case_id": "c0", "rater": "ja", "label": "supports", "rater_kind": "judge"}
    return [
        Variant("conflicting-rows", t, content(jsonl([a, {**a, "label": "partial"}])), line=2),
        Variant("conflicting-rows-null", t, content(jsonl([a, {**a, "label": None}])), line=2),
        Variant("conflicting-rows-same", t, content(jsonl([a, a])), line=2),
    ]


def history_variant(exit_code: int) -> Variant:
    """Every row of the pair with its time: a history, which only an import takes."""
    lines = ["case_id,rater,label,rater_kind,created_at",
             "c0,ja,supports,judge,2025-01-01T00:00:00+00:00",
             "c0,ja,partial,judge,2025-01-02T00:00:00+00:00"]  # fmt: skip
    data = "".join(f"{ln}\n" for ln in lines).encode()
    return Variant("history-rows", "labels.csv", content(data), exit_code, line=3)
