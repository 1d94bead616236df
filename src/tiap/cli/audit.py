"""`tiap audit` and `tiap demo`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.cli.output import echo
from tiap.errors import Interrupted

if TYPE_CHECKING:
    from tiap.audit import AuditOutcome, AuditSettings

PROGRESS = "No progress (bars in a terminal, else a plain line every few seconds)."

#: Exit status when the audit stopped before the end without an error:
#: waiting for human labels, a failed scale gate, or the budget.
EXIT_PAUSED = 3


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def _run(settings: AuditSettings) -> AuditOutcome:
    """Run the audit; Ctrl-C keeps every finished step and answered call. Outside a
    terminal, the judging steps print a plain progress line every few seconds."""
    import tiap.audit
    from tiap.cli.progress_display import progress_reporter, route_announcer

    quiet = not settings.progress
    try:
        with progress_reporter(quiet) as reporter:
            return tiap.audit.run_audit(
                settings, say=echo, reporter=reporter, on_route_load=route_announcer(quiet)
            )
    except KeyboardInterrupt:
        raise Interrupted(
            "finished steps, answered calls and stored labels are kept; run the same "
            "command again to go on"
        ) from None


def _finish(outcome: AuditOutcome) -> None:
    echo(f"index: {outcome.index_md} and {outcome.index_html}")
    for dataset, verdict in (outcome.qrels_verdicts or {}).items():
        echo(f"qrels {dataset}: {verdict}")
    if outcome.status == "complete":
        echo("audit complete")
        return
    echo(f"tiap: audit paused ({outcome.status}): {outcome.message}", err=True)
    if outcome.next_command:
        echo(f"next: {outcome.next_command}", err=True)
    raise typer.Exit(EXIT_PAUSED)


def _probe_kinds(text: str | None, repeats: int) -> list[str]:
    """``--probes`` as probe kinds (none when not given) and ``--probe-repeats``
    checked: a one-line error before any work."""
    from tiap.probe.probe_plan import check_repeats, parse_kinds

    check_repeats(repeats, option="--probe-repeats")
    return [] if text is None else parse_kinds(text, option="--probes")


def register(app: typer.Typer) -> None:
    """Add the ``audit`` and ``demo`` commands to ``app``."""

    @app.command("audit")
    def audit(
        bundle: Path = typer.Argument(
            ...,
            help="Trace bundle directory; with --mode qrels: an LMEB/BEIR task directory, a "
            "tree of them, or a trace bundle.",
        ),
        out: Path = typer.Option(..., "--out", help="Directory for every report and index.md."),
        panel: str = typer.Option(..., "--panel", help="Built-in panel name or panel TOML file."),
        mode: str = typer.Option(
            "contested",
            "--mode",
            help="contested: audit contested credits; qrels: audit relevance annotations "
            "(the LMEB procedure).",
        ),
        db: Path | None = typer.Option(
            None, "--db", help="Workspace (SQLite); default OUT/workspace.sqlite."
        ),
        rubric: str | None = typer.Option(
            None,
            "--rubric",
            help="Rubric name or TOML (default: contested-credit; with --mode qrels: "
            "qrels-relevance).",
        ),
        k: int | None = typer.Option(
            None, "--k", help="Cut-off for contested credits (default: the bundle's k)."
        ),
        ks: str = typer.Option("10,60", "--ks", help="Rescoring cut-offs."),
        n: int = typer.Option(115, "--n", help="Validation subset size."),
        overlap: int | None = typer.Option(
            None, "--overlap", help="Second-reviewer overlap (default scales with --n)."
        ),
        seed: int = typer.Option(1337, "--seed", help="Seed for bootstraps and sampling."),
        from_runs: str | None = typer.Option(
            None, "--from-runs", help="Draw the validation subset from these runs only."
        ),
        no_humans: bool = typer.Option(
            False,
            "--no-humans",
            help="Do not wait for human labels: the gate then uses judge agreement only.",
        ),
        reference: str | None = typer.Option(
            None, "--reference", help="Human reference rater (default: human consensus)."
        ),
        min_fleiss: float = typer.Option(0.80, "--min-fleiss", help="Gate: binary Fleiss."),
        min_judge_kappa: float = typer.Option(
            0.60, "--min-judge-kappa", help="Gate: each judge's kappa vs humans."
        ),
        min_cases: int = typer.Option(
            30,
            "--min-cases",
            help="Gate: minimum complete cases (every judge valid), and at least half of the "
            "validation subset.",
        ),
        min_valid: float = typer.Option(
            0.90, "--min-valid", help="Gate: minimum share of cases each judge labelled validly."
        ),
        gate_on: str = typer.Option(
            "point",
            "--gate-on",
            help="Gate: thresholds on the point estimates ('point', the paper's rule) or on "
            "the 95% interval lower bounds ('lower'; recorded).",
        ),
        gate_raters: str = typer.Option(
            "judges",
            "--gate-raters",
            help="Gate: Fleiss' kappa over the judges alone ('judges') or over the judges "
            "and the human reference ('judges+reference', the paper's five-rater kappa; "
            "recorded).",
        ),
        max_cost: float | None = typer.Option(
            None, "--max-cost", help="Budget in US dollars for each judging step."
        ),
        force: bool = typer.Option(
            False, "--force", help="Judge every case even if the gate failed (recorded)."
        ),
        replace_stale: bool = typer.Option(
            False,
            "--replace-stale",
            help="When the bundle (or source) now gives another version of the cases than "
            "the workspace holds: retire the stale cases and their labels (kept, left out of "
            "every figure) and go on with the new version.",
        ),
        per_dataset: int = typer.Option(
            100, "--per-dataset", help="--mode qrels: annotated pairs drawn per dataset."
        ),
        group_by: str = typer.Option(
            "dataset",
            "--group-by",
            help="--mode qrels: a dataset is LMEB's dataset (a tree's Type/Dataset, its tasks "
            "together; 'dataset') or each task ('task').",
        ),
        negatives: int = typer.Option(
            0,
            "--negatives",
            help="--mode qrels: also draw up to N top-ranked unjudged documents per dataset "
            "from --run.",
        ),
        run: str | None = typer.Option(
            None, "--run", help="--mode qrels: the run for --negatives (file or bundle run)."
        ),
        min_confirmed: float = typer.Option(
            0.90,
            "--min-confirmed",
            help="--mode qrels: 'labels reliable' needs the confirmed share's CI lower bound "
            "at least this (0 to 1).",
        ),
        max_missed: float = typer.Option(
            0.10,
            "--max-missed",
            help="--mode qrels: negatives found relevant above this is 'missing labels' (0 to 1).",
        ),
        min_decided: float = typer.Option(
            0.80,
            "--min-decided",
            help="--mode qrels: a check with a decided majority on fewer than this share of its "
            "pairs is 'inconclusive' (0 to 1).",
        ),
        probes: str | None = typer.Option(
            None,
            "--probes",
            help="Probe the judges on the validation subset after the gate, when the audit "
            "goes on: kinds, comma-separated (order, verbosity, repeat, injection). Off by "
            "default.",
        ),
        probe_repeats: int = typer.Option(
            3, "--probe-repeats", help="Identical requests of the 'repeat' probe (2 to 20)."
        ),
        no_progress: bool = typer.Option(False, "--no-progress", "--quiet", "-q", help=PROGRESS),
    ) -> None:
        """The whole audit: rescore, contested cases, validation subset, judges, human
        labels, agreement and gate, then every case and the final report (--mode qrels:
        qrels pairs instead of the rescore and contested cases, and a verdict per dataset
        on its relevance labels). Resumable: run the same command again to continue (exit
        status 3 means paused, not failed)."""
        from pydantic import ValidationError

        from tiap.audit import AuditSettings
        from tiap.cases.events import check_gate_on, check_gate_raters
        from tiap.cases.qrels_groups import check_group_by
        from tiap.cli.options import settings_problem
        from tiap.errors import TiapError

        if mode not in ("contested", "qrels"):
            raise TiapError(f"--mode: give contested or qrels (not '{mode}')")
        kinds = _probe_kinds(probes, probe_repeats)
        if mode != "qrels" and (
            negatives or run is not None or per_dataset != 100 or group_by != "dataset"
        ):
            raise TiapError("--per-dataset, --group-by, --negatives and --run are for --mode qrels")
        try:
            settings = AuditSettings(
                bundle=bundle,
                out=out,
                panel=panel,
                mode="qrels" if mode == "qrels" else "contested",
                db=db,
                rubric=rubric,
                k=k,
                ks=ks,
                n=n,
                overlap=overlap,
                seed=seed,
                from_runs=_names(from_runs),
                humans="skip" if no_humans else "required",
                reference=reference,
                min_fleiss=min_fleiss,
                min_judge_kappa=min_judge_kappa,
                min_cases=min_cases,
                min_valid=min_valid,
                gate_on=check_gate_on("--gate-on", gate_on),
                gate_raters=check_gate_raters("--gate-raters", gate_raters),
                max_cost=max_cost,
                force=force,
                replace_stale=replace_stale,
                progress=not no_progress,
                per_dataset=per_dataset,
                group_by=check_group_by("--group-by", group_by),
                negatives=negatives,
                run=run,
                min_confirmed=min_confirmed,
                max_missed=max_missed,
                min_decided=min_decided,
                probes=kinds,
                probe_repeats=probe_repeats,
            )
        except ValidationError as exc:
            raise settings_problem(exc) from None
        _finish(_run(settings))

    @app.command("demo")
    def demo(
        out: Path = typer.Option(Path("tiap-demo"), "--out", help="Where the reports go."),
        no_progress: bool = typer.Option(False, "--no-progress", "--quiet", "-q", help=PROGRESS),
    ) -> None:
        """The whole audit, offline, on the sample bundle shipped with tiap and the
        offline panel (five deterministic baseline judges, no key, no network), with
        illustrative reference labels for its validation subset."""
        from tiap.audit.demo import demo_settings

        echo(
            "tiap demo: the sample bundle (3 invented conversations), the 'offline' panel "
            "(deterministic baselines, not LLMs), and illustrative reference labels written "
            "for the sample (rater demo-reference; not human judgments of real data); the "
            "demo goes past a failed gate with --force to show every step."
        )
        settings = demo_settings(out, progress=not no_progress)
        outcome = _run(settings)
        echo(f"reports in {out.resolve()}: open {outcome.index_html.resolve()}")
        _finish(outcome)
