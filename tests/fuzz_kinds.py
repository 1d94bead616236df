"""The kinds of input the fuzz test feeds to tiap, each with its malformed variants.

A :class:`Kind` writes a valid input (a bundle, a TREC run in a bundle, an LMEB/BEIR
task directory, labels files — read by a report and imported into a workspace —, a
rubric, a panel, a memory system's exports with their mapping) and names the
command that reads it; its variants (:mod:`fuzz_support`, :mod:`fuzz_import_kinds`)
break one file each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fuzz_import_kinds import (
    conflicting_csv_variants,
    conflicting_jsonl_variants,
    history_variant,
    import_args,
    keyed_export_variants,
    labels_import_args,
    mapping_variants,
    write_import,
    write_labels_for_import,
)
from fuzz_support import (
    BOM,
    BUNDLE_TOML,
    CSV_LINES,
    LABELS,
    LMEB_CORPUS,
    LMEB_QUERIES,
    MEMORIES,
    QRELS,
    QUERIES,
    RUN,
    SOURCES,
    TREC,
    Variant,
    as_directory,
    content,
    jsonl,
    jsonl_variants,
    line_variants,
    outside_copy,
    symlink_to,
    toml_variants,
    write_bundle,
    write_labels,
    write_lmeb,
)

BUILTIN = Path(__file__).resolve().parents[1] / "src" / "tiap"


@dataclass(frozen=True)
class Kind:
    """One kind of input: how to write a valid one, the command that reads it."""

    name: str
    write: Callable[[Path], None]
    command: Callable[[Path, Path], list[str]]  # (input root, work dir) -> args
    variants: list[Variant]


# --------------------------------------------------------------------------- bundles


def rescore_args(root: Path, work: Path) -> list[str]:
    return ["rescore", str(root), "--out", str(work / "out"), "--k", "1,3", "--resamples", "20"]


def _with_line2(records: list[dict[str, object]], change: dict[str, object]) -> bytes:
    return jsonl([records[0], {**records[1], **change}, *records[2:]])


def bundle_variants() -> list[Variant]:
    q, s, m, r = "queries.jsonl", "sources.jsonl", "stores/st.jsonl", "runs/r.jsonl"
    runs_too = {"empty_names": r, "empty_line": 1}
    out = jsonl_variants(
        q,
        QUERIES,
        id_field="query_id",
        wrong_types={"question": 7, "answer": ["a"], "evidence": "s2", "category": {"a": 1}},
        optional=["answer"],
        empty_names=r,  # the run ranks queries the bundle does not have
        empty_line=1,
        text_field="question",
    )
    out += [
        Variant("unknown-evidence", q, content(_with_line2(QUERIES, {"evidence": ["s9"]})), line=2),
        Variant("no-evidence", q, content(_with_line2(QUERIES, {"evidence": []})), line=2),
    ]
    # an empty sources file leaves the queries' evidence unknown
    out += jsonl_variants(
        s,
        SOURCES,
        id_field="source_id",
        wrong_types={"text": 3.5, "speaker": ["Bob"], "time": {"t": 1}},
        optional=["speaker"],
        empty_names=q,
        empty_line=1,
        text_field="text",
    )
    out += jsonl_variants(
        m,
        MEMORIES,
        id_field="memory_id",
        wrong_types={"text": None, "source_ids": "s2", "raw": [True], "canonical": 2},
        **runs_too,
        text_field="text",
    )
    out += [
        Variant(
            "unknown-source", m, content(_with_line2(MEMORIES, {"source_ids": ["zz"]})), line=2
        ),
        Variant(
            "raw-without-source",
            m,
            content(_with_line2(MEMORIES, {"raw": True, "source_ids": []})),
            line=2,
        ),
    ]
    out += jsonl_variants(
        r,
        RUN,
        id_field="query_id",
        wrong_types={"ranking": "f2", "scores": [True, "x"]},
        optional=["scores"],
        empty_exit=0,  # a run without entries: every query has an empty ranking
        deep_field="scores",
    )
    out += [
        Variant("unknown-memory", r, content(_with_line2(RUN, {"ranking": ["f2", "zz"]})), line=2),
        Variant("unknown-query", r, content(_with_line2(RUN, {"query_id": "q9"})), line=2),
        Variant("scores-length", r, content(_with_line2(RUN, {"scores": [1.0]})), line=2),
        Variant("negative-scores", r, content(_with_line2(RUN, {"scores": [-1.0, -2.0]})), 0),
    ]
    line2 = json.dumps(RUN[1])
    for literal in ("NaN", "Infinity", "-Infinity", "1e999"):
        bad = line2.replace("2.0", literal, 1)
        data = b"".join([json.dumps(RUN[0]).encode(), b"\n", bad.encode(), b"\n"])
        out.append(Variant(f"score-{literal}", r, content(data), line=2))
    # a bundle's files must be inside the bundle, symbolic links followed
    for target in (q, s, m, r):
        out.append(Variant("symlink-outside", target, symlink_to(outside_copy)))
    return out


def bundle_toml_variants() -> list[Variant]:
    t = "bundle.toml"
    out = toml_variants(
        t,
        BUNDLE_TOML,
        required=["dataset"],
        wrong_types={"dataset": "5", "k": '"10"', "metadata": "3", "runs": '"r"'},
    )
    for value in ("0", "-1", "99999999999999999999", "nan", "inf", "1.5", "true"):
        kept = BUNDLE_TOML.replace("k = 3", f"k = {value}")
        out.append(Variant(f"k-{value}", t, content(kept.encode())))
    run_table = BUNDLE_TOML.split("[runs.r]")[0] + "[runs.r]\n"
    for vid, extra in [
        ("file-absolute", 'store = "st"\nfile = "/etc/hostname"\n'),
        ("file-dotdot", 'store = "st"\nfile = "../outside/r.jsonl"\n'),
        ("file-dotdot-inside", 'store = "st"\nfile = "runs/../../input/b/runs/r.jsonl"\n'),
        ("file-empty", 'store = "st"\nfile = ""\n'),
        ("file-nul", 'store = "st"\nfile = "runs/r\\u0000.jsonl"\n'),
        ("store-unknown", 'store = "nope"\n'),
        ("store-escapes", 'store = "../../outside/st"\n'),
        ("store-missing", 'retriever = "bm25"\n'),
        ("store-wrong-type", "store = 5\n"),
        ("config-wrong-type", 'store = "st"\nconfig = "x"\n'),
        ("duplicate-table", 'store = "st"\n[runs.r]\nstore = "st"\n'),
    ]:
        out.append(Variant(vid, t, content((run_table + extra).encode())))
    in_runs = BUNDLE_TOML.replace('retriever = "bm25"', 'file = "runs"')
    out.append(Variant("file-a-directory", t, content(in_runs.encode()), names="runs"))
    stores = BUNDLE_TOML + '\n[stores.st]\nfile = "/etc/hostname"\n'
    out.append(Variant("store-file-absolute", t, content(stores.encode())))
    out.append(Variant("symlink-outside", t, symlink_to(outside_copy)))
    deep_config = BUNDLE_TOML + "\n[runs.r.config.a.b.c.d.e]\nx = 1\n"
    out.append(Variant("nested-config-tables", t, content(deep_config.encode()), 0))
    return out


def trec_variants() -> list[Variant]:
    t = "runs/r.trec"
    lines = TREC

    def with_line2(new: str) -> Callable[[Path], None]:
        return content("".join(f"{ln}\n" for ln in [lines[0], new, *lines[2:]]).encode())

    rows = [
        Variant("five-columns", t, with_line2("q1 Q0 f1 2 2.0"), line=2),
        Variant("seven-columns", t, with_line2("q1 Q0 f1 2 2.0 r extra"), line=2),
        Variant("rank-word", t, with_line2("q1 Q0 f1 two 2.0 r"), line=2),
        Variant("rank-float", t, with_line2("q1 Q0 f1 2.5 2.0 r"), line=2),
        Variant("score-word", t, with_line2("q1 Q0 f1 2 high r"), line=2),
        Variant("score-hex", t, with_line2("q1 Q0 f1 2 0x10 r"), line=2),
        Variant("score-nan", t, with_line2("q1 Q0 f1 2 nan r"), line=2),
        Variant("score-NaN", t, with_line2("q1 Q0 f1 2 NaN r"), line=2),
        Variant("score-inf", t, with_line2("q1 Q0 f1 2 inf r"), line=2),
        Variant("score-minus-infinity", t, with_line2("q1 Q0 f1 2 -Infinity r"), line=2),
        Variant("score-overflow", t, with_line2("q1 Q0 f1 2 1e999 r"), line=2),
        Variant("unknown-memory", t, with_line2("q1 Q0 zz 2 2.0 r"), line=2),
        Variant("unknown-query", t, with_line2("q9 Q0 f1 2 2.0 r"), line=2),
        Variant("duplicate-docid", t, with_line2("q1 Q0 m2 2 2.0 r"), line=2),
        Variant("nul-in-id", t, with_line2("q1 Q0 f1\x00 2 2.0 r"), line=2),
        Variant("control-char-in-id", t, with_line2("q1 Q0 f\x011 2 2.0 r"), line=2),
        Variant("unit-separator", t, with_line2("q1 Q0 f\x1f1 2 2.0 r"), line=2),
        Variant("ideographic-space", t, with_line2("q1 Q0 f\u30001 2 2.0 r"), line=2),
        Variant("line-separator", t, with_line2("q1 Q0 f\u20281 2 2.0 r"), line=2),
        Variant("q0-only", t, with_line2("Q0"), line=2),
        Variant("rank-empty-huge", t, with_line2("q1 Q0 f1 " + "9" * 5000 + "x 2.0 r"), line=2),
        Variant("no-break-space", t, with_line2("q1 Q0 f1\u00a0x 2 2.0 r"), line=2),
        Variant("header-row", t, content(b"qid Q0 docid rank score tag\n"), line=1),
        Variant("comment-line", t, content(b"# a comment\n" + "\n".join(TREC).encode()), line=1),
        Variant("empty-file", t, content(b""), 0),  # a run without entries
        Variant("tabs", t, content("\n".join(TREC).replace(" ", "\t").encode()), 0),
        Variant("huge-rank", t, with_line2("q1 Q0 f1 99999999999999999999999 2.0 r"), 0),
        Variant("negative-scores", t, with_line2("q1 Q0 f1 2 -2.0 r"), 0),
        Variant("symlink-outside", t, symlink_to(outside_copy)),
    ]
    return line_variants(t, lines, rows)


# ------------------------------------------------------------------- LMEB task dirs


def lmeb_args(root: Path, work: Path) -> list[str]:
    return ["traces", "build", "lmeb", str(root), "--out", str(work / "out"), "-r", "none", "-q"]


NO_QUERIES = "no queries to build a bundle from: all 3 were excluded (query_no_evidence 3)"


def qrels_variants() -> list[Variant]:
    t = "qrels.tsv"

    def with_line2(new: str) -> Callable[[Path], None]:
        return content("".join(f"{ln}\n" for ln in [QRELS[0], new, *QRELS[2:]]).encode())

    def only(*rows: str) -> Callable[[Path], None]:
        return content("".join(f"{ln}\n" for ln in rows).encode())

    rows = [
        Variant("two-columns", t, with_line2("q2\td2"), line=2),
        Variant("four-columns", t, with_line2("q2\td2\t1\textra"), line=2),
        Variant("spaces-not-tabs", t, with_line2("q2 d2 1"), line=2),
        Variant("score-word", t, with_line2("q2\td2\thigh"), line=2),
        Variant("score-float", t, with_line2("q2\td2\t1.5"), line=2),
        Variant("score-nan", t, with_line2("q2\td2\tnan"), line=2),
        Variant("score-inf", t, with_line2("q2\td2\tinf"), line=2),
        Variant("score-empty", t, with_line2("q2\td2\t"), line=2),
        Variant("score-huge", t, with_line2("q2\td2\t99999999999999999999"), line=2),
        Variant("score-underscore", t, with_line2("q2\td2\t1_0"), line=2),
        Variant("score-arabic-digit", t, with_line2("q2\td2\t\u0661"), line=2),
        Variant("unknown-query", t, with_line2("q9\td2\t1"), line=2),
        Variant("unknown-corpus-id", t, with_line2("q2\td9\t1"), line=2),
        Variant("duplicate-pair", t, with_line2(QRELS[0]), line=2),
        Variant("header-row", t, only("query-id\tcorpus-id\tscore", *QRELS), line=1),
        Variant("nul-in-id", t, with_line2("q2\x00\td2\t1"), line=2),
        Variant("control-char-in-id", t, with_line2("q2\td\x012\t1"), line=2),
        # no query left with evidence: the build says why
        Variant("negative-score-only", t, only("q1\td1\t-1"), says=NO_QUERIES),
        Variant("zero-scores-only", t, only("q1\td1\t0", "q2\td2\t0"), says=NO_QUERIES),
        Variant("empty-file", t, content(b""), says=NO_QUERIES),
        Variant("negative-score", t, with_line2("q2\td2\t-1"), 0),  # kept as a grade
        Variant("symlink-outside-valid", t, symlink_to(outside_copy), 0),  # not a bundle
    ]
    out = line_variants(t, QRELS, rows)
    # the task directory's other files
    out += [
        Variant("missing-queries", "queries.jsonl", lambda p: p.unlink()),
        Variant("queries-directory", "queries.jsonl", as_directory),
        Variant(
            "queries-deep",
            "queries.jsonl",
            content(b'{"id": "q1", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"),
            line=1,
        ),
        Variant("queries-twice", "queries.jsonl", content(jsonl(LMEB_QUERIES * 2)), line=4),
        Variant("queries-bom", "queries.jsonl", content(BOM + jsonl(LMEB_QUERIES)), 0),
        Variant("corpus-truncated", "corpus.jsonl", content(jsonl(LMEB_CORPUS)[:30]), line=1),
        Variant("corpus-invalid-utf8", "corpus.jsonl", content(b'{"id": "d1", "text": "\xe9"}\n'),
                line=1),
        Variant("corpus-id-list", "corpus.jsonl", content(b'{"id": ["d1"], "text": "t"}\n'),
                line=1),
        Variant("corpus-bom", "corpus.jsonl", content(BOM + jsonl(LMEB_CORPUS)), 0),
        Variant(
            "candidates-unknown",
            "candidates.jsonl",
            content(b'{"scene_id": "q1", "candidate_doc_ids": ["d9"]}\n'),
            line=1,
        ),
        Variant(
            "candidates-ids-string",
            "candidates.jsonl",
            content(b'{"scene_id": "q1", "candidate_doc_ids": "d1"}\n'),
            line=1,
        ),
    ]  # fmt: skip
    return out


# ---------------------------------------------------------------------------- labels


def agreement_args(labels: str, rubric: str = "contested-credit") -> Callable[[Path, Path], list]:
    def args(root: Path, work: Path) -> list[str]:
        rub = str(root / rubric) if rubric.endswith(".toml") else rubric
        return [
            "agreement", "report", "--labels", str(root / labels), "--rubric", rub,
            "--out", str(work / "out"), "--resamples", "0",
        ]  # fmt: skip

    return args


def csv_variants() -> list[Variant]:
    t = "labels.csv"
    head, first, *rest = CSV_LINES

    def rows(*lines: str) -> Callable[[Path], None]:
        return content("".join(f"{ln}\n" for ln in lines).encode())

    own = [
        Variant("header-lacks-label", t, rows("case_id,rater,kind", *CSV_LINES[1:]), line=1),
        Variant("header-duplicate", t, rows("case_id,rater,label,label", first), line=1),
        Variant("header-only", t, rows(head)),
        Variant("empty-file", t, content(b"")),
        Variant("more-fields", t, rows(head, first + ",x", *rest), line=2),
        Variant("fewer-fields", t, rows(head, "c0,ja", *rest), line=2),
        Variant("duplicate-row", t, rows(head, first, first, *rest), line=3),
        Variant("unknown-kind", t, rows(head, "c0,ja,supports,robot", *rest), line=2),
        Variant("label-not-in-rubric", t, rows(head, "c0,ja,maybe,judge", *rest), line=2),
        Variant("rater-two-kinds", t, rows(head, first, "c1,ja,partial,human", *rest[3:]), line=3),
        Variant("empty-case-id", t, rows(head, ",ja,supports,judge", *rest), line=2),
        Variant("nul-byte", t, rows(head, "c0,ja,supp\x00orts,judge", *rest), line=2),
        Variant("huge-field", t, rows(head, "c0,ja," + "x" * 200_000 + ",judge", *rest), line=2),
        Variant("unterminated-quote", t, rows(head, 'c0,ja,"supports,judge'), line=2),
        Variant("semicolons", t, rows(*(ln.replace(",", ";") for ln in CSV_LINES)), line=1),
        Variant(
            "case-two-datasets",
            t,
            rows("case_id,rater,label,dataset", "c0,ja,supports,a", "c0,jb,supports,b"),
            line=3,
        ),
        Variant("tabs-in-csv", t, rows(*(ln.replace(",", "\t") for ln in CSV_LINES)), line=1),
        Variant("no-header", t, rows(*CSV_LINES[1:]), line=1),
        Variant("blank-header", t, rows("   ", *CSV_LINES[1:]), line=1),
        Variant("empty-rater", t, rows(head, "c0,,supports,judge", *rest), line=2),
        Variant("kind-number", t, rows(head, "c0,ja,supports,7", *rest), line=2),
        Variant("label-number", t, rows(head, "c0,ja,3,judge", *rest), line=2),
        Variant("quote-inside", t, rows(head, 'c0,ja,sup"ports,judge', *rest), line=2),
        Variant("multiline-label", t, rows(head, 'c0,ja,"supports\nmore",judge', *rest)),
        Variant("double-bom", t, content(BOM + BOM + "\n".join(CSV_LINES).encode()), line=1),
        Variant("utf16", t, content("\n".join(CSV_LINES).encode("utf-16")), line=1),
        Variant("abstention", t, rows(head, "c0,ja,,judge", *rest), 0),  # an empty label
        Variant("quoted-fields", t, rows(head, '"c0","ja","supports","judge"', *rest), 0),
        Variant("extra-column", t, rows(*(ln + ",x" for ln in CSV_LINES)), 0),
        Variant("symlink-outside-valid", t, symlink_to(outside_copy), 0),
    ]
    return line_variants(t, CSV_LINES, own)


def labels_jsonl_variants() -> list[Variant]:
    t = "labels.jsonl"
    out = jsonl_variants(
        t,
        LABELS,
        id_field="case_id",
        wrong_types={"label": ["supports"], "rater": {"n": "ja"}, "rater_kind": "robot"},
        optional=["rater_kind"],
        deep_field="label",
    )
    # a labels file takes numbers as text and lets other fields through: "42" is an id
    drop = {"huge-integer-id", "negative-id", "unknown-field", "binary-garbage"}
    out = [v for v in out if v.id not in drop]
    out += [
        Variant("label-number", t, content(_with_line2(LABELS, {"label": 3})), line=2),
        Variant("label-nan", t, content(jsonl([LABELS[0]]) + b'{"case_id": "c0", "rater": '
                b'"jb", "label": NaN}\n'), line=2),
        Variant("label-infinity", t, content(jsonl([LABELS[0]]) + b'{"case_id": "c0", '
                b'"rater": "jb", "label": 1e999}\n'), line=2),
        Variant("null-label", t, content(_with_line2(LABELS, {"label": None})), 0),
    ]  # fmt: skip
    return out


# ------------------------------------------------------------------ rubric and panel

RUBRIC_TEXT = (BUILTIN / "rubric" / "builtin" / "contested-credit.toml").read_text()
PANEL_TEXT = (BUILTIN / "judge" / "panels" / "offline.toml").read_text()


def write_rubric(root: Path) -> None:
    write_labels(root)
    (root / "rubric.toml").write_text(RUBRIC_TEXT)


def rubric_variants() -> list[Variant]:
    t = "rubric.toml"
    out = toml_variants(
        t,
        RUBRIC_TEXT,
        required=["id", "version", "fields", "binary_positive"],
        wrong_types={"id": "3", "fields": '"question"', "binary_positive": "[1]"},
    )
    labels_off = RUBRIC_TEXT.replace('name = "partial"', 'name = "supports"')
    out.append(Variant("duplicate-label", t, content(labels_off.encode())))
    unknown = RUBRIC_TEXT.replace('partial = "relevant"', 'sometimes = "relevant"')
    out.append(Variant("binary-unknown-label", t, content(unknown.encode())))
    key_dup = RUBRIC_TEXT.replace('key = "2"', 'key = "1"')
    out.append(Variant("duplicate-key-binding", t, content(key_dup.encode())))
    return out


def write_panel(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "panel.toml").write_text(PANEL_TEXT)


def panel_args(root: Path, work: Path) -> list[str]:
    return ["judge", "run", "--db", str(work / "w.sqlite"), "--panel", str(root / "panel.toml"),
            "--dry-run", "--json"]  # fmt: skip


def _panel_with(key: str, value: str) -> bytes:
    """The panel with ``key = value`` added to its first judge."""
    return PANEL_TEXT.replace("concurrency = 8", f"concurrency = 8\n{key} = {value}", 1).encode()


def panel_variants() -> list[Variant]:
    t = "panel.toml"
    out = toml_variants(
        t,
        PANEL_TEXT,
        required=["name"],
        wrong_types={"name": "7", "temperature": '"hot"', "max_tokens": "[400]"},
    )
    for key, value in [
        ("judges", "[]"),
        ("temperature", "nan"),
        ("temperature", "5"),
        ("max_tokens", "0"),
        ("max_attempts", "0"),
        ("max_attempts", "1000"),
        ("backoff_initial_s", "-1"),
        ("backoff_initial_s", "nan"),
        ("backoff_max_s", "nan"),
        ("retry_after_max_s", "-3"),
    ]:
        kept = "\n".join(ln for ln in PANEL_TEXT.splitlines() if not ln.startswith(f"{key} ="))
        out.append(Variant(f"{key}-{value}", t, content(f"{key} = {value}\n{kept}\n".encode())))
    for value in ("nan", "-1", "0"):
        timeout = PANEL_TEXT.replace("timeout_s = 60", f"timeout_s = {value}")
        out.append(Variant(f"timeout_s-{value}", t, content(timeout.encode())))
    for key, value in [
        ("concurrency", "0"),
        ("concurrency", "-1"),
        ("concurrency", "99999999999999999999"),
        ("response_format", '"xml"'),
        ("api_key_env", '"1BAD"'),
        ("params", '{model = "x"}'),
        ("input_cost_per_mtok", "-1"),
    ]:
        if key == "concurrency":
            data = PANEL_TEXT.replace("concurrency = 8", f"{key} = {value}", 1).encode()
        else:
            data = _panel_with(key, value)
        out.append(Variant(f"judge-{key}-{value}", t, content(data)))
    dup = PANEL_TEXT.replace('name = "evidence-overlap"', 'name = "answer-containment"')
    out.append(Variant("duplicate-judge", t, content(dup.encode())))
    no_model = PANEL_TEXT.replace('model = "tiap-offline/qa-overlap"\n', "")
    out.append(Variant("judge-without-model", t, content(no_model.encode())))
    return out


#: panel settings that must be finite and at most a stated maximum (tiap.limits).
PANEL_RANGES = [
    ("timeout_s", "inf"),
    ("timeout_s", "1e300"),
    ("backoff_max_s", "inf"),
    ("backoff_initial_s", "1e300"),
    ("retry_after_max_s", "inf"),
]


# --------------------------------------------------------------------------- kinds


def _kinds() -> list[Kind]:
    conflicts = conflicting_csv_variants()
    return [
        Kind("bundle", lambda r: write_bundle(r), rescore_args, bundle_variants()),
        Kind("bundle-toml", lambda r: write_bundle(r), rescore_args, bundle_toml_variants()),
        Kind("trec", lambda r: write_bundle(r, trec=True), rescore_args, trec_variants()),
        Kind("qrels", write_lmeb, lmeb_args, qrels_variants()),
        Kind(
            "labels-csv",
            write_labels,
            agreement_args("labels.csv"),
            [*csv_variants(), *conflicts, history_variant(2)],
        ),
        Kind(
            "labels-jsonl",
            write_labels,
            agreement_args("labels.jsonl"),
            [*labels_jsonl_variants(), *conflicting_jsonl_variants()],
        ),
        # labels imported into a workspace: read and checked as the report reads them
        Kind(
            "labels-import",
            write_labels_for_import,
            labels_import_args,
            [*csv_variants(), *conflicts, history_variant(0)],
        ),
        Kind("mapping", write_import, import_args, mapping_variants()),
        Kind("keyed-export", write_import, import_args, keyed_export_variants()),
        Kind(
            "rubric", write_rubric, agreement_args("labels.csv", "rubric.toml"), rubric_variants()
        ),
        Kind("panel", write_panel, panel_args, panel_variants()),
    ]


KINDS = _kinds()
