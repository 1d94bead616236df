"""`tiap traces`: build bundles from benchmark files, import memory systems' exports, export."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.cli import traces_export, traces_import
from tiap.cli.progress_display import progress_reporter
from tiap.cli.traces_common import (
    EVIDENCE,
    FORCE,
    GRANULARITY,
    KEEP_DUPLICATES,
    MAX_CHARS,
    OUT,
    QUIET,
    RETRIEVER,
    RUN_FORMAT,
    SCALE,
    SCOPE,
    K,
    check_choices,
    parse_pairs,
    retrievers,
    store_option,
    write_result,
)
from tiap.traces.dataset_registry import DATASETS

if TYPE_CHECKING:
    from tiap.traces.adapter_output import DatasetTraces

app = typer.Typer(
    help="Trace bundles: build them from benchmark files, import a memory system's exports "
    "as one, or export one as an LMEB/BEIR task directory.",
    no_args_is_help=True,
)
build_app = typer.Typer(
    help=(
        "Build a trace bundle (sources, queries, native stores with lineage, baseline runs "
        "and build_report.json) from a benchmark's published files."
    ),
    no_args_is_help=True,
)
app.add_typer(build_app, name="build")
app.add_typer(traces_import.app, name="import")
app.add_typer(traces_export.app, name="export")


def _build(
    read: Callable[[], DatasetTraces],
    what: str,
    out: Path,
    *,
    stores: list[str] | None,
    retriever: list[str] | None,
    k: int,
    scope: str,
    run_format: str,
    force: bool,
    quiet: bool,
    runs: dict[str, str] | None = None,
) -> None:
    from tiap.io import check_apart
    from tiap.traces.build import BuildOptions, build_bundle, prepare_out_dir, summary_lines

    check_choices(scope, run_format, k)
    pairs = runs or {}
    check_apart(out, [("input", what), *((f"run {n}", p) for n, p in pairs.items())])
    if not force:
        prepare_out_dir(out, force=False)  # fail early, before the work
    options = BuildOptions(
        stores=stores or None,
        retrievers=retrievers(retriever),
        k=k,
        scope=scope,  # type: ignore[arg-type]
        runs={n: Path(p) for n, p in pairs.items()},
    )
    with progress_reporter(quiet) as rep:
        with rep.step(f"reading {what}", None):
            ds = read()
        for line in summary_lines(ds):
            rep.message(line)
        result = build_bundle(ds, options, rep)
        write_result(result, out, run_format, force, rep)


@build_app.command("locomo")
def build_locomo(
    path: Path = typer.Argument(..., help="locomo10.json (or a file of the same shape)."),
    out: Path = OUT,
    store: list[str] | None = store_option("locomo"),
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    keep_duplicates: bool = KEEP_DUPLICATES,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LoCoMo: turns as sources, QA items as queries; stores raw, observations,
    parser-D1/D5/D8 and summaries."""
    _build(
        lambda: DATASETS["locomo"].load(path, keep_duplicates=keep_duplicates),
        str(path),
        out,
        stores=store,
        retriever=retriever,
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
    granularity: str = GRANULARITY,
    evidence: str = EVIDENCE,
    store: list[str] | None = store_option("longmemeval"),
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LongMemEval: one haystack per question; stores raw and parser-D1/D5/D8."""
    _build(
        lambda: DATASETS["longmemeval"].load(path, granularity=granularity, evidence=evidence),
        str(path),
        out,
        stores=store,
        retriever=retriever,
        k=k,
        scope=scope,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@build_app.command("beam")
def build_beam(
    directory: Path = typer.Argument(
        ..., help="A BEAM scale directory: N/chat.json and N/probing_questions.json per chat."
    ),
    out: Path = OUT,
    scale: str | None = SCALE,
    max_chars: int = MAX_CHARS,
    store: list[str] | None = store_option("beam"),
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """BEAM: every message a source, probing questions as queries (ranked within their
    conversation); stores raw and parser-D1/D5/D8."""
    _build(
        lambda: DATASETS["beam"].load(directory, scale=scale, max_chars=max_chars),
        str(directory),
        out,
        stores=store,
        retriever=retriever,
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
    tree_root: Path | None = typer.Option(
        None,
        "--tree-root",
        help="LMEB's tree root: DIRECTORY's path under it, MEMORY_TYPE/DATASET or "
        "MEMORY_TYPE/DATASET/TASK, sets the dataset and memory_type in bundle.toml.",
    ),
    retriever: list[str] | None = RETRIEVER,
    k: int = K,
    scope: str = SCOPE,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """LMEB/BEIR retrieval data: corpus items as raw memories, qrels > 0 as evidence;
    store raw (the only one: there is no lineage to derive from)."""
    _build(
        lambda: DATASETS["lmeb"].load(directory, tree_root=tree_root),
        str(directory),
        out,
        stores=None,
        retriever=retriever,
        k=k,
        scope=scope,
        run_format=run_format,
        force=force,
        quiet=quiet,
        runs=parse_pairs("--run", run),
    )
