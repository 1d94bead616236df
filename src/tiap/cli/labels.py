"""`tiap labels` sub-commands: export and import labels in the --labels format."""

from __future__ import annotations

from pathlib import Path

import typer

from tiap.cli.output import echo
from tiap.errors import TiapError

app = typer.Typer(
    help="Labels out of a workspace and into one, in the format 'agreement report "
    "--labels' reads (CSV, TSV or JSON Lines).",
    no_args_is_help=True,
)

DB_HELP = "Workspace file (SQLite)."


def _kind(value: str | None, option: str = "--rater-kind") -> str | None:
    from tiap.cases.vocab import RATER_KINDS

    if value is None or value in RATER_KINDS:
        return value
    raise TiapError(f"{option}: give one of {', '.join(RATER_KINDS)} (not '{value}')")


@app.command("export")
def export(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    out: Path = typer.Option(
        ..., "--out", help="The file to write: .csv, .tsv or .jsonl (the format)."
    ),
    subset: str | None = typer.Option(
        None, "--subset", help="Only the labels on this subset's cases (default: every case)."
    ),
    rater_kind: str | None = typer.Option(
        None, "--rater-kind", help="Only judges' (judge) or only people's (human) labels."
    ),
    latest: bool = typer.Option(
        True,
        "--latest/--all",
        help="Each rater's current label per case (what a report reads), or every label "
        "row ever stored (the history, for an archive or 'tiap labels import').",
    ),
) -> None:
    """Write a workspace's labels to a file: one row per label with its case, rater and
    kind, the case's dataset, run and category, and the label's rubric id and hash,
    panel, model, note and time. 'tiap agreement report --labels FILE' on a --latest
    export gives the figures of the report on the workspace."""
    from tiap.agreement.label_export import export_labels
    from tiap.cases.workspace import Workspace
    from tiap.io import check_apart

    kind = _kind(rater_kind)
    check_apart(out, [("workspace", db)])  # before the workspace is opened
    with Workspace.open_readonly(db) as ws:
        summary = export_labels(ws, out, subset=subset, rater_kind=kind, latest=latest)  # type: ignore[arg-type]
    what = "current labels" if latest else "label rows (every row)"
    raters = ", ".join(f"{r} {n}" for r, n in summary.raters.items()) or "none"
    echo(
        f"wrote {summary.rows} {what} on {summary.cases} cases to {summary.path}; raters: {raters}"
    )
    if summary.cases_without_labels:
        echo(f"{summary.cases_without_labels} cases in scope have no label and no row in the file")


@app.command("import")
def import_(
    path: Path = typer.Argument(..., metavar="FILE", help="A labels file: .csv, .tsv or .jsonl."),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    rater_kind: str = typer.Option(
        ..., "--rater-kind", help="Whose labels the file holds: judge or human."
    ),
    rubric: str | None = typer.Option(
        None,
        "--rubric",
        help="Rubric name or TOML file (default: the rubric the rows name, else contested-credit).",
    ),
) -> None:
    """Add the labels of a file (collected elsewhere) to a workspace, as labels of one
    kind of rater. Unknown cases, labels outside the rubric and a rater name the
    workspace uses for the other kind are errors naming the line. Importing the same
    file again adds nothing; a changed label is a new row (the latest wins)."""
    from tiap.agreement.label_import import import_labels
    from tiap.cases.workspace import Workspace
    from tiap.rubric import load_rubric

    kind = _kind(rater_kind)
    rub = load_rubric(rubric) if rubric is not None else None
    with Workspace(db, create=False) as ws:
        summary = import_labels(ws, path, rater_kind=kind, rubric=rub)  # type: ignore[arg-type]
    raters = ", ".join(f"{r} {n}" for r, n in summary.raters.items()) or "none"
    echo(
        f"imported {summary.added} {summary.rater_kind} labels from {summary.path} into {db} "
        f"(rubric {summary.rubric_id}; {summary.unchanged} of {summary.rows} rows already "
        f"there or unchanged); raters: {raters}"
    )
