"""`tiap answers`: answers for a run's queries, so rescore can score answer quality."""

from __future__ import annotations

from pathlib import Path

import typer

from tiap.cli.output import echo

app = typer.Typer(
    help="Answers for a run's queries: extractive answers from each ranking's top memories "
    "(no LLM), written into the bundle's run file for 'tiap rescore' to score.",
    no_args_is_help=True,
)


@app.command("extract")
def extract(
    bundle: Path = typer.Argument(
        ..., help="The trace bundle directory (its run file is updated)."
    ),
    run: str = typer.Option(..., "--run", "-r", help="The run whose queries get answers."),
    top: int = typer.Option(
        5, "--top", help="Memories of each ranking the answer is drawn from (its first TOP)."
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Overwrite answers the run already carries (e.g. imported ones)."
    ),
) -> None:
    """Extractive answers for a run's queries, from each ranking's top memories.

    For each query, the sentence of the run's first TOP memories that shares the most
    question tokens (LoCoMo-normalised, stemmed, stopwords left out); ties go to the
    better-ranked memory, then the earlier sentence. Written into runs/RUN.jsonl as each
    line's "answer"; deterministic, no model called."""
    from tiap.limits import check_int
    from tiap.text import inert
    from tiap.traces.bundle import read_bundle
    from tiap.traces.extractive import MAX_TOP, extract_answers, run_file, write_answers

    check_int("--top", top, minimum=1, maximum=MAX_TOP)
    loaded = read_bundle(bundle)
    extracted = extract_answers(loaded, run, top=top, replace=replace)
    run_file(loaded, run)  # a TREC run is refused before anything is written
    path = write_answers(loaded, extracted)
    empty = f" ({extracted.n_empty:,} empty: no ranked memory)" if extracted.n_empty else ""
    echo(
        f"wrote {extracted.n_answers:,} extractive answers{empty} to {inert(str(path))} "
        f"(top {extracted.top} memories per query)"
    )
