"""Malformed variants of every input tiap reads, for tests/test_fuzz_inputs.py.

A :class:`Variant` changes one file of a valid input (in a copy under the test's
temporary directory) and says what the command must do with it: refuse it (exit 2,
one line naming the file and, where there is one, the line) or accept it (exit 0:
a byte order mark, CRLF line ends, escaped control characters in a text). The
variants are generated from a fixed seed, so every run tries the same ones.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEED = 20_261_130
BOM = b"\xef\xbb\xbf"
#: JSON arrays nested this deep: beyond every parser's recursion limit.
DEEP = 100_000


@dataclass(frozen=True)
class Variant:
    """One malformed (or tolerated) version of the file ``target`` of an input.

    ``write(path)`` replaces the file (it may make it a directory or a symbolic
    link); ``exit`` is the status the command must end with; ``names`` is the file
    the one-line error must name (default: ``target``), ``line`` its line; for a
    problem of the input as a whole, ``says`` is what the line must say instead.
    """

    id: str
    target: str
    write: Callable[[Path], None]
    exit: int = 2
    names: str | None = None
    line: int | None = None
    says: str | None = None


def content(data: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        path.write_bytes(data)

    return write


def as_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside.txt").write_text("a directory where a file is expected\n")


def symlink_to(outside: Callable[[Path], Path]) -> Callable[[Path], None]:
    """Replace the file by a symbolic link to ``outside(path)`` (made by the callable)."""

    def write(path: Path) -> None:
        target = outside(path)
        path.unlink()
        path.symlink_to(target)

    return write


def outside_copy(path: Path) -> Path:
    """A copy of the file outside its input directory (valid content, wrong place)."""
    target = _outside_dir(path) / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    return target


def outside_garbage(path: Path) -> Path:
    target = _outside_dir(path) / f"garbage-{path.name}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\x00\x01 not this format at all \xff\n")
    return target


def dangling(path: Path) -> Path:
    return _outside_dir(path) / "does-not-exist"


def _outside_dir(path: Path) -> Path:
    # inputs live in TMP/input/...; "outside" is TMP/outside
    for parent in path.parents:
        if parent.name == "input":
            return parent.parent / "outside"
    raise AssertionError(f"{path} is not under an input directory")


def jsonl(records: Iterable[Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def deep_array() -> str:
    return "[" * DEEP + "]" * DEEP


def snapshot(root: Path, skip: Sequence[Path] = ()) -> dict[str, str]:
    """Every path under ``root`` with what it is: a file's sha256, a link's target,
    ``dir``. Paths under ``skip`` are left out."""
    state: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if any(p == s or s in p.parents for s in skip):
            continue
        key = str(p.relative_to(root))
        if p.is_symlink():
            state[key] = "link:" + str(p.readlink())
        elif p.is_dir():
            state[key] = "dir"
        else:
            state[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return state


# ------------------------------------------------------------- valid inputs


SOURCES = [
    {"source_id": "s1", "text": "Alice adopted a cat named Tom.", "speaker": "Alice"},
    {"source_id": "s2", "text": "Bob moved to Oslo in May.", "speaker": "Bob"},
    {"source_id": "s3", "text": "Alice plays the cello.", "speaker": "Alice"},
]
QUERIES = [
    {"query_id": "q1", "question": "The cat?", "answer": "Tom", "evidence": ["s1"]},
    {"query_id": "q2", "question": "Where?", "answer": "Oslo", "evidence": ["s2"]},
    {"query_id": "q3", "question": "Which?", "answer": "cello", "evidence": ["s3"]},
]
MEMORIES = [
    {"memory_id": "m1", "text": "Alice adopted a cat.", "source_ids": ["s1"], "raw": True,
     "canonical": False},
    {"memory_id": "f2", "text": "Bob lives in Oslo.", "source_ids": ["s2"], "raw": False,
     "canonical": True},
    {"memory_id": "m2", "text": "Bob moved.", "source_ids": ["s2"], "raw": True,
     "canonical": False},
    {"memory_id": "m3", "text": "Alice plays.", "source_ids": ["s3"], "raw": True,
     "canonical": False},
    {"memory_id": "f1", "text": "Alice has a cat, Tom.", "source_ids": ["s1"], "raw": False,
     "canonical": True},
]  # fmt: skip
RUN = [
    {"query_id": "q1", "ranking": ["m2", "f1", "m1"], "scores": [3.0, 2.0, 1.0]},
    {"query_id": "q2", "ranking": ["f2", "m2"], "scores": [2.0, 1.0]},
    {"query_id": "q3", "ranking": ["m1", "f1", "m3"], "scores": [3.0, 2.5, 1.0]},
]
BUNDLE_TOML = 'dataset = "fuzz"\nk = 3\n\n[runs.r]\nstore = "st"\nretriever = "bm25"\n'
TREC = [
    "q1 Q0 m2 1 3.0 r",
    "q1 Q0 f1 2 2.0 r",
    "q1 Q0 m1 3 1.0 r",
    "q2 Q0 f2 1 2.0 r",
    "q2 Q0 m2 2 1.0 r",
    "q3 Q0 m1 1 3.0 r",
    "q3 Q0 m3 2 1.0 r",
]


def write_bundle(root: Path, *, trec: bool = False) -> None:
    (root / "stores").mkdir(parents=True)
    (root / "runs").mkdir()
    (root / "bundle.toml").write_text(BUNDLE_TOML)
    (root / "sources.jsonl").write_bytes(jsonl(SOURCES))
    (root / "queries.jsonl").write_bytes(jsonl(QUERIES))
    (root / "stores" / "st.jsonl").write_bytes(jsonl(MEMORIES))
    if trec:
        (root / "runs" / "r.trec").write_text("".join(f"{ln}\n" for ln in TREC))
    else:
        (root / "runs" / "r.jsonl").write_bytes(jsonl(RUN))


LMEB_QUERIES = [
    {"id": "q1", "text": "What is the cat called?"},
    {"id": "q2", "text": "Where did Bob move?"},
    {"id": "q3", "text": "What does Alice play?"},
]
LMEB_CORPUS = [
    {"id": "d1", "title": "", "text": "Alice adopted a cat named Tom."},
    {"id": "d2", "title": "Moves", "text": "Bob moved to Oslo in May."},
    {"id": "d3", "title": "", "text": "Alice plays the cello."},
    {"id": "d4", "title": "", "text": "Nothing of note."},
]
QRELS = ["q1\td1\t1", "q2\td2\t1", "q2\td4\t0", "q3\td3\t2"]


def write_lmeb(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "queries.jsonl").write_bytes(jsonl(LMEB_QUERIES))
    (root / "corpus.jsonl").write_bytes(jsonl(LMEB_CORPUS))
    (root / "qrels.tsv").write_text("".join(f"{ln}\n" for ln in QRELS))


LABELS = [
    {"case_id": f"c{i}", "rater": r, "label": lab, "rater_kind": "judge"}
    for i, labs in enumerate(
        [("supports", "supports", "partial"), ("does_not_support",) * 3, ("partial",) * 3]
    )
    for r, lab in zip(("ja", "jb", "jc"), labs, strict=True)
]
CSV_LINES = ["case_id,rater,label,rater_kind"] + [
    f"{r['case_id']},{r['rater']},{r['label']},{r['rater_kind']}" for r in LABELS
]


def write_labels(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "labels.csv").write_text("".join(f"{ln}\n" for ln in CSV_LINES))
    (root / "labels.jsonl").write_bytes(jsonl(LABELS))


def workspace_with_cases(path: Path, case_ids: Sequence[str]) -> Path:
    """A workspace holding contested cases with these ids (and nothing else)."""
    from tiap.cases.models import Case, EvidenceItem, rank_bucket
    from tiap.cases.workspace import Workspace

    cases = [
        Case(
            case_id=cid,
            dataset="fuzz",
            run="r",
            store="st",
            query_id=f"q{i}",
            query_index=i,
            question="Where?",
            answer="Oslo",
            evidence=[EvidenceItem(source_id="s1", text="Bob moved to Oslo.")],
            memory_id=f"m{i}",
            memory_text="Bob lives in Oslo.",
            memory_source_ids=["s1"],
            rank=1,
            rank_bucket=rank_bucket(1),
            k=3,
        )
        for i, cid in enumerate(case_ids)
    ]
    with Workspace(path) as ws:
        ws.add_cases(cases)
    return path


# ------------------------------------------------------------------ JSON Lines files


def _cut(rng: random.Random, line: bytes) -> bytes:
    """A proper prefix of a JSON object's line that is not blank: never valid JSON."""
    return line[: rng.randrange(1, len(line.rstrip(b"\n")) - 1)]


