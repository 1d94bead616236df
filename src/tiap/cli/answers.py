"""`tiap answers`: answers for a run's queries, so rescore can score answer quality."""

from __future__ import annotations

from pathlib import Path

import typer

from tiap.cli.output import echo

app = typer.Typer(
    help="Answers for a run's queries: extractive answers from each ranking's top memories "
    "(no LLM), or a reader model's (--reader), written into the bundle's run file for "
    "'tiap rescore' to score.",
    no_args_is_help=True,
)

_READER = "Reader (--reader)"


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
    reader: str | None = typer.Option(
        None,
        "--reader",
        help="A reader model (a litellm model string, e.g. openai/gpt-4o-mini) writes the "
        "answers from LoCoMo's QA prompt instead of the extractive method.",
        rich_help_panel=_READER,
    ),
    db: Path | None = typer.Option(
        None,
        "--db",
        help="The workspace (SQLite file; created if absent) that stores every reader call: "
        "cache, resume and budget. Needed with --reader.",
        rich_help_panel=_READER,
    ),
    api_base: str | None = typer.Option(
        None, "--api-base", help="The reader's API base URL.", rich_help_panel=_READER
    ),
    api_key_env: str | None = typer.Option(
        None,
        "--api-key-env",
        help="The environment variable holding the reader's API key (read, never stored).",
        rich_help_panel=_READER,
    ),
    route: str = typer.Option(
        "auto", "--route", help="auto, openai or litellm (as a judge's).", rich_help_panel=_READER
    ),
    concurrency: int = typer.Option(
        4, "--concurrency", help="Reader calls at a time.", rich_help_panel=_READER
    ),
    max_tokens: int = typer.Option(
        100, "--max-tokens", help="Longest answer, in tokens.", rich_help_panel=_READER
    ),
    temperature: float = typer.Option(
        0.0, "--temperature", help="Sampling temperature (0 to 2).", rich_help_panel=_READER
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Sampling seed sent with each request.", rich_help_panel=_READER
    ),
    timeout: float = typer.Option(
        60.0, "--timeout", help="Seconds one attempt may take.", rich_help_panel=_READER
    ),
    input_cost_per_mtok: float | None = typer.Option(
        None,
        "--input-cost-per-mtok",
        help="Price of prompt tokens, US dollars per million (else litellm's table).",
        rich_help_panel=_READER,
    ),
    output_cost_per_mtok: float | None = typer.Option(
        None,
        "--output-cost-per-mtok",
        help="Price of answer tokens, US dollars per million (else litellm's table).",
        rich_help_panel=_READER,
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        help="Budget in US dollars, shared with overlapping reader runs of the model; stops "
        "before exceeding it (exit 3; the same command goes on).",
        rich_help_panel=_READER,
    ),
    partial: bool = typer.Option(
        False,
        "--partial",
        help="Write the answers got when some are missing (by default nothing is written "
        "until every query has one).",
        rich_help_panel=_READER,
    ),
    no_progress: bool = typer.Option(
        False, "--no-progress", "--quiet", "-q", help="No progress display."
    ),
) -> None:
    """Answers for a run's queries, from each ranking's top memories.

    Extractive by default: for each query, the sentence of the run's first TOP memories
    that shares the most question tokens (LoCoMo-normalised, stemmed, stopwords left
    out); ties go to the better-ranked memory, then the earlier sentence; deterministic,
    no model called. With --reader MODEL, a reader model answers LoCoMo's QA prompt
    over those memories, each call stored in the workspace (--db): cached, resumable and
    budgeted (--max-cost) like a judge run; the answers are written only once every
    query has one (or with --partial). Written into runs/RUN.jsonl as each line's
    "answer"."""
    from tiap.limits import check_int
    from tiap.traces.extractive import MAX_TOP

    check_int("--top", top, minimum=1, maximum=MAX_TOP)
    given = dict(locals())
    if reader is not None:
        from tiap.cli.answers_reader import ReaderOptions, read

        names = [n for n in ReaderOptions.__dataclass_fields__ if n != "quiet"]
        opts = ReaderOptions(**{n: given[n] for n in names}, quiet=no_progress)
        read(bundle, run, top, replace, opts)
        return
    from tiap.cli.answers_reader import refuse_reader_options

    refuse_reader_options(given)
    _extractive(bundle, run, top, replace)


def _extractive(bundle: Path, run: str, top: int, replace: bool) -> None:
    from tiap.text import inert
    from tiap.traces.bundle import read_bundle
    from tiap.traces.extractive import extract_answers, run_file, write_answers

    loaded = read_bundle(bundle)
    extracted = extract_answers(loaded, run, top=top, replace=replace)
    run_file(loaded, run)  # a TREC run is refused before anything is written
    path = write_answers(loaded, extracted)
    empty = f" ({extracted.n_empty:,} empty: no ranked memory)" if extracted.n_empty else ""
    echo(
        f"wrote {extracted.n_answers:,} extractive answers{empty} to {inert(str(path))} "
        f"(top {extracted.top} memories per query)"
    )
