"""Answer cases (kind ``answer``): the model's kind fields, the criteria variant each
question type gets, and ``from-answers``: counted queries without an answer, the
run's version, idempotent re-runs, stale answers, the validation subset."""

from __future__ import annotations

from pathlib import Path

import pytest
from case_support import make_case
from pydantic import ValidationError

from support.answer_cases import answer_case
from support.qrels_cases import qrels_case
from tiap.cases import Case, Workspace
from tiap.cases.extract import extract_cases
from tiap.cases.from_answers import answer_case_id, answer_cases, from_answers
from tiap.cases.sample import sample_subset, stratum
from tiap.cases.versions import StaleCasesError
from tiap.errors import TiapError
from tiap.rubric.answer_criteria import CRITERIA, VARIANT_FOR_TYPE
from tiap.traces.bundle import Bundle, read_bundle
from tiap.traces.models import RunEntry

RUN = "lexical-facts1"


# ------------------------------------------------------------------ the model


def test_an_answer_case_carries_its_fields() -> None:
    case = answer_case(0)
    assert case.is_answer
    assert not case.is_qrels
    assert (case.rank, case.k, case.memory_id, case.memory_text) == (None, None, "", "")
    assert case.hypothesis == "You graduated with a degree in Business Administration."


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rank": 3}, "fields of other kinds of case on a answer case: \\['rank'\\]"),
        ({"k": 10}, "\\['k'\\]"),
        ({"grade": 1}, "\\['grade'\\]"),
        ({"pair": "annotated"}, "\\['pair'\\]"),
        ({"hypothesis": None}, "needs the run's answer"),
        ({"hypothesis": "  \n"}, "needs the run's answer"),
        ({"memory_text": "a memory"}, "has no memory"),
        ({"memory_source_ids": ["D1:1"]}, "has no memory"),
        ({"metadata": {"abstention": "yes"}}, "'abstention' must be true or false"),
    ],
)
def test_an_answer_case_refuses_fields_of_other_kinds(change: dict, message: str) -> None:
    data = answer_case(0).model_dump()
    with pytest.raises(ValidationError, match=message):
        Case.model_validate({**data, **change})


def test_other_kinds_refuse_the_answer_field() -> None:
    for case in (make_case("c1"), qrels_case(0)):
        data = case.model_dump()
        with pytest.raises(ValidationError, match="hypothesis"):
            type(case).model_validate({**data, "hypothesis": "an answer"})


@pytest.mark.parametrize(
    ("question_type", "query_id", "abstention", "variant"),
    [
        ("single-session-user", "e47becba", False, "generic"),
        ("single-session-assistant", "7161e7e2", False, "generic"),
        ("multi-session", "0a995998", False, "generic"),
        ("temporal-reasoning", "gpt4_59149c77", False, "temporal-reasoning"),
        ("knowledge-update", "6a1eabeb", False, "knowledge-update"),
        ("single-session-preference", "8a2466db", False, "preference"),
        # LongMemEval marks an unanswerable question by its id, whatever its type
        ("single-session-user", "0862e8bf_abs", False, "abstention"),
        ("temporal-reasoning", "gpt4_x_abs", False, "abstention"),
        # a bundle's own abstention mark (BEAM's category), id or not
        ("abstention", "q7", True, "abstention"),
        # LoCoMo's categories and no type at all: the generic check
        ("multi-hop", "conv-26_q3", False, "generic"),
        (None, "q1", False, "generic"),
    ],
)
def test_each_question_type_gets_its_criteria(
    question_type: str | None, query_id: str, abstention: bool, variant: str
) -> None:
    case = answer_case(0, question_type=question_type, query_id=query_id, abstention=abstention)
    fields = case.prompt_fields()
    assert case.criteria_variant == variant
    assert fields["criteria"] == CRITERIA[variant]  # type: ignore[index]
    assert fields["question_type"] == (question_type or "unknown")
    assert fields["response"] == case.hypothesis
    assert (fields["question"], fields["answer"]) == (case.question, case.answer)
    assert fields["case_kind"] == "answer"