def jsonl_variants(
    target: str,
    records: list[dict[str, Any]],
    *,
    id_field: str,
    wrong_types: dict[str, Any],
    optional: Sequence[str] = (),
    empty_exit: int = 2,
    empty_names: str | None = None,
    empty_line: int | None = None,
    duplicate: bool = True,
    text_field: str | None = None,
    deep_field: str = "metadata",
) -> list[Variant]:
    """The malformed versions every JSON Lines input must refuse (and three it must
    take). Line 2 is the one changed where a single line changes."""
    rng = random.Random(f"{SEED}:{target}")
    lines = [json.dumps(r).encode() + b"\n" for r in records]
    base = b"".join(lines)

    def with_line2(new: bytes | dict[str, Any] | str) -> bytes:
        raw = new if isinstance(new, bytes) else json.dumps(new).encode()
        return b"".join([lines[0], raw + b"\n", *lines[2:]])

    second = records[1]
    out: list[Variant] = []

    def bad(vid: str, data: bytes, line: int | None = 2, names: str | None = None) -> None:
        out.append(Variant(vid, target, content(data), 2, names, line))

    for i in range(min(3, len(lines))):
        cut = _cut(rng, lines[i])
        bad(f"truncated-line{i + 1}", b"".join([*lines[:i], cut]), i + 1)
    for field in (f for f in second if f not in optional):
        bad(f"missing-{field}", with_line2({k: v for k, v in second.items() if k != field}))
    for field, value in wrong_types.items():
        bad(f"wrong-type-{field}", with_line2({**second, field: value}))
    bad("unknown-field", with_line2({**second, "bogus_field": 1}))
    bad("nested-id", with_line2({**second, id_field: [[[second[id_field]]]]}))
    head = json.dumps({k: v for k, v in second.items() if k != deep_field})[:-1]
    bad("deep-nesting", with_line2(f'{head}, "{deep_field}": {deep_array()}}}'.encode()))
    bad(
        "huge-float-id",
        with_line2(json.dumps({**second, id_field: "X"}).replace('"X"', "1e400").encode()),
    )
    bad(
        "huge-integer-id",
        with_line2(json.dumps({**second, id_field: "X"}).replace('"X"', "9" * 400).encode()),
    )
    bad("nan-id", with_line2(json.dumps({**second, id_field: "X"}).replace('"X"', "NaN").encode()))
    bad(
        "infinity-id",
        with_line2(json.dumps({**second, id_field: "X"}).replace('"X"', "-Infinity").encode()),
    )
    bad("negative-id", with_line2({**second, id_field: -1}))
    bad("null-id", with_line2({**second, id_field: None}))
    bad("empty-id", with_line2({**second, id_field: ""}))
    utf8 = json.dumps({**second, id_field: "X"}).encode()
    bad("invalid-utf8", with_line2(utf8.replace(b'"X"', b'"caf\xe9"')))
    bad("invalid-utf8-lone-continuation", with_line2(utf8.replace(b'"X"', b'"\x80\xbf"')))
    bad("raw-control-char", with_line2(utf8.replace(b'"X"', b'"a\x01b"')))
    bad("nul-byte", with_line2(utf8.replace(b'"X"', b'"a\x00b"')))
    bad("not-an-object-list", with_line2(b'["a", "b"]'))
    bad("not-an-object-string", with_line2(b'"just a string"'))
    bad("not-an-object-number", with_line2(b"42"))
    bad("trailing-garbage", with_line2(lines[1].rstrip(b"\n") + b" }"))
    bad("two-objects-one-line", with_line2(lines[1].rstrip(b"\n") * 2))
    garbage = bytes(rng.randrange(256) for _ in range(200)).replace(b"\n", b"")
    bad("binary-garbage", garbage + b"\n" + base, 1)
    if duplicate:
        bad("duplicate-id", b"".join([lines[0], lines[1], lines[1], *lines[2:]]), 3)
    for vid, data in (("empty-file", b""), ("blank-lines-only", b"\n  \n\t\n")):
        out.append(Variant(vid, target, content(data), empty_exit, empty_names, empty_line))
    out.append(Variant("directory", target, as_directory))
    out.append(Variant("dangling-symlink", target, symlink_to(dangling)))
    out.append(Variant("symlink-to-garbage-outside", target, symlink_to(outside_garbage)))
    # tolerated: a byte order mark, CRLF line ends, no newline at the end, escapes
    out.append(Variant("bom", target, content(BOM + base), 0))
    out.append(Variant("crlf", target, content(base.replace(b"\n", b"\r\n")), 0))
    out.append(Variant("no-final-newline", target, content(base.rstrip(b"\n")), 0))
    if text_field is not None:
        escaped = with_line2({**second, text_field: "tab\there \u0007 bell \u001b[31m red"})
        out.append(Variant("escaped-control-chars", target, content(escaped), 0))
    return out


