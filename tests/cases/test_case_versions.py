"""Bundle versions: cases record the fingerprint of the bundle they came from; a
changed bundle is an error naming both versions, or (replace_stale) its stale cases
and their labels are retired from every figure and kept in the workspace."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from case_support import make_case, make_label

from tiap.cases.extract import PAPER_RULE, ContestedRule, extract_cases, find_contested
from tiap.cases.fingerprint import ANSWER_FIELDS, CONTENT_FIELDS, QRELS_DRAW_FIELDS, short
from tiap.cases.models import Case
from tiap.cases.sample import sample_subset
from tiap.cases.versions import StaleCasesError
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.traces.bundle import read_bundle
from version_support import (
    copy_bundle,
    fresh_cases,
    relayout,
    reverse_rankings,
    rewrite_derived_texts,
    rewrite_memory,
)


def _independent_fingerprint(cases: list[Case], dataset: str, k: int) -> str:
    """The recipe as the documentation states it, written out again: sha256 of the
    canonical header JSON, then for each case (sorted by digest) a newline and the
    sha256 digest of the canonical JSON of its content fields."""

    def canon(value: object) -> bytes:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()

    header = {
        "format": "tiap.cases.version/1",
        "kind": "contested",
        "dataset": dataset,
        "k": k,
        "rule": {
            "missed": ["raw"],
            "credited": ["source", "canonical"],
            "credit_from": "canonical",
        },
    }
    digests = []
    for c in cases:
        data = json.loads(c.model_dump_json())
        # a contested credit's key leaves out the answer cases' own fields, so its
        # fingerprint is the one tiap gave before answer cases existed
        key = {f: data[f] for f in CONTENT_FIELDS if f not in ANSWER_FIELDS}
        digests.append(hashlib.sha256(canon(key)).digest())
    h = hashlib.sha256(canon(header))
    for d in sorted(digests):
        h.update(b"\n" + d)
    return h.hexdigest()


def _version(db: Path) -> str:
    with Workspace.open_readonly(db) as ws:
        current = ws.current_version("contested")
        assert current is not None
        return current.fingerprint


def test_the_fingerprint_is_the_documented_hash_of_what_defines_the_cases(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    bundle = read_bundle(sample_bundle_dir)
    with Workspace(tmp_path / "w.sqlite") as ws:
        report = extract_cases(bundle, ws)
    assert report.version is not None
    cases = find_contested(bundle)[0]
    assert report.version.fingerprint == _independent_fingerprint(cases, "tiap-sample", 10)
    # every field of a case is either part of its content or named as the draw's
    assert set(Case.model_fields) == set(CONTENT_FIELDS)
    assert set(QRELS_DRAW_FIELDS) < set(CONTENT_FIELDS)
    assert set(ANSWER_FIELDS) < set(CONTENT_FIELDS)


def test_the_same_content_in_another_layout_is_the_same_version(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    moved = copy_bundle(sample_bundle_dir, tmp_path / "b")
    relayout(moved)
    assert (moved / "stores" / "facts3.jsonl").read_bytes() != (
        sample_bundle_dir / "stores" / "facts3.jsonl"
    ).read_bytes()
    with Workspace(tmp_path / "w.sqlite") as ws:
        first = extract_cases(read_bundle(sample_bundle_dir), ws)
        again = extract_cases(read_bundle(moved), ws)  # no error: the same version
    assert first.version is not None
    assert again.version is not None
    assert again.version.fingerprint == first.version.fingerprint
    assert (again.version.status, again.added) == ("same", 0)


@pytest.mark.parametrize("change", ["text", "rankings", "k", "rule"])
def test_what_defines_the_cases_changes_the_version(
    tmp_path: Path, sample_bundle_dir: Path, change: str
) -> None:
    base = find_contested(read_bundle(sample_bundle_dir))[0]
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    k, rule = None, PAPER_RULE
    if change == "text":
        rewrite_derived_texts(b)
    elif change == "rankings":
        reverse_rankings(b)
    elif change == "k":
        k = 20
    else:
        rule = ContestedRule(missed=("raw",), credited=("canonical",), credit_from="canonical")
    with Workspace(tmp_path / "a.sqlite") as ws:
        one = extract_cases(read_bundle(sample_bundle_dir), ws).version
    with Workspace(tmp_path / "b.sqlite") as ws:
        two = extract_cases(read_bundle(b), ws, k=k, rule=rule).version
    assert one is not None
    assert two is not None
    assert one.fingerprint != two.fingerprint
    assert base  # the sample has contested credits to change


def test_a_changed_bundle_is_an_error_naming_both_versions_and_changes_nothing(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    db = tmp_path / "w.sqlite"
    with Workspace(db) as ws:
        extract_cases(read_bundle(sample_bundle_dir), ws)
        ids = ws.case_ids()
        ws.add_label(make_label(ids[0], "ann", "supports"))
    old = _version(db)
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    rewrite_derived_texts(b)
    with Workspace(tmp_path / "fresh.sqlite") as ws:
        new = extract_cases(read_bundle(b), ws).version
    assert new is not None
    with Workspace(db) as ws:
        with pytest.raises(StaleCasesError) as caught:
            extract_cases(read_bundle(b), ws)
        message = str(caught.value)
        assert short(old) in message
        assert short(new.fingerprint) in message
        assert f"({len(ids)} of them differ, 0 are gone)" in message
        assert "--replace-stale" in message
        # nothing changed: the old cases, their text, their label
        assert ws.case_ids() == ids
        assert not ws.cases()[0].memory_text.startswith("Rewritten: ")
        assert [r.rater for r in ws.latest_labels(case_ids=[ids[0]])] == ["ann"]
        assert ws.retired_case_versions() == []
    assert _version(db) == old


def test_replace_stale_retires_cases_and_labels_from_every_read_and_keeps_them(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    db = tmp_path / "w.sqlite"
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(db) as ws:
        extract_cases(read_bundle(b), ws)
        before = {c.case_id: c for c in ws.cases()}
        sample_subset(ws, name="val", n=10, overlap=2)
        for cid in before:
            ws.add_label(make_label(cid, "jj", "supports", rater_kind="judge", rubric_hash="r"))
        ws.add_label(make_label(next(iter(before)), "ann", "partial"))
    reverse_rankings(b)
    want = {c.case_id: c for c in fresh_cases(b)}
    with Workspace(db) as ws:
        report = extract_cases(read_bundle(b), ws, replace_stale=True)
        change = report.version
        assert change is not None
        assert change.status == "moved"
        gone = set(before) - set(want)
        changed = {cid for cid in set(before) & set(want) if before[cid] != want[cid]}
        assert gone
        assert changed
        assert change.retired == len(gone) + len(changed)
        assert change.replaced == len(changed)
        assert change.retired_labels == change.retired + (next(iter(before)) in gone | changed)
        assert change.stale_subsets == ["val"]
        # every read sees exactly the cases a fresh extraction gives
        assert {c.case_id: c for c in ws.cases()} == want
        assert ws.count_cases() == len(want) == ws.count_cases("contested")
        assert set(ws.case_ids()) == set(want)
        assert ws.case_kinds() == {"contested": len(want)}
        live = ws.latest_labels()
        assert {r.case_id for r in live} <= set(want) - gone - changed
        assert ws.latest_judge_labels(["jj"], "r").keys() == {
            (cid, "jj") for cid in set(before) - gone - changed
        }
        for cid in gone:
            with pytest.raises(TiapError, match="was retired"):
                ws.case(cid)
        # kept: the old content, and its labels, pointing to it
        kept = {v.case_id: v for v in ws.retired_case_versions()}
        assert set(kept) == gone | changed
        assert all(kept[cid].case == before[cid] for cid in kept)
        # a changed case without the human label: its history is the judge's label alone
        # (min(), not next(iter()), so the choice does not follow the hash seed)
        cid = min(changed - {next(iter(before))})
        history = ws.label_history(cid, include_retired=True)
        assert [(r.rater, r.retired_with) for r in history] == [("jj", kept[cid].id)]
        assert ws.label_history(cid) == []
        # the subset drawn from the old version is stale until drawn again
        with pytest.raises(TiapError, match="subset 'val' is stale"):
            ws.cases(subset="val")
        with pytest.raises(TiapError, match="is stale"):
            ws.overlap_ids("val")
        assert ws.stale_subsets() == ["val"]
        sample_subset(ws, name="val", n=10, overlap=2, replace=True)
        assert ws.stale_subsets() == []
        assert {c.case_id for c in ws.cases(subset="val")} <= set(want)


def test_unchanged_cases_keep_their_labels_but_subsets_of_the_old_version_go_stale(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    db = tmp_path / "w.sqlite"
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(db) as ws:
        extract_cases(read_bundle(b), ws)
        cases = ws.cases()
        for c in cases:
            ws.add_label(make_label(c.case_id, "ann", "supports"))
        sample_subset(ws, name="val", n=5, overlap=1)
    # one credited memory gets a new text: only its cases are stale
    target = cases[0]
    rewrite_memory(b, target.store, target.memory_id, "A new text.")
    with Workspace(db) as ws:
        change = extract_cases(read_bundle(b), ws, replace_stale=True).version
        assert change is not None
        hit = {
            c.case_id for c in cases if (c.store, c.memory_id) == (target.store, target.memory_id)
        }
        assert (change.retired, change.replaced) == (len(hit), len(hit))
        assert change.carried == len(cases) - len(hit)
        labelled = {r.case_id for r in ws.latest_labels()}
        assert labelled == {c.case_id for c in cases} - hit
        assert all(ws.case(cid).memory_text == "A new text." for cid in hit)
        assert ws.stale_subsets() == ["val"]  # a draw from the earlier version's pool


def test_extracting_other_runs_of_the_same_bundle_is_the_same_version(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    bundle = read_bundle(sample_bundle_dir)
    with Workspace(tmp_path / "w.sqlite") as ws:
        one = extract_cases(bundle, ws, runs=["lexical-facts3"])
        two = extract_cases(bundle, ws, runs=["lexical-facts1"])
        assert one.version is not None
        assert two.version is not None
        assert one.version.fingerprint == two.version.fingerprint
        assert two.version.status == "same"
        assert two.added == two.contested
        assert {c.run for c in ws.cases()} == {"lexical-facts3", "lexical-facts1"}


def test_cases_of_an_earlier_tiap_are_adopted_when_the_bundle_gives_them(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    bundle = read_bundle(sample_bundle_dir)
    cases = find_contested(bundle)[0]
    db = tmp_path / "w.sqlite"
    with Workspace(db) as ws:
        ws.add_cases(cases)  # as an earlier tiap stored them: no version
        ws.save_subset("val", [c.case_id for c in cases[:4]])
        ws.add_label(make_label(cases[0].case_id, "ann", "supports"))
        assert ws.case_versions_of([cases[0].case_id]) == {cases[0].case_id: None}
        change = extract_cases(bundle, ws).version
        assert change is not None
        assert (change.status, change.previous, change.carried) == ("adopted", None, len(cases))
        assert ws.stale_subsets() == []
        assert ws.subset("val").bundle_fingerprint == change.fingerprint
        assert len(ws.latest_labels()) == 1
    # an earlier tiap's cases the bundle no longer gives are stale
    legacy = tmp_path / "legacy.sqlite"
    with Workspace(legacy) as ws:
        ws.add_cases([cases[0].model_copy(update={"memory_text": "What it said then."})])
        with pytest.raises(StaleCasesError, match="stored before tiap recorded bundle versions"):
            extract_cases(bundle, ws)


def test_stale_cases_under_judgment_are_not_retired(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    db = tmp_path / "w.sqlite"
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(db) as ws:
        extract_cases(read_bundle(b), ws)
        cid = ws.case_ids()[0]
        ws.take_leases("run-1", "jj", "r", [(cid, "h")], time.time() + 600)
    rewrite_derived_texts(b)
    with Workspace(db) as ws:
        with pytest.raises(TiapError, match="being judged or wait in an open provider batch"):
            extract_cases(read_bundle(b), ws, replace_stale=True)
        assert ws.retired_case_versions() == []


def test_a_qrels_pair_whose_source_changed_is_stale(tmp_path: Path) -> None:
    from test_case_from_qrels import graded_task

    from tiap.cases.from_qrels import from_qrels

    task = graded_task(tmp_path)
    db = tmp_path / "w.sqlite"
    with Workspace(db) as ws:
        first = from_qrels(task, ws, per_dataset=6)
        ids = ws.case_ids(subset="qrels")
        ws.add_label(make_label(ids[0], "ann", "relevant"))
    corpus = task.parent / "corpus.jsonl"  # LMEB's layout: one level up
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        row["text"] = "Changed: " + row["text"]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Workspace(db) as ws:
        with pytest.raises(StaleCasesError) as caught:
            from_qrels(task, ws, per_dataset=6)  # the same pairs, drawn the same way
        assert first.version is not None
        assert short(first.version.fingerprint) in str(caught.value)
        again = from_qrels(task, ws, per_dataset=6, replace_stale=True)
        assert again.version is not None
        assert short(again.version.fingerprint) in str(caught.value)
        assert again.subset_status == "replaced"
        assert again.version.retired == len(ids) == again.version.replaced
        assert all(c.memory_text.startswith("Changed: ") for c in ws.cases(subset="qrels"))
        assert ws.latest_labels() == []
        assert ws.subset("qrels").bundle_fingerprint == again.version.fingerprint
        unchanged = from_qrels(task, ws, per_dataset=6)
        assert unchanged.subset_status == "unchanged"


def test_a_case_model_and_its_row_stay_one_case(tmp_path: Path) -> None:
    """add_cases (no version) and a versioned store give the same case back."""
    with Workspace(tmp_path / "w.sqlite") as ws:
        ws.add_cases([make_case("c1")], bundle_fingerprint="f" * 64)
        assert ws.case("c1") == make_case("c1")
        assert ws.case_versions_of(["c1"]) == {"c1": "f" * 64}


def test_the_command_line_names_the_versions_and_lists_what_is_kept(
    tiap_cli, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    db = tmp_path / "w.sqlite"
    b = copy_bundle(sample_bundle_dir, tmp_path / "b")
    code, out, _ = tiap_cli("cases", "extract", b, "--db", db)
    assert code == 0
    old = _version(db)
    assert f"bundle version {old[:12]}" in out
    assert tiap_cli("cases", "sample", "--db", db, "--n", "5")[0] == 0
    rewrite_derived_texts(b)
    code, out, err = tiap_cli("cases", "extract", b, "--db", db)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert old[:12] in err
    assert "--replace-stale" in err
    code, out, _ = tiap_cli("cases", "extract", b, "--db", db, "--replace-stale")
    assert code == 0
    new = _version(db)
    assert f"bundle version {old[:12]} -> {new[:12]}" in out
    assert "stale subsets (draw them again with tiap cases sample --replace): 'validation'" in out
    code, out, _ = tiap_cli("cases", "subsets", "--db", db)
    assert "validation: 5 cases" in out
    assert "stale: draw it again" in out
    code, out, _ = tiap_cli("cases", "versions", "--db", db, "--json")
    data = json.loads(out)
    assert [(v["fingerprint"], v["retired_at"] is None) for v in data["versions"]] == [
        (old, False),
        (new, True),
    ]
    with Workspace.open_readonly(db) as ws:
        assert data["retired_cases"] == {old: len(ws.retired_case_versions())}
    code, _, err = tiap_cli("cases", "list", "--db", db, "--subset", "validation")
    assert code == 2
    assert "subset 'validation' is stale" in err
    # drawn again (a stale subset needs --replace, not --force), it is current
    code, _, err = tiap_cli("cases", "sample", "--db", db, "--n", "5")
    assert code == 2
    assert "it is stale" in err
    assert tiap_cli("cases", "sample", "--db", db, "--n", "5", "--replace")[0] == 0
    code, out, _ = tiap_cli("cases", "list", "--db", db, "--subset", "validation")
    assert code == 0
    assert out.strip().endswith("5 cases")


def test_another_cut_off_is_another_version_and_the_error_says_so(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    bundle = read_bundle(sample_bundle_dir)
    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(bundle, ws)
        with pytest.raises(StaleCasesError, match=r"; k 10 -> 20"):
            extract_cases(bundle, ws, k=20)
        assert {c.k for c in ws.cases()} == {10}
