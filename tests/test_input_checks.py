"""Every number a user passes and every file tiap reads is checked where it enters.

Each test here was a traceback, a hang or a silently wrong result before: a cut-off
of 10^20 (an integer overflow deep in numpy or SQLite), a trillion bootstrap
resamples (an allocation of terabytes), a seed of -1 (numpy's ValueError), a
``bundle.toml`` that is a directory or not UTF-8, a run file outside the bundle, a
labels line nested 100,000 deep (RecursionError), TREC runs that cannot be read
back, NaN scores (sorted first), a bundle with no query left. Now each is a one-line
error naming the setting, or the file and the line.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from fuzz_support import (
    BOM,
    CSV_LINES,
    LABELS,
    TREC,
    jsonl,
    snapshot,
    write_bundle,
    write_lmeb,
)
from tiap import limits
from tiap.agreement import labels_from_file
from tiap.errors import InputError, TiapError
from tiap.traces.bundle import read_bundle

HUGE = 99_999_999_999_999_999_999


def one_line(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tiap: error: ")
    return lines[0]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "b"
    write_bundle(root)
    return root


# ------------------------------------------------------------------ the shared checks


def test_shared_checks_and_their_messages() -> None:
    assert limits.check_k("--k", 60) == 60
    assert limits.check_k("k", np.int64(10)) == 10  # numpy integers are integers
    for bad, problem in [
        (0, "--k must be at least 1 (got 0)"),
        (HUGE, f"--k must be at most 100,000 (got {HUGE})"),
        (True, "--k must be an integer (got True)"),
        (10.0, "--k must be an integer (got 10.0)"),
        ("10", "--k must be an integer (got '10')"),
    ]:
        with pytest.raises(limits.LimitError) as err:
            limits.check_k("--k", bad)
        assert str(err.value) == problem
    with pytest.raises(TiapError, match=r"got an integer of \d+ bits"):
        limits.check_cases("--n", 10**5000)  # not 5,000 digits in a one-line message
    assert limits.check_seed("seed", 2**63 - 1) == 2**63 - 1
    for bad in (-1, 2**63):
        with pytest.raises(TiapError, match="must be a non-negative integer below 2"):
            limits.check_seed("seed", bad)
    assert limits.check_float("x", 1, minimum=0, maximum=1) == 1.0
    for bad in (math.nan, math.inf, -math.inf, 10**400):
        with pytest.raises(TiapError, match="must be a finite number"):
            limits.check_float("x", bad, minimum=0, maximum=1)
    with pytest.raises(TiapError, match="--max-cost must not be negative"):
        limits.check_cost("--max-cost", -0.5)
    with pytest.raises(TiapError, match="must lie between 0 and 1e"):
        limits.check_cost("--max-cost", 1e7)
    with pytest.raises(TiapError, match=r"between 0 \(no intervals\) and 1,000,000"):
        limits.check_resamples("resamples", -1)
    with pytest.raises(TiapError, match="at least 1"):
        limits.check_resamples("--resamples", 0, minimum=1, maximum=10)


def test_agreement_settings_are_checked_by_tiap_limits() -> None:
    import importlib.util

    assert importlib.util.find_spec("tiap.agreement.limits") is None  # one home for limits
    assert limits.SEED_LIMIT == 2**63
    with pytest.raises(TiapError, match="quorum 4 exceeds the 3 voter"):
        limits.check_quorum("quorum", 4, 3)
    with pytest.raises(TiapError, match="quorum must be at least 1"):
        limits.check_quorum("quorum", 0)
    with pytest.raises(TiapError, match="quorum must be at most 10,000"):
        limits.check_quorum("quorum", limits.MAX_QUORUM + 1)
    with pytest.raises(TiapError, match="resamples must be between 0"):
        limits.check_resamples("resamples", limits.MAX_RESAMPLES + 1)
    assert limits.check_share_threshold("--min-valid", 1) == 1.0
    with pytest.raises(TiapError, match=r"--min-valid must be a finite number in \[0, 1\]"):
        limits.check_share_threshold("--min-valid", 1.5)


# ---------------------------------------------------------------------- the Python API


def test_rescore_api_checks_its_numbers(bundle: Path) -> None:
    from tiap.rescore import parse_measures, rescore_bundle, score_rankings
    from tiap.rescore.metrics import Measure, parse_ks

    b = read_bundle(bundle)
    with pytest.raises(TiapError, match="cut-off 99999999999999999999 must be at most 100,000"):
        parse_ks(str(HUGE))
    with pytest.raises(TiapError, match="must be at most"):
        parse_ks([10, HUGE])
    with pytest.raises(TiapError, match="cut-off 0 must be at least 1"):
        parse_measures("ndcg@0")
    with pytest.raises(TiapError, match="must be at most"):
        parse_measures("ndcg", (HUGE,))
    with pytest.raises(TiapError, match="the cut-off of ndcg must be at most 100,000"):
        score_rankings({"source": {"q1": {"m1"}}}, {"r": {"q1": ["m1"]}}, [Measure("ndcg", HUGE)])
    started = time.perf_counter()
    with pytest.raises(TiapError, match="--resamples must be at most 100,000"):
        rescore_bundle(b, ks=(1, 3), resamples=10**12)
    assert time.perf_counter() - started < 5  # refused, not allocated
    for seed in (-1, 2**63):
        with pytest.raises(TiapError, match="--seed must be a non-negative integer"):
            rescore_bundle(b, ks=(1, 3), resamples=10, seed=seed)
    rescore_bundle(b, ks=(1, 3), resamples=10, seed=2**63 - 1)  # the largest seed works


def test_cases_api_checks_its_numbers(bundle: Path, tmp_path: Path) -> None:
    from tiap.cases.extract import extract_cases
    from tiap.cases.sample import default_overlap, sample_subset
    from tiap.cases.workspace import Workspace

    b = read_bundle(bundle)
    with Workspace(tmp_path / "w.sqlite") as ws:
        with pytest.raises(TiapError, match="k must be at most 100,000"):
            extract_cases(b, ws, k=HUGE)
        assert ws.cases() == []
        extract_cases(b, ws, k=3)
        for kwargs, problem in [
            ({"n": HUGE}, "--n must be at most 1,000,000"),
            ({"n": 0}, "--n must be at least 1"),
            ({"overlap": -1}, "--overlap must not be negative"),
            ({"seed": -1}, "--seed must be a non-negative integer"),
            ({"n": 5, "overlap": 6}, "cannot exceed --n"),
        ]:
            with pytest.raises(TiapError, match=problem):
                sample_subset(ws, name="v", **kwargs)  # type: ignore[arg-type]
        assert ws.subsets() == []
    with pytest.raises(TiapError, match="--n must be at least 1"):
        default_overlap(-1)


def test_build_options_and_bundle_config_check_k() -> None:
    from tiap.traces.build import BuildOptions
    from tiap.traces.models import BundleConfig

    for bad in (0, HUGE, True, 2.5):
        with pytest.raises(ValidationError):
            BuildOptions(k=bad)
        with pytest.raises(ValidationError):
            BundleConfig(dataset="d", k=bad)
    assert BuildOptions(k=100_000).k == 100_000


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"k": 0}, "must be at least 1"),
        ({"k": HUGE}, "must be at most 100,000"),
        ({"ks": "10,0"}, "cut-off 0 must be at least 1"),
        ({"n": HUGE}, "must be at most 1,000,000"),
        ({"overlap": -2}, "must not be negative"),
        ({"n": 5, "overlap": 6}, "overlap (6) cannot exceed n (5)"),
        ({"seed": -1}, "non-negative integer below 2**63"),
        ({"min_fleiss": math.nan}, "must be a finite number"),
        ({"min_judge_kappa": 1.5}, "must lie between -1 and 1"),
        ({"rescore_resamples": 10**9}, "must be at most 100,000"),
        ({"agreement_resamples": -1}, "between 0 (no intervals)"),
        ({"max_cost": math.inf}, "must be a finite number"),
        ({"max_cost": -1.0}, "must not be negative"),
        ({"probes": ["order", "bogus"]}, "unknown probe kind 'bogus'"),
        ({"probe_repeats": 1}, "must be at least 2"),
        ({"probe_repeats": 21}, "must be at most 20"),
        ({"human_labels": "h.csv", "humans": "skip"}, "humans='skip' leaves them out"),
    ],
)
def test_audit_settings_check_every_number(
    tmp_path: Path, settings: dict[str, object], problem: str
) -> None:
    from tiap.audit import AuditSettings

    with pytest.raises(ValidationError) as err:
        AuditSettings(bundle=tmp_path, out=tmp_path / "o", panel="offline", **settings)  # type: ignore[arg-type]
    assert problem in str(err.value)
    assert "Value error, " + problem in str(err.value) or problem in str(err.value)


# ------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["rescore", "{b}", "--out", "{o}", "--k", str(HUGE)], "cut-off 99999999999999999999"),
        (["rescore", "{b}", "--out", "{o}", "--resamples", str(10**12)], "--resamples must be"),
        (["rescore", "{b}", "--out", "{o}", "--seed", "-1"], "--seed must be a non-negative"),
        (["cases", "extract", "{b}", "--db", "{w}", "--k", str(HUGE)], "--k must be at most"),
        (["cases", "sample", "--db", "{w}", "--seed", "-1"], "--seed must be a non-negative"),
        (["audit", "{b}", "--out", "{o}", "--panel", "offline", "--seed", "-1"], "--seed must"),
        (["audit", "{b}", "--out", "{o}", "--panel", "offline", "--k", "0"], "--k must be at"),
        (["audit", "{b}", "--out", "{o}", "--panel", "offline", "--max-cost", "nan"], "finite"),
        (["judge", "run", "--db", "{w}", "--panel", "offline", "--lease", "0"], "--lease must"),
        (["traces", "build", "locomo", "x.json", "--out", "{o}", "-k", "0"], "--k must be at"),
        (["cases", "sample", "--db", "{w}", "--n", "many"], "Invalid value for '--n'"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_command_line_numbers_are_one_line(
    tiap_cli, bundle: Path, tmp_path: Path, args: list[str], fragment: str
) -> None:
    from tiap.cases.workspace import Workspace

    Workspace(tmp_path / "w.sqlite").close()
    before = snapshot(tmp_path)
    filled = [a.format(b=bundle, o=tmp_path / "out", w=tmp_path / "w.sqlite") for a in args]
    started = time.perf_counter()
    code, _, err = tiap_cli(filled)
    assert fragment in one_line(code, err)
    assert time.perf_counter() - started < 10
    assert snapshot(tmp_path) == before


def test_k_in_bundle_toml(tiap_cli, bundle: Path, tmp_path: Path) -> None:
    toml = bundle / "bundle.toml"
    toml.write_text(toml.read_text().replace("k = 3", f"k = {HUGE}"))
    for args in (
        ["rescore", str(bundle), "--out", str(tmp_path / "o")],
        ["cases", "extract", str(bundle), "--db", str(tmp_path / "w.sqlite")],
    ):
        code, _, err = tiap_cli(args)
        line = one_line(code, err)
        assert f"{toml}: field 'k': must be at most 100,000 (got {HUGE})" in line
    assert not (tmp_path / "w.sqlite").exists()


# -------------------------------------------------------------------------- bundles


def test_bundle_toml_directory_or_not_utf8(bundle: Path) -> None:
    toml = bundle / "bundle.toml"
    text = toml.read_bytes()
    toml.unlink()
    toml.mkdir()
    with pytest.raises(InputError, match=r"bundle\.toml: cannot read file \(it is a directory\)"):
        read_bundle(bundle)
    toml.rmdir()
    toml.write_bytes(text.replace(b'"fuzz"', b'"fuzz"\n# caf\xe9'))
    with pytest.raises(InputError) as err:
        read_bundle(bundle)
    assert str(err.value).startswith(f"{toml}: file is not UTF-8 text at line 2 (")
    toml.write_bytes(BOM + text)
    assert read_bundle(bundle).config.dataset == "fuzz"


@pytest.mark.parametrize(
    ("table", "file"),
    [
        ("runs.r", "/etc/hostname"),
        ("runs.r", "../b2/runs/r.jsonl"),
        ("runs.r", "runs/../../b2/runs/r.jsonl"),
        ("stores.st", "/etc/hostname"),
        ("stores.st", "../b2/stores/st.jsonl"),
    ],
)
def test_file_settings_stay_inside_the_bundle(bundle: Path, table: str, file: str) -> None:
    write_bundle(bundle.parent / "b2")  # a valid file where the path leads
    toml = bundle / "bundle.toml"
    text = toml.read_text()
    if table == "runs.r":
        text = text.replace('retriever = "bm25"', f'retriever = "bm25"\nfile = "{file}"')
    else:
        text += f'\n[stores.st]\nfile = "{file}"\n'
    toml.write_text(text)
    with pytest.raises(InputError) as err:
        read_bundle(bundle)
    assert str(err.value).startswith(f"{toml}: ")
    assert f"file '{file}' must be a relative path inside the bundle" in str(err.value)


def test_a_symbolic_link_out_of_the_bundle_is_refused(bundle: Path) -> None:
    write_bundle(bundle.parent / "b2")
    run = bundle / "runs" / "r.jsonl"
    run.unlink()
    run.symlink_to(bundle.parent / "b2" / "runs" / "r.jsonl")
    with pytest.raises(InputError, match="leads outside the bundle"):
        read_bundle(bundle)
    run.unlink()
    (bundle / "runs" / "inside.jsonl").write_bytes(jsonl([]))
    run.symlink_to("inside.jsonl")  # a link inside the bundle is fine
    toml = bundle / "bundle.toml"
    toml.write_text(toml.read_text() + '\n[runs.inside]\nstore = "st"\n')
    assert read_bundle(bundle).rankings("r") == {}


def test_nan_and_infinite_scores_name_the_line(bundle: Path) -> None:
    run = bundle / "runs" / "r.jsonl"
    good = run.read_text().splitlines()
    for literal in ("NaN", "Infinity", "-Infinity", "1e400"):
        run.write_text(f"{good[0]}\n{good[1].replace('1.0', literal)}\n")
        with pytest.raises(InputError) as err:
            read_bundle(bundle)
        assert str(err.value).startswith(f"{run}:2: field 'scores.1': Input should be a finite")
    run.unlink()
    trec = bundle / "runs" / "r.trec"
    for score in ("nan", "inf", "-inf", "1e999"):
        # before, a nan score sorted first
        trec.write_text(
            "".join(f"{ln}\n" for ln in TREC).replace("q1 Q0 m1 3 1.0", f"q1 Q0 m1 3 {score}")
        )
        with pytest.raises(InputError) as err:
            read_bundle(bundle)
        assert str(err.value) == f"{trec}:3: score '{score}' is not a finite number"


def test_trec_cross_references_name_the_line(bundle: Path) -> None:
    (bundle / "runs" / "r.jsonl").unlink()
    trec = bundle / "runs" / "r.trec"
    lines = list(TREC)
    lines[4] = "q2 Q0 zz 2 1.0 r"
    trec.write_text("".join(f"{ln}\n" for ln in lines))
    with pytest.raises(InputError) as err:
        read_bundle(bundle)
    assert str(err.value).startswith(f"{trec}:5: unknown memory id 'zz'")
    lines[4] = "q9 Q0 m2 2 1.0 r"
    trec.write_text("".join(f"{ln}\n" for ln in lines))
    with pytest.raises(InputError) as err:
        read_bundle(bundle)
    assert str(err.value) == f"{trec}:5: unknown query id 'q9'"


def test_a_byte_order_mark_is_accepted_everywhere(tiap_cli, bundle: Path, tmp_path: Path) -> None:
    for p in [bundle / "bundle.toml", *bundle.glob("*.jsonl"), *bundle.glob("*/*.jsonl")]:
        p.write_bytes(BOM + p.read_bytes())
    assert [q.query_id for q in read_bundle(bundle).queries] == ["q1", "q2", "q3"]
    (bundle / "runs" / "r.jsonl").unlink()
    (bundle / "runs" / "r.trec").write_bytes(BOM + "".join(f"{ln}\n" for ln in TREC).encode())
    assert read_bundle(bundle).rankings("r")["q1"] == ["m2", "f1", "m1"]
    task = tmp_path / "task"
    write_lmeb(task)
    for p in task.iterdir():
        p.write_bytes(BOM + p.read_bytes())
    code, _, err = tiap_cli("traces", "build", "lmeb", str(task), "--out", str(tmp_path / "o"),
                            "-r", "none", "-q")  # fmt: skip
    assert code == 0, err
    queries = (tmp_path / "o" / "queries.jsonl").read_text().splitlines()
    assert [json.loads(q)["query_id"] for q in queries] == ["q1", "q2", "q3"]
    for name, data in (
        ("l.csv", "\n".join(CSV_LINES)),
        ("l.tsv", "\n".join(CSV_LINES).replace(",", "\t")),
    ):
        path = tmp_path / name
        path.write_bytes(BOM + data.encode())
        assert len(labels_from_file(path).labels) == len(LABELS)
    path = tmp_path / "l.jsonl"
    path.write_bytes(BOM + jsonl(LABELS))
    assert len(labels_from_file(path).labels) == len(LABELS)


def test_deep_nesting_in_a_labels_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_bytes(
        jsonl(LABELS[:1]) + f'{{"case_id": "c", "rater": "r", "label": {deep}}}\n'.encode()
    )
    with pytest.raises(InputError) as err:
        labels_from_file(path)
    assert str(err.value) == f"{path}:2: malformed JSON (nested too deeply)"


def test_qrels_header_hint_only_for_a_header(tmp_path: Path) -> None:
    from tiap.traces.lmeb import load_lmeb

    task = tmp_path / "task"
    write_lmeb(task)
    qrels = task / "qrels.tsv"
    for text, message in [
        (
            "query-id\tcorpus-id\tscore\n",
            "score 'score' is not an integer (qrels.tsv has no header row)",
        ),
        ("q1\td1\trelevant\n", "score 'relevant' is not an integer"),  # a known query: data
        ("q1\td1\t1\nqid\tdocid\tscore\n", "score 'score' is not an integer"),  # not line 1
        ("q1\td1\t1.0\n", "score '1.0' is not an integer"),
        ("q1\td1\t12345678901\n", "'12345678901' is out of range (a grade has at most 9 digits)"),
    ]:
        qrels.write_text(text)
        with pytest.raises(InputError) as err:
            load_lmeb(task)
        assert str(err.value).endswith(message), str(err.value)


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    from tiap.traces.lmeb import load_lmeb
    from tiap.traces.trec import read_trec_run

    task = tmp_path / "task"
    write_lmeb(task)
    (task / "qrels.tsv").write_bytes(b"q1\td1\t1\nq2\td\xe92\t1\n")
    with pytest.raises(InputError, match=r"qrels\.tsv: file is not UTF-8 text at line 2"):
        load_lmeb(task)
    trec = tmp_path / "r.trec"
    trec.write_bytes(b"q1 Q0 a 1 1.0 t\n\nq1 Q0 \xff 2 0.5 t\n")
    with pytest.raises(InputError, match=r"r\.trec: file is not UTF-8 text at line 3"):
        read_trec_run(trec)


# --------------------------------------------------------------- writing TREC runs


def _spaced_task(root: Path) -> Path:
    """An LMEB task whose ids hold spaces (fine in JSONL and in qrels' tab columns)."""
    root.mkdir(parents=True)
    queries = [{"id": "q 1", "text": "What is the cat called?"}, {"id": "q2", "text": "Oslo?"}]
    corpus = [{"id": "d 1", "text": "Alice adopted a cat named Tom."},
              {"id": "d2", "text": "Bob moved to Oslo."}]  # fmt: skip
    (root / "queries.jsonl").write_bytes(jsonl(queries))
    (root / "corpus.jsonl").write_bytes(jsonl(corpus))
    (root / "qrels.tsv").write_text("q 1\td 1\t1\nq2\td2\t1\n")
    return root


def test_trec_runs_with_spaced_ids_are_refused_before_writing(tiap_cli, tmp_path: Path) -> None:
    task = _spaced_task(tmp_path / "task")
    out = tmp_path / "out"
    code, _, err = tiap_cli("traces", "build", "lmeb", str(task), "--out", str(out), "-q",
                            "--run-format", "trec")  # fmt: skip
    line = one_line(code, err)
    assert "cannot write the runs as TREC: run 'bm25-raw': query id 'q 1' holds whitespace" in line
    assert "--run-format jsonl" in line
    assert not out.exists()
    # an existing bundle is not cleared by --force either
    out.mkdir()
    (out / "bundle.toml").write_text("kept")
    code, _, err = tiap_cli("traces", "build", "lmeb", str(task), "--out", str(out), "-q",
                            "--run-format", "trec", "--force")  # fmt: skip
    one_line(code, err)
    assert (out / "bundle.toml").read_text() == "kept"
    # JSON Lines hold them, and read back
    code, _, err = tiap_cli("traces", "build", "lmeb", str(task), "--out", str(tmp_path / "j"),
                            "-q")  # fmt: skip
    assert code == 0, err
    assert "q 1" in read_bundle(tmp_path / "j").rankings("bm25-raw")


def test_write_bundle_refuses_trec_ids_it_cannot_write(bundle: Path, tmp_path: Path) -> None:
    from tiap.traces import write_bundle as write

    b = read_bundle(bundle)
    write(b, tmp_path / "ok", run_format="trec")
    assert read_bundle(tmp_path / "ok").rankings("r") == b.rankings("r")
    b.stores["st"][1].memory_id = "f 2"
    b.runs["r"][1].ranking[0] = "f 2"
    with pytest.raises(TiapError, match="memory id 'f 2' \\(query 'q2'\\) holds whitespace"):
        write(b, tmp_path / "bad", run_format="trec")
    assert not (tmp_path / "bad").exists()


# ----------------------------------------------------------------- no query left


def test_a_build_with_every_query_excluded_says_why(tiap_cli, tmp_path: Path) -> None:
    task = tmp_path / "task"
    write_lmeb(task)
    (task / "qrels.tsv").write_text("q1\td1\t0\nq2\td2\t0\n")
    code, _, err = tiap_cli("traces", "build", "lmeb", str(task), "--out", str(tmp_path / "o"),
                            "-r", "none")  # fmt: skip
    line = one_line(code, err)
    assert (
        "task: no queries to build a bundle from: all 3 were excluded (query_no_evidence 3)" in line
    )
    assert not (tmp_path / "o").exists()


def test_rescoring_a_bundle_without_queries_says_why(
    tiap_cli, bundle: Path, tmp_path: Path
) -> None:
    from tiap.rescore import rescore_bundle

    (bundle / "queries.jsonl").write_bytes(b"")
    (bundle / "runs" / "r.jsonl").write_bytes(b"")
    b = read_bundle(bundle)
    with pytest.raises(TiapError, match=r"queries\.jsonl: the bundle has no queries$"):
        rescore_bundle(b, ks=(3,), resamples=10)
    report = {
        "dataset": "fuzz", "input_file": "x", "input_sha256": "0" * 64,
        "excluded_queries": ["a", "b", "c"],
        "issues": [
            {"kind": "query_no_evidence", "action": "excluded", "item": "a"},
            {"kind": "query_no_evidence", "action": "excluded", "item": "b"},
            {"kind": "duplicate_question", "action": "excluded", "item": "c"},
            {"kind": "evidence_split", "action": "normalised", "item": "c"},
        ],
    }  # fmt: skip
    (bundle / "build_report.json").write_text(json.dumps(report))
    code, _, err = tiap_cli("rescore", str(bundle), "--out", str(tmp_path / "o"))
    line = one_line(code, err)
    assert line.endswith(
        "the bundle has no queries: the build excluded all 3 (query_no_evidence 2, "
        f"duplicate_question 1; listed in {bundle / 'build_report.json'})"
    )
    assert not (tmp_path / "o").exists()
