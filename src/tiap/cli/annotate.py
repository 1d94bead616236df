"""`tiap annotate` sub-commands: the terminal app and the Label Studio round-trip.

Textual and the Label Studio SDK are imported inside the commands only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from tiap.cli.output import echo, echo_json
from tiap.errors import TiapError

app = typer.Typer(
    help="Collect human labels: a terminal app for one rater, Label Studio for a team.",
    no_args_is_help=True,
)
labelstudio_app = typer.Typer(
    help=(
        "Round-trip cases and labels through a Label Studio server. The API token comes "
        "from LABEL_STUDIO_API_KEY (a legacy token or a personal access token)."
    ),
    no_args_is_help=True,
)
app.add_typer(labelstudio_app, name="labelstudio")

DB = typer.Option(..., "--db", help="The workspace (SQLite file).")
RUBRIC = typer.Option(
    "contested-credit", "--rubric", help="A built-in rubric name or a rubric .toml file."
)
SUBSET = typer.Option(None, "--subset", help="Only the cases of this subset, in its order.")
URL = typer.Option(
    ..., "--url", envvar="LABEL_STUDIO_URL", help="Label Studio base URL (or LABEL_STUDIO_URL)."
)
PROJECT = typer.Option(
    None,
    "--project",
    help="Project title (default: 'tiap <rubric>', plus ' <subset>' when a subset is given, "
    "plus ' overlap' with --overlap).",
)
LS_OVERLAP = typer.Option(
    False,
    "--overlap",
    help="Only the subset's reviewer-overlap cases, in a project of their own (needs --subset).",
)


@app.command("tui")
def tui(
    db: Path = DB,
    rater: str = typer.Option(..., "--rater", help="Your rater name (stored with each label)."),
    subset: str | None = SUBSET,
    overlap: bool = typer.Option(
        False, "--overlap", help="Only the subset's reviewer-overlap cases (needs --subset)."
    ),
    adjudicate: bool = typer.Option(
        False,
        "--adjudicate",
        help=(
            "Adjudicate: only cases where human raters disagree (the subset's overlap); "
            "labels are stored as rater 'adjudicated', your name in the note."
        ),
    ),
    rubric: str = RUBRIC,
) -> None:
    """Label cases one at a time in the terminal; every label is saved at once."""
    from tiap.annotate.session import AnnotationSession
    from tiap.cases.workspace import Workspace
    from tiap.rubric import load_rubric

    rub = load_rubric(rubric)
    with Workspace(db, create=False) as ws:
        session = AnnotationSession(
            ws, rub, rater, subset=subset, overlap_only=overlap, adjudicate=adjudicate
        )
        if not len(session):
            if adjudicate:
                echo("nothing to adjudicate: no case has disagreeing human labels")
                return
            raise TiapError(f"{db}: no cases to label (run 'tiap cases extract' first)")
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise TiapError("'tiap annotate tui' needs an interactive terminal")
        from tiap.annotate.tui.app import AnnotateApp

        AnnotateApp(session).run()
        p = session.progress()
        counts = ", ".join(f"{k} {v}" for k, v in p.counts.items())
        echo(f"{session.store_rater}: {p.done}/{p.total} cases labelled ({counts})")


def _rater_map(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, name = pair.partition("=")
        if not sep or not key.strip() or not name.strip():
            raise TiapError(f"--rater-map '{pair}': expected LABEL_STUDIO_USER=RATER")
        out[key.strip()] = name.strip()
    return out


@labelstudio_app.command("push")
def labelstudio_push(
    db: Path = DB,
    url: str = URL,
    project: str | None = PROJECT,
    subset: str | None = SUBSET,
    overlap: bool = LS_OVERLAP,
    rubric: str = RUBRIC,
    with_predictions: bool = typer.Option(
        False,
        "--with-predictions",
        help="Add the judges' labels as predictions (model_version = judge). Off: blind.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Create the project if needed and import the cases not yet in it as tasks."""
    from tiap.annotate.labelstudio import connect, push
    from tiap.cases.workspace import Workspace
    from tiap.rubric import load_rubric

    rub = load_rubric(rubric)
    with Workspace.open_readonly(db) as ws:  # pushing only reads the workspace
        client = connect(url)
        result = push(
            ws,
            client,
            rub,
            title=project,
            subset=subset,
            overlap=overlap,
            with_predictions=with_predictions,
        )
    if as_json:
        echo_json(json.dumps(result.model_dump(mode="json"), sort_keys=True))
    else:
        echo(result.summary())


@labelstudio_app.command("pull")
def labelstudio_pull(
    db: Path = DB,
    url: str = URL,
    project: str | None = PROJECT,
    subset: str | None = SUBSET,
    overlap: bool = LS_OVERLAP,
    rubric: str = RUBRIC,
    rater_map: list[str] = typer.Option(
        [],
        "--rater-map",
        help="USER=RATER: store this Label Studio user's labels (email, username or id) "
        "under RATER. Repeatable. Default rater name: the user's email.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Store the project's annotations as human labels (re-pulling adds nothing new)."""
    from tiap.annotate.labelstudio import connect, pull
    from tiap.cases.workspace import Workspace
    from tiap.rubric import load_rubric

    rub = load_rubric(rubric)
    mapping = _rater_map(rater_map)
    with Workspace(db, create=False) as ws:
        client = connect(url)
        result = pull(
            ws, client, rub, title=project, subset=subset, overlap=overlap, rater_map=mapping
        )
    if as_json:
        echo_json(json.dumps(result.model_dump(mode="json"), sort_keys=True))
    else:
        echo(result.summary())
