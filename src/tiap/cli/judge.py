"""`tiap judge` sub-commands: run a panel over cases, list panels and provider batches."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

import typer

from tiap.cli import judge_display as display
from tiap.cli.judge_display import MISSING_HINT
from tiap.cli.output import echo, echo_json
from tiap.errors import Interrupted, TiapError

#: What Ctrl-C during ``judge run`` keeps, and how to go on.
RESUME_HINT = (
    "every answered call and its label are stored; run the same command again to go on "
    "(answered calls are not repeated)"
)
#: ... and with ``--batch``: what was submitted keeps running at the provider.
BATCH_HINT = "; submitted provider batches keep running: the same command collects them"
#: Exit status when work is left that a later run can do: the budget ran out, or
#: provider batches are still running.
EXIT_INCOMPLETE = 3
#: ``--rubric`` and ``--poll-interval`` by default.
DEFAULT_RUBRIC = "contested-credit"
DEFAULT_POLL_S = 30.0

app = typer.Typer(help="Judge cases with a panel of LLM judges (litellm).", no_args_is_help=True)


@dataclass(frozen=True)
class RunOptions:
    """The options of a ``tiap judge run`` that decide what it does (not how it
    prints): what :func:`continue_command` repeats."""

    db: Path
    panel: str
    subset: str | None = None
    rubric: str = DEFAULT_RUBRIC
    max_cost: float | None = None
    force: bool = False
    retry_failed: bool = False
    batch: bool = False
    no_wait: bool = False
    poll_interval: float = DEFAULT_POLL_S
    lease: float | None = None
    recall_missing: bool = False


def continue_command(opts: RunOptions) -> str:
    """The command that continues the run ``opts`` describe (e.g. collects its
    provider batches): the same command, with every option that decides what it
    does (the budget, ``--force``...), shell-quoted."""
    args = ["tiap", "judge", "run", "--db", str(opts.db), "--panel", opts.panel]
    if opts.subset is not None:
        args += ["--subset", opts.subset]
    if opts.rubric != DEFAULT_RUBRIC:
        args += ["--rubric", opts.rubric]
    if opts.batch:
        args.append("--batch")
    if opts.no_wait:
        args.append("--no-wait")
    if opts.poll_interval != DEFAULT_POLL_S:
        args += ["--poll-interval", repr(opts.poll_interval)]
    if opts.max_cost is not None:
        args += ["--max-cost", repr(opts.max_cost)]
    if opts.force:
        args.append("--force")
    if opts.retry_failed:
        args.append("--retry-failed")
    if opts.lease is not None:
        args += ["--lease", repr(opts.lease)]
    if opts.recall_missing:
        args.append("--recall-missing")
    return shlex.join(args)


@app.command("run")
def run(
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    panel: str = typer.Option(..., "--panel", help="Built-in panel name or a panel TOML file."),
    subset: str | None = typer.Option(None, "--subset", help="Judge only this subset."),
    rubric: str = typer.Option(DEFAULT_RUBRIC, "--rubric", help="Rubric name or TOML file."),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        help="Budget in US dollars for this run; stops before exceeding it.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print calls, cache hits and estimated cost; call nothing."
    ),
    force: bool = typer.Option(
        False, "--force", help="Judge beyond the validation subset without a passed scale gate."
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="Call again where the last judgment failed in transport."
    ),
    batch: bool = typer.Option(
        False,
        "--batch",
        help="Send each judge's requests through its provider's batch API where it has one "
        "(OpenAI protocol); other judges are called directly. Resumable.",
    ),
    no_wait: bool = typer.Option(
        False,
        "--no-wait",
        help="With --batch: submit (and collect what is finished), then exit 3 without "
        "waiting; the same command collects the rest.",
    ),
    recall_missing: bool = typer.Option(
        False,
        "--recall-missing",
        help="With --batch: call directly the lines of finished batches that the provider "
        "counted completed but whose results are missing (it may have charged for them).",
    ),
    poll_interval: float = typer.Option(
        DEFAULT_POLL_S,
        "--poll-interval",
        help="With --batch: seconds between batch polls (0.01 to 86,400).",
    ),
    lease: float | None = typer.Option(
        None,
        "--lease",
        help="Seconds a claim on a pair lasts unless renewed (120 by default): how long a "
        "run that crashed on another host keeps its pairs from others. At least the "
        "panel's timeout_s plus 1.",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    no_progress: bool = typer.Option(
        False,
        "--no-progress",
        "--quiet",
        "-q",
        help="No progress (bars in a terminal, else a plain line every few seconds).",
    ),
) -> None:
    """Judge the cases (or a subset) with every judge of a panel; resumable, and safe
    to run in several processes at once (they split the work)."""
    from tiap.cases import Workspace
    from tiap.judge import dry_run as make_dry_run
    from tiap.judge import load_panel, plan_run
    from tiap.judge.batch_run import BatchOptions
    from tiap.judge.claims import lease_for
    from tiap.judge.reporting import run_with_progress
    from tiap.limits import check_cost, check_float
    from tiap.rubric import load_rubric

    if max_cost is not None:
        check_cost("--max-cost", max_cost)
    check_float("--poll-interval", poll_interval, minimum=0.01, maximum=86_400.0)
    if lease is not None:
        check_float("--lease", lease, minimum=0.1, maximum=86_400.0)
    if no_wait and not batch:
        raise TiapError("--no-wait goes with --batch")
    if recall_missing and not batch:
        raise TiapError("--recall-missing goes with --batch")
    options = (
        BatchOptions(wait=not no_wait, poll_s=poll_interval, recall_missing=recall_missing)
        if batch
        else None
    )
    the_panel = load_panel(panel)
    if not dry_run:  # a dry run only prices: it calls no judge
        the_panel.require_extras()
    lease_s = lease_for(the_panel, lease)  # refused before anything is planned or recorded
    # what collects the run's provider batches: this run again (through --batch)
    come_back = continue_command(
        RunOptions(
            db=db,
            panel=panel,
            subset=subset,
            rubric=rubric,
            max_cost=max_cost,
            force=force,
            retry_failed=retry_failed,
            batch=True,
            no_wait=no_wait,
            poll_interval=poll_interval,
            lease=lease,
            recall_missing=recall_missing,
        )
    )
    the_rubric = load_rubric(rubric)
    # a dry run only reads: the workspace may be read-only
    with Workspace.open_readonly(db) if dry_run else Workspace(db, create=False) as ws:
        plan = plan_run(
            ws,
            the_panel,
            the_rubric,
            subset=subset,
            retry_failed=retry_failed,
            force=force,
            enforce_gate=not dry_run,
        )
        if dry_run:
            report = make_dry_run(plan)
            if as_json:
                data = {**report.model_dump(mode="json"), "gate": display.gate_json(plan.gate)}
                echo_json(json.dumps(data, indent=2))
            else:
                display.print_dry_run(report)
                echo(display.gate_line(plan.gate))
            return
        if plan.gate_note:
            echo(f"tiap: warning: {plan.gate_note}", err=True)
        from tiap.cli.progress_display import progress_reporter, route_announcer

        try:
            with progress_reporter(no_progress) as reporter:
                summary = run_with_progress(
                    ws,
                    plan,
                    max_cost=max_cost,
                    reporter=reporter,
                    batch=options,
                    lease_s=lease_s,
                    on_route_load=route_announcer(no_progress),
                )
        except KeyboardInterrupt:
            raise Interrupted(RESUME_HINT + (BATCH_HINT if batch else "")) from None
    if as_json:
        echo_json(summary.model_dump_json(indent=2))
    else:
        display.print_summary(summary, come_back)
    if summary.errors:
        raise TiapError("judges stopped: " + "; ".join(summary.errors))
    if summary.incomplete:
        if summary.waiting:
            echo(f"tiap: waiting for provider batches; next: {come_back}", err=True)
        elif summary.missing_in_batches:
            echo(f"tiap: work is held by {MISSING_HINT}", err=True)
        else:
            echo("tiap: stopped by the budget; work is left", err=True)
        raise typer.Exit(EXIT_INCOMPLETE)
    if summary.nothing_to_claim:
        echo("tiap: nothing left to claim: another run is judging the rest", err=True)


def _abandon(db: Path, ref: str, as_json: bool) -> None:
    from tiap.cases import Workspace
    from tiap.judge.batch_admin import abandon_batch

    with Workspace(db, create=False) as ws:
        done = abandon_batch(ws, ref)
    event = done.event
    if as_json:
        echo_json(event.model_dump_json(indent=2))
        return
    echo(
        f"batch {event.submission} ({event.batch_id or 'never created'}, judge {event.judge}) "
        f"abandoned: {event.pairs} judgments are free again (the next run judges them); "
        f"{display.money(event.spent_usd)} counted as spent for lines the provider may have charged"
    )
    if event.may_still_run:
        echo(
            f"tiap: warning: the provider may still run batch {event.batch_id or event.submission}"
            " (tiap does not cancel it): cancel it there",
            err=True,
        )


@app.command("batches")
def batches(
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the batches as JSON on stdout."),
    abandon: str | None = typer.Option(
        None,
        "--abandon",
        metavar="ID",
        help="Give up an open batch (its id, or the provider's batch id): its pairs are "
        "free again; recorded.",
    ),
) -> None:
    """List the provider batches submitted from this workspace (read-only): their
    status and counts. 'stored' lines were stored like direct calls; lines 'again'
    were called again directly (expired, cancelled, failed or malformed); a batch's
    note says what was wrong with its output. --abandon gives one up."""
    from tiap.cases import Workspace
    from tiap.judge.batch_run import batch_report

    if abandon is not None:
        _abandon(db, abandon, as_json)
        return
    with Workspace.open_readonly(db) as ws:
        reports = [batch_report(sub) for sub in ws.submissions()]
    if as_json:
        echo_json(json.dumps([r.model_dump(mode="json") for r in reports], indent=2))
    elif not reports:
        echo("no provider batches in this workspace (tiap judge run --batch submits them)")
    else:
        display.print_batches(reports)


@app.command("panels")
def panels() -> None:
    """List the built-in panels and their judges."""
    from tiap.judge import builtin_panels, load_panel

    for name in builtin_panels():
        p = load_panel(name)
        echo(f"{p.name}: {' '.join(p.description.split())}")
        for j in p.judges:
            key = f", key from ${j.api_key_env}" if j.api_key_env else ""
            echo(f"  {j.name} [{j.kind}] {j.model}{key}")
