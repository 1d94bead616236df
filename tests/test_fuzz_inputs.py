"""Every input tiap reads, malformed on purpose: one line, exit 2, nothing changed.

For each kind of input — the files of a trace bundle, TREC runs, LMEB/BEIR task
directories (qrels), labels files (CSV and JSON Lines, read by a report and imported
into a workspace, conflicting rows among them), rubric and panel TOML files, mapping
files (their source-id templates) and keyed search exports (repeated keys) of
``traces import``, and the numbers given as options — the variants of ``fuzz_support`` (truncation,
wrong types, missing keys, extra nesting, huge numbers, NaN and infinities, negative
numbers, invalid UTF-8, control characters, duplicate ids, empty files, directories
and symbolic links where files are expected) are run through the real command line,
in process (``tiap.cli.main``), and each must end with exit status 2 and one line on
stderr naming the file (and the line where there is one), with no traceback, and
leave every input and the workspace exactly as they were. The variants a reader must
accept (a UTF-8 byte order mark, CRLF line ends, ...) must exit 0.

The variants are generated from a fixed seed: every run tries the same ones.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fuzz_kinds import KINDS, PANEL_RANGES, PANEL_TEXT, Kind, panel_args, write_panel
from fuzz_support import (
    CSV_LINES,
    LABELS,
    Variant,
    as_directory,
    content,
    jsonl,
    snapshot,
    write_bundle,
    write_labels,
)
from tiap.traces.samples import sample_bundle_path


def assert_refused(code: int, err: str, variant: Variant, root: Path) -> str:
    assert code == 2, f"{variant.id}: exit {code}: {err}"
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"{variant.id}: {err}"
    line = lines[0]
    assert line.startswith("tiap: error: "), line
    if variant.says is not None:
        assert variant.says in line, f"{variant.id}: expected {variant.says!r} in {line!r}"
        return line
    named = root / (variant.names or variant.target)
    assert str(named) in line, f"{variant.id}: expected {str(named)!r} in {line!r}"
    if variant.line is not None:  # FILE:LINE: problem, or (whole-file readers) "at line N"
        at = (f"{named}:{variant.line}: ", f"{named}: ", f" at line {variant.line} ")
        named_line = at[0] in line or (at[1] in line and at[2] in line)
        assert named_line, f"{variant.id}: expected line {variant.line} in {line!r}"
    return line


CASES = [pytest.param(k, v, id=f"{k.name}-{v.target}-{v.id}") for k in KINDS for v in k.variants]


def test_every_kind_has_thirty_variants() -> None:
    for kind in KINDS:
        refused = [v for v in kind.variants if v.exit == 2]
        assert len(refused) >= 30, (kind.name, len(refused))
        ids = [(v.target, v.id) for v in kind.variants]
        assert len(ids) == len(set(ids)), kind.name
    per_file = {}
    for v in KINDS[0].variants:
        per_file[v.target] = per_file.get(v.target, 0) + (v.exit == 2)
    assert min(per_file.values()) >= 30, per_file


@pytest.fixture(scope="module")
def template_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the sample bundle's contested cases (for the panel variants)."""
    from tiap.cases.extract import extract_cases
    from tiap.cases.workspace import Workspace
    from tiap.traces.bundle import read_bundle

    path = tmp_path_factory.mktemp("ws") / "w.sqlite"
    with Workspace(path) as ws:
        extract_cases(read_bundle(sample_bundle_path()), ws, k=3)
    return path


@pytest.fixture
def work(tmp_path: Path, template_workspace: Path) -> Path:
    shutil.copy(template_workspace, tmp_path / "w.sqlite")
    return tmp_path


@pytest.mark.parametrize(("kind", "variant"), CASES)
def test_malformed_input(tiap_cli, kind: Kind, variant: Variant, work: Path) -> None:
    root = work / "input" / kind.name
    kind.write(root)
    variant.write(root / variant.target)
    before = snapshot(work)
    code, _, err = tiap_cli(kind.command(root, work))
    if variant.exit == 0:
        assert code == 0, f"{variant.id}: a tolerated variant was refused: {err}"
        written = ("out", "w.sqlite", "w.sqlite-wal", "w.sqlite-shm")
        after = snapshot(work, skip=[work / name for name in written])
        assert after == {k: v for k, v in before.items() if k.split("/")[0] not in written}
        return
    assert_refused(code, err, variant, root)
    assert snapshot(work) == before  # inputs, workspace: nothing written, nothing created


@pytest.mark.parametrize(("key", "value"), PANEL_RANGES, ids=[f"{k}-{v}" for k, v in PANEL_RANGES])
def test_panel_ranges(tiap_cli, key: str, value: str, work: Path) -> None:
    root = work / "input" / "panel"
    write_panel(root)
    kept = "\n".join(ln for ln in PANEL_TEXT.splitlines() if not ln.startswith(f"{key} ="))
    (root / "panel.toml").write_text(f"{key} = {value}\n{kept}\n")
    before = snapshot(work)
    code, _, err = tiap_cli(panel_args(root, work))
    assert_refused(code, err, Variant(f"{key}-{value}", "panel.toml", content(b"")), root)
    assert snapshot(work) == before


# ---------------------------------------------------------------------- CLI numbers

HUGE = "99999999999999999999"
BAD_COUNTS = ["0", "-1", HUGE, "1" * 5000, "abc", "", "1.5", "nan"]
BAD_NON_NEGATIVE = ["-1", HUGE, "abc", "2.5", "inf"]
BAD_SEEDS = ["-1", str(2**63), HUGE, "x", "1e3"]
BAD_KAPPAS = ["nan", "inf", "-inf", "1.5", "-2", "1e999", "kappa"]
BAD_COSTS = ["-1", "nan", "inf", "1e999", "1e7", "free"]


