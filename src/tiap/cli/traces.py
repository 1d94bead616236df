"""`tiap traces` sub-commands: build trace bundles from benchmark files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.traces.build import BuildResult, Reporter
    from tiap.traces.dataset import DatasetTraces

app = typer.Typer(help="Build and inspect trace bundles.", no_args_is_help=True)
build_app = typer.Typer(
    help=(
        "Build a trace bundle (sources, queries, native stores with lineage, baseline runs "
        "and build_report.json) from a benchmark's published files."
    ),
    no_args_is_help=True,
)
app.add_typer(build_app, name="build")

OUT = typer.Option(..., "--out", "-o", help="Bundle directory to write.")
STORE = typer.Option(
    None,
    "--store",
    "-s",
    help="Store to build (repeatable): raw, observations, summaries, parser-D<N>. "
    "Default: every store the dataset supports.",
)
RETRIEVER = typer.Option(
    None,
    "--retriever",
    "-r",
    help="Retriever (repeatable): bm25, dense (extra 'dense'), or none. Default: bm25.",
)
K = typer.Option(60, "--k", "-k", min=1, help="Rankings keep the top k memories.")
SCOPE = typer.Option(
    "conversation",
    "--scope",
    help="Candidate pool of a query: its own conversation/haystack ('conversation') "
    "or the whole store ('global').",
)
RUN_FORMAT = typer.Option("jsonl", "--run-format", help="Write runs as jsonl or trec.")
FORCE = typer.Option(False, "--force", help="Replace an existing bundle in --out.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars or step summaries.")


def _reporter(quiet: bool) -> Reporter:
    from tiap.traces.build import Reporter

    if quiet:
        return Reporter()

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    err = Console(stderr=True)

    class RichReporter(Reporter):
        def message(self, text: str) -> None:
            typer.echo(text)

        @contextmanager
        def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
            with Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
                disable=not err.is_terminal,
            ) as progress:
                task = progress.add_task(description, total=total)
                yield lambda n: progress.advance(task, n)

    return RichReporter()


def _retrievers(values: list[str] | None) -> list[str]:
    chosen = list(values) if values else ["bm25"]
    if "none" in chosen:
        if len(chosen) > 1:
            raise TiapError("--retriever none cannot be combined with other retrievers")
        return []
    return chosen


def _parse_runs(values: list[str] | None) -> dict[str, Path]:
    runs: dict[str, Path] = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise TiapError(f"--run '{value}': expected NAME=PATH")
        if name in runs:
            raise TiapError(f"--run: name '{name}' given twice")
        if not Path(path).is_file():
            raise TiapError(f"--run {name}: {path}: file not found")
        runs[name] = Path(path)
    return runs


def _build(
    read: Callable[[], DatasetTraces],
    what: str,
    out: Path,
    *,
    stores: list[str] | None,
    retrievers: list[str] | None,
    k: int,
    scope: str,
    run_format: str,
    force: bool,
    quiet: bool,
    runs: dict[str, Path] | None = None,
) -> None:
    from tiap.traces.build import BuildOptions, build_bundle, prepare_out_dir, summary_lines

    if scope not in ("conversation", "global"):
        raise TiapError(f"unknown scope '{scope}' (use conversation or global)")
    if run_format not in ("jsonl", "trec"):
        raise TiapError(f"unknown run format '{run_format}' (use jsonl or trec)")
    if not force:
        prepare_out_dir(out, force=False)  # fail early, before the work
    reporter = _reporter(quiet)
    with reporter.step(f"reading {what}", None):
        ds = read()
    for line in summary_lines(ds):
        reporter.message(line)
    options = BuildOptions(
        stores=stores or None,
        retrievers=_retrievers(retrievers),
        k=k,
        scope=scope,  # type: ignore[arg-type]
        runs=runs or {},
    )
    result = build_bundle(ds, options, reporter)
    _write(result, out, run_format, force, reporter)


def _write(
    result: BuildResult, out: Path, run_format: str, force: bool, reporter: Reporter
) -> None:
    from tiap.traces.build import REPORT_FILE, write_build

    with reporter.step(f"writing {out}", None):
        write_build(result, out, run_format=run_format, force=force)
    b, r = result.bundle, result.report
    excluded = len(r.excluded_queries)
    typer.echo(
        f"wrote {out}: {len(b.queries):,} queries, {len(b.sources):,} sources, "
        f"{len(b.stores)} stores, {len(b.runs)} runs; "
        f"{excluded:,} queries excluded, {sum(r.issue_counts.values()):,} rule applications "
        f"counted in {out / REPORT_FILE} ({len(r.issues):,} listed: every data quirk, "
        "examples of routine rules)"
    )


@build_app.command("locomo")
def build_locomo(
    path: Path = typer.Argument(..., help="locomo10.json (or a file of the same shape)."),
    out: Path = OUT,
    store: list[str] | None = STORE,
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    keep_duplicates: bool = typer.Option(
        False, "--keep-duplicates", help="Keep exact repeats of a QA item (listed either way)."
    ),
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LoCoMo: turns as sources, QA items as queries; stores raw, observations,
    parser-D1/D5/D8 and summaries."""
    from tiap.traces.locomo import load_locomo

    _build(
        lambda: load_locomo(path, keep_duplicates=keep_duplicates),
        str(path),
        out,
        stores=store,
        retrievers=retriever,
        k=k,
        scope=scope,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@build_app.command("longmemeval")
def build_longmemeval(
    path: Path = typer.Argument(..., help="A LongMemEval file (oracle, S or M), streamed."),
    out: Path = OUT,
    granularity: str = typer.Option(
        "turn", "--granularity", "-g", help="Sources are turns ('turn') or sessions ('session')."
    ),
    evidence: str = typer.Option(
        "has-answer",
        "--evidence",
        "-e",
        help="Evidence: has-answer (flagged turns; questions with none are excluded), "
        "answer-sessions (answer_session_ids), or has-answer-or-sessions (flagged turns, "
        "else the answer sessions).",
    ),
    store: list[str] | None = STORE,
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LongMemEval: one haystack per question; stores raw and parser-D1/D5/D8."""
    from tiap.traces.longmemeval import load_longmemeval

    _build(
        lambda: load_longmemeval(path, granularity=granularity, evidence=evidence),
        str(path),
        out,
        stores=store,
        retrievers=retriever,
        k=k,
        scope=scope,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@build_app.command("lmeb")
def build_lmeb(
    directory: Path = typer.Argument(
        ..., help="Directory with queries.jsonl, qrels.tsv, corpus.jsonl (here or one level up)."
    ),
    out: Path = OUT,
    run: list[str] | None = typer.Option(
        None, "--run", help="Attach a run file (TREC or JSONL) as NAME=PATH (repeatable)."
    ),
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LMEB/BEIR retrieval data: corpus items as raw memories, qrels > 0 as evidence."""
    from tiap.traces.lmeb import load_lmeb

    _build(
        lambda: load_lmeb(directory),
        str(directory),
        out,
        stores=None,
        retrievers=retriever,
        k=k,
        scope=scope,
        run_format=run_format,
        force=force,
        quiet=quiet,
        runs=_parse_runs(run),
    )
