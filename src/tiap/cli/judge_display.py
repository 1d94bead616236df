"""How `tiap judge` shows a run: the dry run's table, the summary with its notes and
the gate, the provider batches (every text inert, no markup)."""

from __future__ import annotations

from typing import Any

from tiap.cli.output import cell, cells, console
from tiap.text import inert

#: When provider batches hold lines whose results are missing: the choices.
MISSING_HINT = (
    "provider batches whose lines the provider counted completed but whose results are "
    "missing: the --batch command with --recall-missing calls them directly (the provider "
    "may have charged for them), 'tiap judge batches --abandon ID' frees them"
)


def wide_console() -> Any:
    """stdout; wide enough for the tables when it is not a terminal (logs, pipes)."""
    import sys

    return console(width=None if sys.stdout.isatty() else 160)


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def print_dry_run(report: Any) -> None:
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
                    money(j.est_cost_usd),
                    money(j.max_cost_usd),
                )
            ),
        )
    console = wide_console()
    console.print(table)
    console.print(
        f"calls: {report.calls}  cache hits: {report.cache_hits}  "
        f"estimated cost: {money(report.est_cost_usd)} (at most {money(report.max_cost_usd)})"
    )


def gate_json(gate: Any) -> dict[str, Any]:
    """The dry run's ``gate``: whether the run would be refused, and why."""
    check = gate.check
    return {
        "needed": check is not None,
        "passed": None if check is None else check.passed,
        "would_refuse": gate.refused and not gate.forced,
        "forced": gate.forced,
        "message": "a validation subset needs no scale gate" if check is None else check.message,
    }


def gate_line(gate: Any) -> str:
    info = gate_json(gate)
    if not info["needed"] or info["passed"]:
        return f"scale gate: {info['message']}"
    if info["forced"]:
        return f"scale gate: not passed, the run would go on because of --force: {info['message']}"
    return f"scale gate: the run would be refused (pass --force to go on): {info['message']}"


def print_summary(summary: Any, come_back: str | None = None) -> None:
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
        cost = money(j.cost_usd) + (f" (+{j.cost_unknown} unpriced)" if j.cost_unknown else "")
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
    console = wide_console()
    console.print(table)
    invalid = ", ".join(f"{k} {v}" for k, v in summary.invalid.items()) or "none"
    line = (
        f"calls: {summary.calls}  cache hits: {summary.cache_hits}  retries: {summary.retries}  "
        f"valid: {summary.valid}  invalid: {invalid}  cost: {money(summary.cost_usd)}"
    )
    console.print(inert(line), markup=False)  # reasons may quote a provider's reply
    for line in summary_notes(summary, come_back):
        console.print(inert(line), markup=False)


def summary_notes(summary: Any, come_back: str | None) -> list[str]:
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
            f"budget {money(summary.max_cost_usd)}, shared with overlapping runs: "
            f"{money(summary.budget_used_usd)} spent in all"
        )
    if summary.stopped_by_budget:
        lines.append(
            f"stopped before exceeding the budget of {money(summary.max_cost_usd)}: "
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


def print_batches(reports: list[Any]) -> None:
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
                    money(r.cost_usd) if r.cost_usd is not None else "-",
                    r.created_at[:19],
                    (r.closed_at or "-")[:19],
                )
            )
        )
    console = wide_console()
    console.print(table)
    for r in reports:
        if r.note:
            console.print(inert(f"{r.submission}: {r.note}"), markup=False)
