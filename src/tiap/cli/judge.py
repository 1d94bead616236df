"""`tiap judge` sub-commands: run a panel over cases, list panels and provider batches."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from tiap.cli.output import cell, cells, console, echo, echo_json
from tiap.errors import Interrupted, TiapError
from tiap.text import inert

#: What Ctrl-C during ``judge run`` keeps, and how to go on.
RESUME_HINT = (
    "every answered call and its label are stored; run the same command again to go on "
    "(answered calls are not repeated)"
)
#: ... and with ``--batch``: what was submitted keeps running at the provider.
BATCH_HINT = "; submitted provider batches keep running: the same command collects them"
#: ... and when batches hold lines whose results are missing: the choices.
MISSING_HINT = (
    "provider batches whose lines the provider counted completed but whose results are "
    "missing: the --batch command with --recall-missing calls them directly (the provider "
    "may have charged for them), 'tiap judge batches --abandon ID' frees them"
)
#: Exit status when work is left that a later run can do: the budget ran out, or
#: provider batches are still running.
EXIT_INCOMPLETE = 3
#: ``--rubric`` and ``--poll-interval`` by default.
DEFAULT_RUBRIC = "contested-credit"
DEFAULT_POLL_S = 30.0

app = typer.Typer(help="Judge cases with a panel of LLM judges (litellm).", no_args_is_help=True)


def _console() -> Any:
    """stdout; wide enough for the tables when it is not a terminal (logs, pipes)."""
    import sys

    return console(width=None if sys.stdout.isatty() else 160)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def _print_dry_run(report: Any) -> None:
    from rich.table import Table

    title = cell(f"dry run: panel {report.panel}, rubric {report.rubric_id}", "table.title")
    table = Table(title=title)
    for col in (
        "judge",
        "kind",
        "cases",
        "labelled before this run",
        "cache hits",
        "calls",
        "est. cost",
        "at most",
    ):
        table.add_column(col, justify="left" if col in ("judge", "kind") else "right")
    for j in report.judges:
        name = cell(j.judge)
        if j.missing_key_env:
            name.append_text(cell(f" (no {j.missing_key_env})", style="red"))
        table.add_row(
            name,
            *cells(
                (
                    j.kind,
                    j.cases,
                    j.already_labelled,
                    j.cache_hits,
                    j.calls,
                    _money(j.est_cost_usd),
                    _money(j.max_cost_usd),
                )
            ),
        )
    console = _console()
    console.print(table)
    console.print(
        f"calls: {report.calls}  cache hits: {report.cache_hits}  "
        f"estimated cost: {_money(report.est_cost_usd)} (at most {_money(report.max_cost_usd)})"
    )


def _gate_json(gate: Any) -> dict[str, Any]:
    """The dry run's ``gate``: whether the run would be refused, and why."""
    check = gate.check
    return {
        "needed": check is not None,
        "passed": None if check is None else check.passed,
        "would_refuse": gate.refused and not gate.forced,
        "forced": gate.forced,
        "message": "a validation subset needs no scale gate" if check is None else check.message,
    }


def _gate_line(gate: Any) -> str:
    info = _gate_json(gate)
    if not info["needed"] or info["passed"]:
        return f"scale gate: {info['message']}"
    if info["forced"]:
        return f"scale gate: not passed, the run would go on because of --force: {info['message']}"
    return f"scale gate: the run would be refused (pass --force to go on): {info['message']}"


def _print_summary(summary: Any, come_back: str | None = None) -> None:
    from rich.table import Table

    table = Table(title=cell(f"panel {summary.panel}, rubric {summary.rubric_id}", "table.title"))
    cols = (
        "judge",
        "kind",
        "labelled before this run",
        "cached",
        "calls",
        "retries",
        "429s",
        "in flight",
        "waited",
        "valid",
        "invalid",
        "left",
        "cost",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("judge", "kind", "invalid") else "right")
    for j in summary.judges:
        invalid = ", ".join(f"{k} {v}" for k, v in sorted(j.invalid.items())) or "0"
        cost = _money(j.cost_usd) + (f" (+{j.cost_unknown} unpriced)" if j.cost_unknown else "")
        table.add_row(
            *cells(
                (
                    j.judge,
                    j.kind,
                    j.already_labelled,
                    j.cache_hits,
                    j.calls,
                    j.retries,
                    j.rate_limited,
                    "-" if j.concurrency is None else j.concurrency,
                    f"{j.retry_wait_s:.1f} s",
                    j.valid,
                    invalid,
                    j.not_started,
                    cost,
                )
            )
        )
    console = _console()
    console.print(table)
    invalid = ", ".join(f"{k} {v}" for k, v in summary.invalid.items()) or "none"
    line = (
        f"calls: {summary.calls}  cache hits: {summary.cache_hits}  retries: {summary.retries}  "
        f"valid: {summary.valid}  invalid: {invalid}  cost: {_money(summary.cost_usd)}"
    )
    console.print(inert(line), markup=False)  # reasons may quote a provider's reply
    for line in _summary_notes(summary, come_back):
        console.print(inert(line), markup=False)


