"""A run's generated answers as cases of kind ``answer`` (``tiap cases from-answers``):
answer correctness judged by a panel, as LongMemEval's evaluation judges it with an
LLM (Wu et al., ICLR 2025, its ``evaluate_qa.py``).

For every query of the bundle (in ``queries.jsonl`` order), the run's line for it
(``runs/RUN.jsonl``) gives the answer the system generated (``answer``: imported,
or written by ``tiap answers extract``). A query whose run line carries a non-blank
answer and whose gold answer is not blank is one case: the question, the gold
answer, the run's answer (``hypothesis``), the question type (``category``), the
dataset, run and query. The others are counted, never dropped silently: no run line
or no answer (``no_answer``), a blank gold answer (``no_gold``).

A case's id is ``a-`` and 16 hex digits of a sha256 of (dataset, run, query id), so
the same answer is one case however often it is added. The cases of one run are a
version of scope ``answers:RUN`` (:mod:`tiap.cases.versions`), known by its
fingerprint (:mod:`tiap.cases.fingerprint`; the definition hashed with the cases is
the dataset and the run); a run that now answers a query differently gives stale
cases, an error naming both versions unless ``replace_stale``.

Then a validation subset is drawn from every live answer case of the workspace (all
runs added so far) by the rule of :mod:`tiap.cases.sample` (strata: run and question
type; evenly spaced within a stratum; the reviewer overlap drawn with the seed). A
subset of that name holding the same draw is left as it is; one that differs is
replaced only with ``replace`` (and, if its cases have labels, ``force``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.fingerprint import fingerprint
from tiap.cases.models import BundleVersion, Case, stable_case_id
from tiap.cases.sample import (
    DEFAULT_N,
    DEFAULT_SEED,
    SampleResult,
    check_replace,
    default_overlap,
    stratified_sample,
    validation_params,
)
from tiap.cases.store import now_iso
from tiap.cases.versions import VersionChange, answers_scope
from tiap.cases.vocab import ANSWER
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.limits import check_cases, check_seed
from tiap.traces.bundle import Bundle
from tiap.traces.models import Query

DEFAULT_SUBSET = "validation"
DEFAULT_SIZE = DEFAULT_N
EVENT = "cases.from_answers"
#: the question type of a query without a category
UNKNOWN_TYPE = "unknown"


def answer_case_id(dataset: str, run: str, query_id: str) -> str:
    """Stable id of an answer case: ``a-`` and 16 hex digits of a sha256."""
    return stable_case_id("a", dataset, run, query_id)


class AnswerImportReport(BaseModel):
    """Counts of one ``from-answers`` (also recorded as a ``cases.from_answers`` event)."""

    model_config = ConfigDict(extra="forbid")

    bundle: str
    dataset: str
    run: str
    store: str
    #: queries of the bundle
    queries: int
    #: queries the run gives no answer (no line, or a blank answer): no case
    no_answer: int
    #: queries with a blank gold answer: no case
    no_gold: int
    cases: int
    #: cases per question type, and per criteria variant the judge is given
    question_types: dict[str, int]
    variants: dict[str, int]
    added: int = 0
    already_present: int = 0
    subset: str = DEFAULT_SUBSET
    subset_status: str = "created"
    sample: SampleResult | None = None
    notes: list[str] = Field(default_factory=list)
    version: VersionChange | None = None


def _case(bundle: Bundle, run: str, store: str, index: int, q: Query, answer: str) -> Case:
    dataset = bundle.config.dataset
    question_type = q.category or UNKNOWN_TYPE
    return Case(
        case_id=answer_case_id(dataset, run, q.query_id),
        kind=ANSWER,
        dataset=dataset,
        run=run,
        store=store,
        query_id=q.query_id,
        query_index=index,
        question=q.question,
        answer=q.answer,
        category=q.category,
        conversation_id=q.conversation_id,
        evidence=[],
        memory_id="",
        memory_text="",
        memory_source_ids=[],
        rank_bucket=question_type,
        metadata={"abstention": q.abstention, "retriever": bundle.run_config(run).retriever},
        hypothesis=answer,
    )


def answer_cases(
    bundle: Bundle, run: str, *, subset: str = DEFAULT_SUBSET
) -> tuple[list[Case], AnswerImportReport]:
    """The answer cases of ``run`` (pure: nothing is stored), in query order, and the
    counts. A run the bundle does not have, or one that answers no query, is an error."""
    if run not in bundle.runs:
        known = ", ".join(sorted(bundle.runs)) or "none"
        raise TiapError(f"{bundle.root}: no run '{run}' in the bundle (runs: {known})")
    answers = {e.query_id: e.answer for e in bundle.runs[run]}
    store = bundle.run_store(run)
    cases: list[Case] = []
    no_answer = no_gold = 0
    for index, q in enumerate(bundle.queries):
        answer = answers.get(q.query_id)
        if answer is None or not answer.strip():
            no_answer += 1
        elif not q.answer.strip():
            no_gold += 1
        else:
            cases.append(_case(bundle, run, store, index, q, answer))
    if not cases:
        raise TiapError(
            f"{bundle.root}: run '{run}' carries no answer to a query with a gold answer "
            f"({no_answer} of {len(bundle.queries)} queries without an answer; write "
            f"answers with 'tiap answers extract {bundle.root} --run {run}', or import them)"
        )
    report = AnswerImportReport(
        bundle=str(bundle.root),
        dataset=bundle.config.dataset,
        run=run,
        store=store,
        queries=len(bundle.queries),
        no_answer=no_answer,
        no_gold=no_gold,
        cases=len(cases),
        question_types=dict(sorted(Counter(c.rank_bucket for c in cases).items())),
        variants=dict(sorted(Counter(str(c.criteria_variant) for c in cases).items())),
        subset=subset,
    )
    return cases, report


def answers_version(report: AnswerImportReport, cases: Sequence[Case]) -> BundleVersion:
    """The version of ``report.run``'s answers whose cases are ``cases``."""
    definition = {"dataset": report.dataset, "run": report.run}
    return BundleVersion(
        scope=answers_scope(report.run),
        fingerprint=fingerprint(ANSWER, definition, cases),
        kind=ANSWER,
        source=report.bundle,
        definition=definition,
        cases=len(cases),
        created_at=now_iso(),
    )


