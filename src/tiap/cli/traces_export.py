"""`tiap traces export`: a trace bundle in another tool's format."""

from __future__ import annotations

from pathlib import Path

import typer

from tiap.cli.output import echo

app = typer.Typer(
    help="Write a trace bundle in another tool's format (LMEB/BEIR task directories).",
    no_args_is_help=True,
)


@app.command("lmeb")
def export_lmeb(
    bundle: Path = typer.Argument(..., help="The bundle directory to export."),
    directory: Path = typer.Argument(..., help="The task directory to write."),
    by_category: bool = typer.Option(
        False,
        "--by-category",
        help="Also write one subset folder per category (queries.jsonl + qrels.tsv), "
        "LMEB's layout.",
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing export in DIR."),
) -> None:
    """Sources as corpus.jsonl, queries as queries.jsonl, evidence as qrels.tsv (grade 1;
    qrels/test.tsv with a header for BEIR), conversations as candidates.jsonl scenes."""
    from tiap.traces import read_bundle
    from tiap.traces.export import export_lmeb as write

    summary = write(read_bundle(bundle), directory, by_category=by_category, force=force)
    subsets = f", {len(summary.subsets)} category subsets" if summary.subsets else ""
    scenes = f"{summary.scenes:,} candidate scenes" if summary.scenes else "no candidates.jsonl"
    echo(
        f"wrote {directory}: {summary.corpus:,} corpus items, {summary.queries:,} queries, "
        f"{summary.qrels:,} qrels, {scenes}{subsets}"
    )
    if summary.candidates_note:
        echo(f"note: {summary.candidates_note}")
    if summary.quoted_ids:
        echo(
            f"note: {summary.quoted_ids} ids begin like a spreadsheet formula and are written "
            "with a leading ' in the qrels files (tiap reads them back as they are; other "
            "tools see the quote)"
        )