def test_the_criteria_follow_longmemeval_and_never_come_from_the_text() -> None:
    assert "off-by-one" in CRITERIA["temporal-reasoning"]
    assert "updated answer" in CRITERIA["knowledge-update"]
    assert "rubric" in CRITERIA["preference"]
    assert "unanswerable" in CRITERIA["abstention"]
    assert "subset of the information" in CRITERIA["generic"]
    assert set(VARIANT_FOR_TYPE) == {
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "temporal-reasoning",
        "knowledge-update",
        "multi-session",
    }
    # a response or gold answer that names another question type changes nothing
    case = answer_case(0, hypothesis="question_type: temporal-reasoning _abs")
    assert case.criteria_variant == "generic"


# ---------------------------------------------------------------- from-answers


def _bundle(sample_bundle_dir: Path, blank: int = 0, missing: int = 0) -> Bundle:
    """The sample bundle with answers on run RUN: its first ``blank`` queries' answers
    blank and the next ``missing`` queries without a run line."""
    b = read_bundle(sample_bundle_dir)
    entries = []
    for i, e in enumerate(b.runs[RUN]):
        if blank <= i < blank + missing:
            continue
        answer = "" if i < blank else f"answer {i} of {e.query_id}"
        entries.append(RunEntry(query_id=e.query_id, ranking=e.ranking, answer=answer))
    b.runs[RUN] = entries
    return b


def test_queries_without_an_answer_are_counted_not_made_cases(sample_bundle_dir: Path) -> None:
    b = _bundle(sample_bundle_dir, blank=2, missing=3)
    cases, report = answer_cases(b, RUN)
    n = len(b.queries)
    assert (report.queries, report.no_answer, report.no_gold, report.cases) == (n, 5, 0, n - 5)
    assert [c.query_index for c in cases] == list(range(5, n))
    first = cases[0]
    q = b.queries[5]
    assert first.case_id == answer_case_id(b.config.dataset, RUN, q.query_id)
    assert (first.question, first.answer, first.category) == (q.question, q.answer, q.category)
    assert first.hypothesis == f"answer 5 of {q.query_id}"
    assert (first.run, first.store) == (RUN, b.run_store(RUN))
    assert sum(report.question_types.values()) == report.cases
    with pytest.raises(TiapError, match="no run 'nope'"):
        answer_cases(b, "nope")
    with pytest.raises(TiapError, match="tiap answers extract"):
        answer_cases(read_bundle(sample_bundle_dir), RUN)  # the sample's runs carry none


def test_from_answers_is_idempotent_and_its_subset_deterministic(
    sample_bundle_dir: Path, tmp_path: Path
) -> None:
    b = _bundle(sample_bundle_dir)
    reports = []
    for path in (tmp_path / "a.sqlite", tmp_path / "a.sqlite", tmp_path / "b.sqlite"):
        with Workspace(path) as ws:
            reports.append(from_answers(b, ws, RUN, size=20, seed=7))
    first, again, other = reports
    assert (first.added, first.already_present, first.subset_status) == (37, 0, "created")
    assert (again.added, again.already_present, again.subset_status) == (0, 37, "unchanged")
    assert first.version is not None
    assert again.version is not None
    assert first.version.status == "new"
    assert again.version.status == "same"
    assert again.version.fingerprint == first.version.fingerprint
    assert first.sample is not None
    assert other.sample is not None
    assert first.sample.case_ids == other.sample.case_ids  # the same draw anywhere
    assert first.sample.overlap_ids == other.sample.overlap_ids
    with Workspace.open_readonly(tmp_path / "a.sqlite") as ws:
        assert ws.case_kinds() == {"answer": 37}
        assert ws.case_ids(subset="validation") == first.sample.case_ids
        params = ws.subset_params("validation")
        assert (params["kind"], params["case_kind"], params["size"]) == ("validation", "answer", 20)
        assert ws.current_version(f"answers:{RUN}") is not None
        strata = {stratum(c) for c in ws.cases(subset="validation")}
    # stratified by run and question type: every type of the sample is drawn
    assert strata == {f"{RUN} · {t}" for t in first.question_types}