def check_options(size: int, overlap: int | None, seed: int, subset: str) -> int:
    """The draw's options (one-line errors naming them as the command line does); the
    overlap to draw (default: the paper's share of ``size``)."""
    check_cases("--size", size)
    check_seed("--seed", seed)
    if not subset.strip():
        raise TiapError("the subset needs a name (--subset)")
    if overlap is None:
        return default_overlap(size)
    check_cases("--overlap", overlap, minimum=0)
    if overlap > size:
        raise TiapError(f"--overlap ({overlap}) cannot exceed --size ({size})")
    return overlap


def _held(ws: Workspace, name: str) -> str:
    """What an existing subset that is not this draw holds, for the message."""
    if ws.subset_is_stale(name):
        return "a stale draw (its answers were replaced)"
    kinds = [k for k in ws.case_kinds(subset=name) if k != ANSWER]
    if kinds:
        return f"cases of kind {', '.join(kinds)}"
    return "another draw (the workspace's answer cases or the options changed)"


def _draw_subset(
    ws: Workspace,
    name: str,
    *,
    size: int,
    overlap: int,
    seed: int,
    replace: bool,
    force: bool,
) -> tuple[str, SampleResult]:
    """Draw the validation subset from every live answer case; store it unless the
    same draw is stored already. Returns ``unchanged`` or ``drawn``, and the draw."""
    pool = ws.cases(kind=ANSWER)
    result = stratified_sample(pool, name=name, n=size, overlap=overlap, seed=seed)
    params = validation_params(result, size, overlap, seed, None, ANSWER)
    result = result.model_copy(update={"params": params})
    if name in ws.subsets():
        same = (
            not ws.subset_is_stale(name)
            and ws.case_ids(subset=name) == result.case_ids
            and ws.overlap_ids(name) == result.overlap_ids
            and ws.subset_params(name) == params
        )
        if same:
            return "unchanged", result
        if not replace:
            raise TiapError(
                f"{ws.path}: subset '{name}' exists and holds {_held(ws, name)}: choose "
                "another --subset, or draw it again with --replace"
            )
        check_replace(ws, name, replace=True, force=force)
    ws.save_subset(name, result.case_ids, overlap=result.overlap_ids, params=params, replace=True)
    ws.record_event("cases.sample", {"name": name, **params})
    return "drawn", result


def store_answers(
    ws: Workspace,
    cases: list[Case],
    report: AnswerImportReport,
    *,
    size: int = DEFAULT_SIZE,
    overlap: int | None = None,
    seed: int = DEFAULT_SEED,
    replace: bool = False,
    force: bool = False,
    replace_stale: bool = False,
) -> AnswerImportReport:
    """Add the answer cases (:func:`answer_cases`) to ``ws`` as the run's version, then
    draw the validation subset ``report.subset`` (see the module doc)."""
    n_overlap = check_options(size, overlap, seed, report.subset)
    existed = report.subset in ws.subsets()
    with ws.transaction():
        change = ws.store_version(
            answers_version(report, cases),
            cases,
            exclusive=False,
            replace_stale=replace_stale,
            what=f"run {report.run} of {report.bundle}",
        )
        status, drawn = _draw_subset(
            ws,
            report.subset,
            size=size,
            overlap=n_overlap,
            seed=seed,
            replace=replace or replace_stale,
            force=force,
        )
        if status != "unchanged":
            status = "replaced" if existed else "created"
        report = report.model_copy(
            update={
                "added": change.added,
                "already_present": change.already_present,
                "subset_status": status,
                "sample": drawn,
                "notes": [*report.notes, *drawn.notes],
                "version": change,
            }
        )
        ws.record_event(EVENT, report.model_dump(mode="json"))
    return report


def from_answers(
    bundle: Bundle,
    ws: Workspace,
    run: str,
    *,
    subset: str = DEFAULT_SUBSET,
    size: int = DEFAULT_SIZE,
    overlap: int | None = None,
    seed: int = DEFAULT_SEED,
    replace: bool = False,
    force: bool = False,
    replace_stale: bool = False,
) -> AnswerImportReport:
    """The answer cases of ``run`` of ``bundle`` added to ``ws``, and the validation
    subset ``subset`` drawn (:func:`answer_cases`, then :func:`store_answers`)."""
    check_options(size, overlap, seed, subset)
    cases, report = answer_cases(bundle, run, subset=subset)
    return store_answers(
        ws,
        cases,
        report,
        size=size,
        overlap=overlap,
        seed=seed,
        replace=replace,
        force=force,
        replace_stale=replace_stale,
    )