def _number_cases() -> list[tuple[str, list[str]]]:
    cases: list[tuple[str, list[str]]] = []

    def add(command: str, option: str, values: list[str]) -> None:
        cases.extend((command, [option, v]) for v in values)

    # every bad value once per option; where commands share an option, a few of them
    add("rescore", "--k", [*BAD_COUNTS, "10,x", "10,0", f"10,{HUGE}"])
    for i, cmd in enumerate(("extract", "audit", "build-locomo", "build-lmeb", "import")):
        add(cmd, "--k", BAD_COUNTS[i % 2 :: 2])
    add("rescore", "--metrics", ["ndcg@0", f"ndcg@{HUGE}", "ndcg@-3", "ndcg@nan"])
    add("rescore", "--resamples", ["0", "-5", HUGE, "100001", "many"])
    add("rescore", "--seed", BAD_SEEDS)
    add("sample", "--n", BAD_COUNTS)
    add("sample", "--overlap", BAD_NON_NEGATIVE)
    add("sample", "--seed", BAD_SEEDS[:3])
    add("agreement", "--quorum", ["0", "-1", HUGE, "q"])
    add("agreement", "--resamples", ["-1", HUGE, "1000001", "x"])
    add("agreement", "--seed", BAD_SEEDS[1:4])
    add("agreement", "--min-fleiss", BAD_KAPPAS)
    add("agreement", "--min-judge-kappa", BAD_KAPPAS[::2])
    add("audit", "--ks", ["10,0", "x", f"{HUGE}"])
    add("audit", "--n", BAD_COUNTS[1::2])
    add("audit", "--overlap", BAD_NON_NEGATIVE[::2])
    add("audit", "--seed", BAD_SEEDS[::2])
    add("audit", "--min-fleiss", BAD_KAPPAS[1::2])
    add("audit", "--min-judge-kappa", BAD_KAPPAS[::3])
    add("audit", "--max-cost", BAD_COSTS)
    add("judge", "--max-cost", BAD_COSTS[::2])
    add("build-beam", "--max-chars", ["-1", HUGE, "lots"])
    cases.append(("sample", ["--n", "5", "--overlap", "6"]))
    cases.append(("audit", ["--n", "5", "--overlap", "6"]))
    return cases


NUMBER_CASES = _number_cases()


def _number_args(command: str, work: Path) -> list[str]:
    bundle = str(sample_bundle_path())
    ws, labels, out = str(work / "w.sqlite"), str(work / "labels.csv"), str(work / "out")
    data = str(work / "data.json")
    return {
        "rescore": ["rescore", bundle, "--out", out],
        "extract": ["cases", "extract", bundle, "--db", ws],
        "sample": ["cases", "sample", "--db", ws],
        "agreement": ["agreement", "report", "--labels", labels, "--out", out],
        "audit": ["audit", bundle, "--out", out, "--panel", "offline", "--db", ws],
        "judge": ["judge", "run", "--db", ws, "--panel", "offline"],
        "build-locomo": ["traces", "build", "locomo", data, "--out", out],
        "build-lmeb": ["traces", "build", "lmeb", str(work), "--out", out],
        "build-beam": ["traces", "build", "beam", str(work), "--out", out],
        "import": ["traces", "import", "locomo", data, "--out", out, "--memories", f"x={data}"],
    }[command]


def test_number_options_have_thirty_variants() -> None:
    assert len(NUMBER_CASES) >= 30


@pytest.mark.parametrize(
    ("command", "option"),
    NUMBER_CASES,
    ids=[f"{c}{'=' if o[1] else ''}{' '.join(o)[:40]}" for c, o in NUMBER_CASES],
)
def test_bad_number_option(tiap_cli, command: str, option: list[str], work: Path) -> None:
    (work / "labels.csv").write_text("".join(f"{ln}\n" for ln in CSV_LINES))
    (work / "data.json").write_text("[]")
    before = snapshot(work)
    bundle_before = snapshot(sample_bundle_path())
    code, _, err = tiap_cli(*_number_args(command, work), *option)
    assert code == 2, f"{option}: exit {code}: {err}"
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tiap: error: "), err
    assert option[0] in lines[0] or "cut-off" in lines[0] or "overlap" in lines[0], lines[0]
    assert len(lines[0]) < 400, "the value is shown, not its 5,000 digits"
    assert snapshot(work) == before
    assert snapshot(sample_bundle_path()) == bundle_before


# ------------------------------------------------ the real entry point, in a subprocess


@pytest.mark.parametrize(
    ("setup", "args", "fragment"),
    [
        ("toml-dir", ["rescore", "{root}", "--out", "{work}/out"],
         "bundle.toml: cannot read file (it is a directory)"),
        ("deep-labels", ["agreement", "report", "--labels", "{root}/labels.jsonl", "--out",
                         "{work}/out"], "labels.jsonl:2: malformed JSON (nested too deeply)"),
        ("none", ["rescore", "{root}", "--out", "{work}/out", "--k", HUGE], "cut-off"),
    ],
)  # fmt: skip
def test_console_script_prints_one_line(
    tiap_cli, setup: str, args: list[str], fragment: str, work: Path
) -> None:
    root = work / "input" / "b"
    write_bundle(root)
    if setup == "toml-dir":
        as_directory(root / "bundle.toml")
    write_labels(work / "input" / "l")
    if setup == "deep-labels":
        root = work / "input" / "l"
        deep = b'{"case_id": "c0", "rater": "x", "label": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        (root / "labels.jsonl").write_bytes(jsonl(LABELS[:1]) + deep + b"\n")
    before = snapshot(work)
    filled = [a.format(root=root, work=work) for a in args]
    proc = tiap_cli.subprocess(*filled, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0]
    assert snapshot(work) == before