def _summary_notes(summary: Any, come_back: str | None) -> list[str]:
    """The lines under the summary table: routes, sharing, budget, what is left."""
    lines = []
    for j in summary.judges:
        if j.route_note:
            batches = ""
            if j.route == "batch":
                batches = (
                    f": {j.batches_submitted} batches submitted ({j.batch_requests} requests), "
                    f"{j.batch_answered} lines stored, {j.batch_retried} called again directly"
                )
            lines.append(f"{j.judge}: {j.route} ({j.route_note}){batches}")
    if summary.deduplicated:
        lines.append(
            f"identical requests sent once: {summary.deduplicated} judgments answered by the "
            "request of another case"
        )
    if summary.done_elsewhere:
        lines.append(f"{summary.done_elsewhere} judgments were made by another run meanwhile")
    if any(j.kind == "baseline" for j in summary.judges):
        lines.append("note: 'baseline' judges are deterministic lexical rules, not LLMs.")
    if any(j.kind == "local_llm" for j in summary.judges):
        lines.append("note: the local LLM (SmolLM2-135M) is a weak judge.")
    if summary.max_cost_usd is not None and summary.budget_used_usd is not None:
        lines.append(
            f"budget {_money(summary.max_cost_usd)}, shared with overlapping runs: "
            f"{_money(summary.budget_used_usd)} spent in all"
        )
    if summary.stopped_by_budget:
        lines.append(
            f"stopped before exceeding the budget of {_money(summary.max_cost_usd)}: "
            f"{summary.not_started} judgments not started; "
            "re-run with a higher --max-cost to complete them."
        )
    if summary.nothing_to_claim:
        lines.append(
            f"nothing left to claim: the {summary.held_elsewhere} judgments left are being "
            "made by another run"
        )
    elif summary.held_elsewhere:
        lines.append(f"{summary.held_elsewhere} judgments were left to another run")
    if summary.in_batches:
        how = f": {come_back}" if come_back else ""
        lines.append(
            f"{summary.in_batches} judgments wait in provider batches; collect them with the "
            f"--batch command again{how}"
        )
    for b in summary.batches:
        if b.note:
            lines.append(f"batch {b.submission} ({b.judge}): {b.note}")
    if summary.missing_in_batches:
        lines.append(f"{summary.missing_in_batches} judgments are held by {MISSING_HINT}")
    return lines


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
                data = {**report.model_dump(mode="json"), "gate": _gate_json(plan.gate)}
                echo_json(json.dumps(data, indent=2))
            else:
                _print_dry_run(report)
                echo(_gate_line(plan.gate))
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
        _print_summary(summary, come_back)
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


def _print_batches(reports: list[Any]) -> None:
    from rich.table import Table

    table = Table(title="provider batches")
    cols = ("id", "batch", "judge", "state", "status", "requests", "pairs", "stored", "again")
    for col in (*cols, "cost", "created", "closed"):
        table.add_column(col, justify="right" if col in (*cols[5:], "cost") else "left")
    for r in reports:
        table.add_row(
            *cells(
                (
                    r.submission,
                    r.batch_id or "-",
                    r.judge,
                    r.state,
                    r.provider_status or "-",
                    r.requests,
                    r.pairs,
                    r.answered,
                    r.retried,
                    _money(r.cost_usd) if r.cost_usd is not None else "-",
                    r.created_at[:19],
                    (r.closed_at or "-")[:19],
                )
            )
        )
    console = _console()
    console.print(table)
    for r in reports:
        if r.note:
            console.print(inert(f"{r.submission}: {r.note}"), markup=False)


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
        f"{_money(event.spent_usd)} counted as spent for lines the provider may have charged"
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
        _print_batches(reports)


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