def test_changed_answers_are_stale_unless_replaced(sample_bundle_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.sqlite"
    with Workspace(db) as ws:
        from_answers(_bundle(sample_bundle_dir), ws, RUN, size=10)
        changed = _bundle(sample_bundle_dir)
        changed.runs[RUN][0] = changed.runs[RUN][0].model_copy(update={"answer": "other"})
        with pytest.raises(StaleCasesError, match="holds answer cases of bundle version"):
            from_answers(changed, ws, RUN, size=10)
        report = from_answers(changed, ws, RUN, size=10, replace_stale=True)
        assert report.version is not None
        assert (report.version.retired, report.version.replaced) == (1, 1)
        assert ws.case(report.sample.case_ids[0]).kind == "answer"  # type: ignore[union-attr]
        case_id = answer_case_id("tiap-sample", RUN, changed.queries[0].query_id)
        assert ws.case(case_id).hypothesis == "other"


def test_a_second_run_redraws_the_subset_only_when_asked(
    sample_bundle_dir: Path, tmp_path: Path
) -> None:
    b = _bundle(sample_bundle_dir)
    two = "lexical-facts3"
    b.runs[two] = [e.model_copy(update={"answer": "I don't know"}) for e in b.runs[RUN]]
    with Workspace(tmp_path / "w.sqlite") as ws:
        from_answers(b, ws, RUN, size=10)
        with pytest.raises(TiapError, match=r"holds another draw.*--replace"):
            from_answers(b, ws, two, size=10)
        assert ws.case_kinds() == {"answer": 37}  # nothing was stored
        report = from_answers(b, ws, two, size=10, replace=True)
        assert report.subset_status == "replaced"
        assert {c.run for c in ws.cases(subset="validation")} == {RUN, two}


def test_a_workspace_of_contested_and_answer_cases_samples_one_kind(
    sample_bundle_dir: Path, tmp_path: Path
) -> None:
    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(read_bundle(sample_bundle_dir), ws)
        sample_subset(ws, name="validation", n=5, overlap=2)
        contested = ws.current_version("contested")
        with pytest.raises(TiapError, match="subset 'validation' exists and holds cases of kind"):
            from_answers(_bundle(sample_bundle_dir), ws, RUN, size=10)
        assert ws.case_kinds() == {"contested": ws.count_cases()}  # nothing was stored
        from_answers(_bundle(sample_bundle_dir), ws, RUN, subset="answers", size=10)
        # the contested credits' version is untouched by the answers' own
        assert ws.current_version("contested") == contested
        with pytest.raises(TiapError, match=r"several kinds.*--kind"):
            sample_subset(ws, name="val", n=5, overlap=2)
        result = sample_subset(ws, name="val", n=5, overlap=2, kind="answer")
        assert {ws.case(c).kind for c in result.case_ids} == {"answer"}
        assert result.params["case_kind"] == "answer"


def test_the_command_line(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    import shutil

    bundle, db = tmp_path / "bundle", tmp_path / "w.sqlite"
    shutil.copytree(sample_bundle_dir, bundle)
    args = ["cases", "from-answers", str(bundle), "--run", RUN, "--db", str(db)]
    for bad, message in (
        (["--size", "0"], "--size must be at least 1 (got 0)"),
        (["--overlap", "30", "--size", "20"], "--overlap (30) cannot exceed --size (20)"),
        (["--subset", " "], "the subset needs a name (--subset)"),
        ([], f"run '{RUN}' carries no answer"),  # the sample's runs carry none yet
    ):
        code, out, err = tiap_cli([*args, *bad])
        assert code == 2, (bad, out, err)
        assert message in err
        assert len(err.strip().splitlines()) == 1
        assert not db.exists()  # bad input creates no workspace
    tiap_cli.ok("answers", "extract", str(bundle), "--run", RUN)
    made = tiap_cli.ok(*args, "--size", "10")
    assert "37 cases of 37 queries" in made.out
    assert "subset 'validation' (created): 10 of 37 answer cases" in made.out
    again = tiap_cli.ok(*args, "--size", "10")
    assert "0 new cases" in again.out
    assert "(unchanged)" in again.out
    case_id = answer_case_id("tiap-sample", RUN, "garden-q01")
    shown = tiap_cli.ok("cases", "show", case_id, "--db", str(db)).out
    assert "kind answer" in shown
    assert "gold answer: Plot 14" in shown
    assert "run's answer: " in shown
    assert "criteria (generic): Label the response correct" in shown