# ---------------------------------------------------------------------- TOML files


def toml_variants(
    target: str,
    text: str,
    *,
    required: Sequence[str],
    wrong_types: dict[str, str],
    cuts: int = 6,
    names: str | None = None,
) -> list[Variant]:
    """Malformed versions of a TOML file (``required`` top-level keys, ``wrong_types``
    a replacement value per top-level key); a BOM and CRLF line ends are accepted."""
    rng = random.Random(f"{SEED}:{target}")
    base = text.encode()
    out: list[Variant] = []

    def bad(vid: str, data: bytes, line: int | None = None) -> None:
        out.append(Variant(vid, target, content(data), 2, names, line))

    def set_key(key: str, value: str) -> bytes:
        kept = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
        return (f"{key} = {value}\n" + "\n".join(kept) + "\n").encode()

    last_table = max(text.rfind("\n["), 1)
    for i in range(cuts):
        # inside a table header, a string or a key: a prefix that does not parse or
        # lacks what the file needs
        at = rng.randrange(1, last_table)
        bad(f"truncated-{i + 1}", base[:at])
    bad("truncated-table-header", base[: last_table + 3])
    for key in required:
        kept = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
        bad(f"missing-{key}", ("\n".join(kept) + "\n").encode())
    for key, value in wrong_types.items():
        bad(f"wrong-type-{key}", set_key(key, value))
    bad("unknown-key", b"bogus_key = 1\n" + base)
    bad("duplicate-key", f"{required[0]} = 'again'\n".encode() + base)
    bad("deep-nesting", b"deep = " + deep_array().encode() + b"\n" + base)
    bad("huge-integer", set_key(required[0], "9" * 400))
    bad("nan", set_key(required[0], "nan"))
    bad("inf", set_key(required[0], "-inf"))
    bad("negative", set_key(required[0], "-1"))
    bad("invalid-utf8", b"# caf\xe9\n" + base, 1)
    bad("raw-control-char", b'bogus_key = "a\x01b"\n' + base, 1)
    bad("nul-byte", base.replace(b"\n", b"\n\x00", 1), 2)
    bad("not-toml", b"{ this is not toml }\n")
    bad("binary-garbage", bytes(rng.randrange(256) for _ in range(300)))
    bad("empty-file", b"")
    out.append(Variant("directory", target, as_directory, 2, names))
    out.append(Variant("dangling-symlink", target, symlink_to(dangling), 2, names))
    out.append(Variant("symlink-to-garbage-outside", target, symlink_to(outside_garbage), 2, names))
    out.append(Variant("bom", target, content(BOM + base), 0))
    out.append(Variant("crlf", target, content(base.replace(b"\n", b"\r\n")), 0))
    return out


