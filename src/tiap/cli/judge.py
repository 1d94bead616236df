"""`tiap judge` sub-commands: run a panel over cases, list panels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from tiap.errors import Interrupted, TiapError

#: What Ctrl-C during ``judge run`` keeps, and how to go on.
RESUME_HINT = (
    "every answered call and its label are stored; run the same command again to go on "
    "(answered calls are not repeated)"
)

app = typer.Typer(help="Judge cases with a panel of LLM judges (litellm).", no_args_is_help=True)


def _console() -> Any:
    """stdout; wide enough for the tables when it is not a terminal (logs, pipes)."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def _print_dry_run(report: Any) -> None:
    from rich.table import Table

    table = Table(title=f"dry run: panel {report.panel}, rubric {report.rubric_id}")
    for col in (
        "judge",
        "kind",
        "cases",
        "labelled",
        "cache hits",
        "calls",
        "est. cost",
        "at most",
    ):
        table.add_column(col, justify="left" if col in ("judge", "kind") else "right")
    for j in report.judges:
        table.add_row(
            j.judge + (f" [red](no {j.missing_key_env})[/red]" if j.missing_key_env else ""),
            j.kind,
            str(j.cases),
            str(j.already_labelled),
            str(j.cache_hits),
            str(j.calls),
            _money(j.est_cost_usd),
            _money(j.max_cost_usd),
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


def _print_summary(summary: Any) -> None:
    from rich.table import Table

    table = Table(title=f"panel {summary.panel}, rubric {summary.rubric_id}")
    cols = (
        "judge",
        "kind",
        "labelled",
        "cached",
        "calls",
        "retries",
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
            j.judge,
            j.kind,
            str(j.already_labelled),
            str(j.cache_hits),
            str(j.calls),
            str(j.retries),
            str(j.valid),
            invalid,
            str(j.not_started),
            cost,
        )
    console = _console()
    console.print(table)
    invalid = ", ".join(f"{k} {v}" for k, v in summary.invalid.items()) or "none"
    console.print(
        f"calls: {summary.calls}  cache hits: {summary.cache_hits}  retries: {summary.retries}  "
        f"valid: {summary.valid}  invalid: {invalid}  cost: {_money(summary.cost_usd)}"
    )
    if any(j.kind == "baseline" for j in summary.judges):
        console.print("note: 'baseline' judges are deterministic lexical rules, not LLMs.")
    if any(j.kind == "local_llm" for j in summary.judges):
        console.print("note: the local LLM (SmolLM2-135M) is a weak judge.")
    if summary.stopped_by_budget:
        console.print(
            f"stopped before exceeding the budget of {_money(summary.max_cost_usd)}: "
            f"{sum(j.not_started for j in summary.judges)} judgments not started; "
            "re-run with a higher --max-cost to complete them."
        )


@app.command("run")
def run(
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    panel: str = typer.Option(..., "--panel", help="Built-in panel name or a panel TOML file."),
    subset: str | None = typer.Option(None, "--subset", help="Judge only this subset."),
    rubric: str = typer.Option("contested-credit", "--rubric", help="Rubric name or TOML file."),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
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
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bars."),
) -> None:
    """Judge the cases (or a subset) with every judge of a panel; resumable."""
    from tiap.cases import Workspace
    from tiap.judge import dry_run as make_dry_run
    from tiap.judge import load_panel, plan_run
    from tiap.judge.progress import run_with_progress
    from tiap.rubric import load_rubric

    the_panel = load_panel(panel)
    the_rubric = load_rubric(rubric)
    with Workspace(db, create=False) as ws:
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
                typer.echo(json.dumps(data, indent=2))
            else:
                _print_dry_run(report)
                typer.echo(_gate_line(plan.gate))
            return
        if plan.gate_note:
            typer.echo(f"tiap: warning: {plan.gate_note}", err=True)
        try:
            summary = run_with_progress(ws, plan, max_cost=max_cost, progress=not no_progress)
        except KeyboardInterrupt:
            raise Interrupted(RESUME_HINT) from None
    if as_json:
        typer.echo(summary.model_dump_json(indent=2))
    else:
        _print_summary(summary)
    if summary.errors:
        raise TiapError("judges stopped: " + "; ".join(summary.errors))


@app.command("panels")
def panels() -> None:
    """List the built-in panels and their judges."""
    from tiap.judge import builtin_panels, load_panel

    for name in builtin_panels():
        p = load_panel(name)
        typer.echo(f"{p.name}: {' '.join(p.description.split())}")
        for j in p.judges:
            key = f", key from ${j.api_key_env}" if j.api_key_env else ""
            typer.echo(f"  {j.name} [{j.kind}] {j.model}{key}")
