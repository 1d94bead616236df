"""`tiap cases from-answers`: a run's generated answers as cases of kind answer, with
a validation subset (registered on the `tiap cases` app by :mod:`tiap.cli.root`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.cli import cases_display as display
from tiap.cli.cases import DB_HELP, REPLACE_STALE_HELP
from tiap.cli.output import echo

if TYPE_CHECKING:
    from tiap.cases.from_answers import AnswerImportReport


def _print_report(report: AnswerImportReport, db: Path) -> None:
    echo(
        f"answers of run {report.run} (store {report.store}) in {report.dataset}: "
        f"{report.cases} cases of {report.queries} queries"
    )
    if report.no_answer:
        echo(
            f"{report.no_answer} queries without an answer in the run (no line, or a blank "
            "answer): no case"
        )
    if report.no_gold:
        echo(f"{report.no_gold} queries without a gold answer: no case")
    rows = [[t, str(n)] for t, n in report.question_types.items()]
    echo(display.table(["question type", "cases"], rows, right={1}))
    variants = ", ".join(f"{v}: {n}" for v, n in report.variants.items())
    echo(f"criteria the judges are given: {variants}")
    echo(f"{report.added} new cases in {db} ({report.already_present} already there)")
    if report.version is not None:
        display.print_version(report.version)
    for note in report.notes:
        echo(f"note: {note}")
    s = report.sample
    if s is not None:
        echo(
            f"subset '{report.subset}' ({report.subset_status}): {len(s.case_ids)} of "
            f"{s.pool_size} answer cases (every run's), overlap {len(s.overlap_ids)}"
        )


def from_answers(
    bundle: Path = typer.Argument(..., help="Trace bundle directory."),
    run: str = typer.Option(
        ..., "--run", "-r", help="The run whose answers (runs/RUN.jsonl 'answer') are judged."
    ),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    subset: str = typer.Option(
        "validation",
        "--subset",
        help="Name of the validation subset drawn from every answer case of the workspace.",
    ),
    size: int = typer.Option(115, "--size", help="Cases in the validation subset."),
    overlap: int | None = typer.Option(
        None, "--overlap", help="Cases a second reviewer also labels [default: 36/115 of --size]."
    ),
    seed: int = typer.Option(1337, "--seed", help="Seed of the overlap draw."),
    replace: bool = typer.Option(
        False, "--replace", help="Draw a subset of that name again when it holds another draw."
    ),
    force: bool = typer.Option(
        False, "--force", help="With --replace: replace it even if its cases have labels."
    ),
    replace_stale: bool = typer.Option(False, "--replace-stale", help=REPLACE_STALE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """A run's generated answers as cases of kind answer (question, gold answer, the
    run's answer, question type), for judging their correctness with the
    answer-correctness rubric; queries without an answer are counted. Adding the same
    answers again changes nothing. Draws a validation subset from every answer case of
    the workspace (stratified by run and question type)."""
    from tiap.cases.from_answers import answer_cases, check_options, store_answers
    from tiap.cases.workspace import Workspace
    from tiap.traces.bundle import read_bundle

    check_options(size, overlap, seed, subset)
    b = read_bundle(bundle)
    for warning in b.warnings:
        echo(f"tiap: warning: {warning}", err=True)
    # read and checked before the workspace is opened: bad input creates none
    cases, counted = answer_cases(b, run, subset=subset)
    with Workspace(db) as ws:
        report = store_answers(
            ws,
            cases,
            counted,
            size=size,
            overlap=overlap,
            seed=seed,
            replace=replace,
            force=force,
            replace_stale=replace_stale,
        )
    if as_json:
        display.json_out(report.model_dump(mode="json"))
        return
    _print_report(report, db)