# ------------------------------------------------------------- line formats (TSV, TREC)


def line_variants(target: str, lines: list[str], rows: list[Variant]) -> list[Variant]:
    """Variants every line format shares, plus ``rows`` (the format's own)."""
    rng = random.Random(f"{SEED}:{target}")
    base = "".join(f"{ln}\n" for ln in lines).encode()
    out = list(rows)
    second = lines[1]
    out += [
        Variant("invalid-utf8", target, content(base.replace(b"\n", b"\xe9\n", 2)), line=1),
        Variant(
            "invalid-utf8-line3",
            target,
            content(b"".join(f"{ln}\n".encode() for ln in lines[:2]) + b"\xff\xfe\n"),
            line=3,
        ),
        Variant("binary-garbage", target, content(bytes(rng.randrange(256) for _ in range(300)))),
        Variant(
            "truncated-mid-line",
            target,
            content(base[: len(lines[0]) + 1 + rng.randrange(1, len(second) // 2)]),
            line=2,
        ),
        Variant("directory", target, as_directory),
        Variant("dangling-symlink", target, symlink_to(dangling)),
        Variant("symlink-to-garbage-outside", target, symlink_to(outside_garbage)),
        Variant("bom", target, content(BOM + base), 0),
        Variant("crlf", target, content(base.replace(b"\n", b"\r\n")), 0),
        Variant("no-final-newline", target, content(base.rstrip(b"\n")), 0),
        Variant("blank-lines-between", target, content(base.replace(b"\n", b"\n\n", 1)), 0),
    ]
    return out
