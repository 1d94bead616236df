"""`tiap judge probe`: re-judge a subset under controlled perturbations and report
whether each judge is fit to judge (:mod:`tiap.probe`)."""

from __future__ import annotations

from pathlib import Path

import typer

from tiap.cli import judge_display as display
from tiap.cli.judge import DEFAULT_RUBRIC, EXIT_INCOMPLETE, RESUME_HINT
from tiap.cli.output import echo, echo_json
from tiap.errors import Interrupted, TiapError
from tiap.text import inert

__all__ = ["anchor_app", "probe"]

anchor_app = typer.Typer(help="Frozen anchor sets of judged cases.", no_args_is_help=True)

DEFAULT_KINDS = "order,verbosity,repeat,injection"


def probe(
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    panel: str = typer.Option(..., "--panel", help="Built-in panel name or a panel TOML file."),
    subset: str = typer.Option(
        ..., "--subset", help="The subset to probe (its cases judged unperturbed first)."
    ),
    kind: str = typer.Option(
        DEFAULT_KINDS,
        "--kind",
        help="Probe kinds, comma-separated: order, verbosity, repeat, injection.",
    ),
    repeats: int = typer.Option(3, "--repeats", help="Identical requests of 'repeat' (2 to 20)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the filler order and planted labels."),
    rubric: str = typer.Option(DEFAULT_RUBRIC, "--rubric", help="Rubric name or TOML file."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", help="Budget in US dollars for this run; stops before exceeding it."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print calls, cache hits and estimated cost; call nothing."
    ),
    max_injection: float = typer.Option(
        0.05,
        "--max-injection",
        help="Largest planted-label share tolerated: a judge is sensitive to injection when "
        "the share's 95% CI lower bound exceeds it.",
    ),
    min_cases: int = typer.Option(
        10, "--min-cases", help="Fewest compared cases a kind needs for a verdict."
    ),
    out: Path = typer.Option(Path("probe"), "--out", help="Directory of the probe report."),
    lease: float | None = typer.Option(
        None,
        "--lease",
        help="Seconds a claim on a pair lasts unless renewed (as judge run).",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
    no_progress: bool = typer.Option(
        False, "--no-progress", "--quiet", "-q", help="No progress display."
    ),
) -> None:
    """Re-judge a subset's cases under perturbations (label order, verbosity, repeats,
    a planted instruction) through the panel's route: cached, leased, budgeted and
    resumable like 'judge run'. Probe labels never enter an agreement figure."""
    from tiap.cases import Workspace
    from tiap.cases.diagnostic_events import ProbeThresholds
    from tiap.cases.events import ReportRef, record_event
    from tiap.io import check_apart
    from tiap.judge import dry_run as make_dry_run
    from tiap.judge import load_panel
    from tiap.judge.claims import lease_for
    from tiap.limits import check_cost, check_float, check_int
    from tiap.probe import parse_kinds, plan_probes
    from tiap.probe.probe_plan import check_repeats
    from tiap.probe.probe_report import write_probe_report
    from tiap.probe.run import probe_event
    from tiap.rubric import load_rubric

    kinds = parse_kinds(kind)
    check_repeats(repeats)
    if max_cost is not None:
        check_cost("--max-cost", max_cost)
    check_float("--max-injection", max_injection, minimum=0.0, maximum=1.0)
    check_int("--min-cases", min_cases, minimum=1, maximum=1_000_000)
    check_int("--seed", seed, minimum=0, maximum=2**63 - 1)
    if lease is not None:
        check_float("--lease", lease, minimum=0.1, maximum=86_400.0)
    check_apart(out, [("workspace", db), ("panel", panel), ("rubric", rubric)])
    thresholds = ProbeThresholds(max_injection=max_injection, min_cases=min_cases)
    the_panel = load_panel(panel)
    lease_s = lease_for(the_panel, lease)
    the_rubric = load_rubric(rubric)
    with Workspace(db, create=False) as ws:
        plan = plan_probes(
            ws, the_panel, the_rubric, subset=subset, kinds=kinds, repeats=repeats, seed=seed
        )
        if dry_run:
            report = make_dry_run(plan.run)
            if as_json:
                echo_json(report.model_dump_json(indent=2))
            else:
                display.print_dry_run(report)
            return
        from tiap.cli.progress_display import progress_reporter
        from tiap.judge.reporting import run_with_progress

        try:
            with progress_reporter(no_progress) as reporter:
                summary = run_with_progress(
                    ws, plan.run, max_cost=max_cost, reporter=reporter, lease_s=lease_s
                )
        except KeyboardInterrupt:
            raise Interrupted(RESUME_HINT) from None
        event = probe_event(ws, plan, thresholds)
        digest = write_probe_report(event, out)
        if not summary.incomplete and not summary.errors:
            ref = ReportRef(out_dir=str(out), report_json_sha256=digest)
            record_event(ws, event.model_copy(update={"report": ref}))
    if as_json:
        echo_json(event.model_dump_json(indent=2, exclude={"created_at"}))
    else:
        display.print_summary(summary)
        con = display.wide_console()
        for j in event.judges:
            con.print(f"{inert(j.name)}: {inert(j.verdict)}", markup=False, highlight=False)
        echo(f"probe report: {out / 'report.html'}")
    if summary.errors:
        raise TiapError("judges stopped: " + "; ".join(summary.errors))
    if summary.incomplete:
        echo("tiap: stopped by the budget; work is left (the same command goes on)", err=True)
        raise typer.Exit(EXIT_INCOMPLETE)


@anchor_app.command("freeze")
def freeze(
    name: str = typer.Argument(..., help="The anchor set's name (taken once, never changed)."),
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    subset: str = typer.Option(..., "--subset", help="The subset whose cases are the anchors."),
    panel: str = typer.Option(..., "--panel", help="Built-in panel name or a panel TOML file."),
    rubric: str = typer.Option(DEFAULT_RUBRIC, "--rubric", help="Rubric name or TOML file."),
    as_json: bool = typer.Option(False, "--json", help="Print the anchor set as JSON."),
) -> None:
    """Freeze an anchor set: the subset's cases (by id and a hash of the text each judge
    saw), each judge's labels on them with models and settings, and the human majority
    where there is one. A frozen set is never changed; a name is taken once."""
    from tiap.cases import Workspace
    from tiap.judge import load_panel
    from tiap.probe.anchor import freeze_anchor
    from tiap.rubric import load_rubric

    the_panel, the_rubric = load_panel(panel), load_rubric(rubric)
    with Workspace(db, create=False) as ws:
        anchor = freeze_anchor(ws, name, the_panel, the_rubric, subset=subset)
        labels = len(ws.anchor_labels(anchor.name))
    if as_json:
        echo_json(anchor.model_dump_json(indent=2))
    else:
        echo(
            f"anchor set {inert(anchor.name)}: {anchor.cases} cases, {len(anchor.judges)} "
            f"judges, {labels} labels frozen"
            + ("" if anchor.reference is None else f", reference: {anchor.reference}")
        )
        echo(
            f"the next gate recorded on subset {inert(subset)} from these labels names it "
            f"(tiap agreement report --db {inert(str(db))} --subset {inert(subset)} --out DIR)"
        )


def drift(
    name: str = typer.Argument(..., help="The frozen anchor set."),
    db: Path = typer.Option(..., "--db", help="The workspace (SQLite file)."),
    panel: str = typer.Option(..., "--panel", help="Built-in panel name or a panel TOML file."),
    rubric: str = typer.Option(DEFAULT_RUBRIC, "--rubric", help="Rubric name or TOML file."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", help="Budget in US dollars for this run; stops before exceeding it."
    ),
    out: Path = typer.Option(Path("drift"), "--out", help="Directory of the drift report."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON on stdout."),
    no_progress: bool = typer.Option(
        False, "--no-progress", "--quiet", "-q", help="No progress display."
    ),
) -> None:
    """Re-judge a frozen anchor set with the panel as it is now (bypassing the cache,
    recorded with a drift-run id) and compare each judge with its frozen labels; exit 3
    when a judge drifted (McNemar p < 0.05 or an EWMA alarm)."""
    from tiap.cases import Workspace
    from tiap.cases.events import ReportRef, record_event
    from tiap.io import check_apart
    from tiap.judge import load_panel
    from tiap.judge.reporting import run_with_progress
    from tiap.limits import check_cost
    from tiap.probe.drift import drift_figures, drift_history, plan_drift, write_drift_report
    from tiap.rubric import load_rubric

    if max_cost is not None:
        check_cost("--max-cost", max_cost)
    check_apart(out, [("workspace", db), ("panel", panel), ("rubric", rubric)])
    the_panel, the_rubric = load_panel(panel), load_rubric(rubric)
    with Workspace(db, create=False) as ws:
        plan = plan_drift(ws, name, the_panel, the_rubric)
        from tiap.cli.progress_display import progress_reporter

        try:
            with progress_reporter(no_progress) as reporter:
                summary = run_with_progress(ws, plan.run, max_cost=max_cost, reporter=reporter)
        except KeyboardInterrupt:
            raise Interrupted(RESUME_HINT) from None
        event = drift_figures(ws, plan)
        complete = not summary.incomplete and not summary.errors
        if complete:
            digest = write_drift_report(event, out, drift_history(ws, name))
            ref = ReportRef(out_dir=str(out), report_json_sha256=digest)
            record_event(ws, event.model_copy(update={"report": ref}))
    if as_json:
        echo_json(event.model_dump_json(indent=2, exclude={"created_at"}))
    else:
        for j in event.judges:
            if j.drifted:
                state = "drifted: " + "; ".join(j.reasons)
            else:
                state = "steady" if j.n else "inconclusive: " + "; ".join(j.reasons)
            echo(f"{inert(j.name)}: {state}")
    if summary.errors:
        raise TiapError("judges stopped: " + "; ".join(summary.errors))
    if not complete:
        echo("tiap: stopped by the budget; the same command goes on with this drift run", err=True)
        raise typer.Exit(EXIT_INCOMPLETE)
    if any(j.drifted for j in event.judges):
        echo("tiap: judges drifted: " + ", ".join(inert(n) for n in event.drifted), err=True)
        raise typer.Exit(EXIT_INCOMPLETE)
