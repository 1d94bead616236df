"""`tiap agreement` sub-commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.cli.output import echo
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.agreement.models import AgreementReport

#: exit status when the gate applies (a validation subset) and failed; a gate shown
#: for information only (all cases, another subset, a labels file) exits 0
EXIT_GATE_FAILED = 3

app = typer.Typer(
    help="Agreement among judges and people, majority votes, and the scale gate.",
    no_args_is_help=True,
)


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise TiapError("--raters: give one or more rater names separated by commas")
    return names


def _print_drift_warnings(result: AgreementReport) -> None:
    """A line on stderr per gated judge that drifted since the gate."""
    for warning in result.diagnostics.warnings:
        echo(f"tiap: warning: {warning.message}", err=True)


@app.command("plan")
def plan(
    kappa: float = typer.Option(..., "--kappa", help="The kappa to plan for (-1 to 1)."),
    prevalence: float = typer.Option(
        ..., "--prevalence", help="The positive label's share, strictly between 0 and 1."
    ),
    raters: int = typer.Option(
        2,
        "--raters",
        help="Raters: 2 plans Cohen's kappa (analytic variance), more Fleiss' kappa "
        "(seeded simulation); 2 to 1,000.",
    ),
    width: float = typer.Option(
        0.2, "--width", help="The full width of the 95% interval to plan for (0 to 2)."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="The threshold the lower bound must clear (-1 to 1; default: --min-judge-kappa's "
        "0.60 for 2 raters, --min-fleiss's 0.80 for more).",
    ),
) -> None:
    """How many cases a kappa needs: for its 95% interval to be --width wide, and for
    its lower bound to clear --threshold (a normal approximation; see docs)."""
    from tiap.agreement.case_plan import hand_plan
    from tiap.agreement.compute import DEFAULT_MIN_FLEISS, DEFAULT_MIN_JUDGE_KAPPA
    from tiap.agreement.plan_tables import lines
    from tiap.limits import check_interval_width, check_kappa, check_prevalence, check_raters

    k = check_kappa("--kappa", kappa)
    p = check_prevalence("--prevalence", prevalence)
    m = check_raters("--raters", raters)
    w = check_interval_width("--width", width)
    default = DEFAULT_MIN_JUDGE_KAPPA if m == 2 else DEFAULT_MIN_FLEISS
    t = check_kappa("--threshold", default if threshold is None else threshold)
    for line in lines(hand_plan(k, p, m, width=w, threshold=t)):
        echo(line)


@app.command("report")
def report(
    out: Path = typer.Option(
        ..., "--out", help="Directory for report.md, report.json, report.html."
    ),
    db: Path | None = typer.Option(None, "--db", help="Workspace (SQLite) with cases and labels."),
    subset: str | None = typer.Option(
        None, "--subset", help="Only the cases of this subset (with --db); default: all cases."
    ),
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="CSV, TSV or JSONL rows case_id,rater,label (+ rater_kind, dataset, run, "
        "category, rubric_id, ...: what 'tiap labels export' writes).",
    ),
    rubric: str | None = typer.Option(
        None,
        "--rubric",
        help="Rubric name or TOML path. Default: the rubric the labels name (rubric_id); "
        "with --labels rows that name none: none (labels as found, no binary collapse).",
    ),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Reference rater NAME, or NAME+adjudicated. Default: human consensus, "
        "overridden by rater 'adjudicated'.",
    ),
    raters: str | None = typer.Option(
        None,
        "--raters",
        help="Comma-separated raters to include (default: the judges; without judges, "
        "every rater but adjudicated).",
    ),
    quorum: int | None = typer.Option(
        None,
        "--quorum",
        help="Minimum valid votes for a majority, 1 to the number of voters "
        "(default: voters//2+1).",
    ),
    resamples: int = typer.Option(
        1000, "--resamples", help="Bootstrap resamples, 0 (none) to 1,000,000."
    ),
    seed: int = typer.Option(1337, "--seed", help="Bootstrap seed, 0 to 2**63-1."),
    min_fleiss: float = typer.Option(
        0.80,
        "--min-fleiss",
        help="Gate: minimum binary Fleiss' kappa over the judges (a kappa, -1 to 1).",
    ),
    min_judge_kappa: float = typer.Option(
        0.60,
        "--min-judge-kappa",
        help="Gate: minimum kappa of each judge vs the human reference (-1 to 1).",
    ),
    min_cases: int = typer.Option(
        30,
        "--min-cases",
        help="Gate: minimum complete cases (every judge labelled validly), and at least half "
        "of the subset (1 to 1,000,000).",
    ),
    min_valid: float = typer.Option(
        0.90,
        "--min-valid",
        help="Gate: minimum share of the subset's cases each judge labelled validly (0 to 1).",
    ),
    no_humans: bool = typer.Option(
        False,
        "--no-humans",
        help="Leave every human label out: the gate is on the judges alone (recorded).",
    ),
    gate_on: str = typer.Option(
        "point",
        "--gate-on",
        help="Gate: compare the thresholds with the point estimates ('point', the paper's "
        "rule) or with the 95% interval lower bounds ('lower'; recorded).",
    ),
    gate_raters: str = typer.Option(
        "judges",
        "--gate-raters",
        help="Gate: Fleiss' kappa over the judges alone ('judges') or over the judges and "
        "the human reference ('judges+reference', the paper's five-rater validation kappa; "
        "needs human labels; recorded).",
    ),
    min_confirmed: float = typer.Option(
        0.90,
        "--min-confirmed",
        help="qrels cases: 'labels reliable' needs the confirmed share's CI lower bound at "
        "least this (0 to 1).",
    ),
    max_missed: float = typer.Option(
        0.10,
        "--max-missed",
        help="qrels cases: negatives found relevant above this (CI lower bound) is "
        "'missing labels' (0 to 1).",
    ),
    min_decided: float = typer.Option(
        0.80,
        "--min-decided",
        help="qrels cases: a check with a decided majority on fewer than this share of its "
        "pairs is 'inconclusive' (0 to 1).",
    ),
) -> None:
    """Every agreement figure (Fleiss, Cohen, Krippendorff, percent agreement, majority,
    prevalence, judge-vs-human) with bootstrap CIs, and the scale gate. Exit status 3:
    the gate applies (a validation subset) and failed; the report is written."""
    from tiap.agreement import compute_report, labels_from_file, write_report_and_record_gate
    from tiap.agreement.answer_correctness import lines as answer_lines
    from tiap.agreement.compute import check_humans
    from tiap.agreement.gate import record_gate
    from tiap.agreement.qrels_tables import lines as qrels_lines
    from tiap.agreement.report_text import summary_lines
    from tiap.agreement.rubrics import rubric_for_table
    from tiap.cases.events import check_gate_on, check_gate_raters, check_kappa_threshold
    from tiap.cases.workspace import Workspace
    from tiap.io import check_apart
    from tiap.limits import (
        check_cases,
        check_quorum,
        check_resamples,
        check_seed,
        check_share_threshold,
    )
    from tiap.rubric import load_rubric

    if (db is None) == (labels is None):
        raise TiapError("give exactly one of --db WORKSPACE or --labels FILE")
    if subset is not None and db is None:
        raise TiapError("--subset needs --db")
    check_apart(out, [("labels file", labels), ("workspace", db), ("rubric", rubric)])
    if quorum is not None:
        check_quorum("--quorum", quorum)
    raters_of_gate = check_gate_raters("--gate-raters", gate_raters)
    check_humans(no_humans, reference, raters_of_gate)
    options = {
        "raters": _names(raters),
        "reference": reference,
        "quorum": quorum,
        "resamples": check_resamples("--resamples", resamples),
        "seed": check_seed("--seed", seed),
        "min_fleiss": check_kappa_threshold("--min-fleiss", min_fleiss),
        "min_judge_kappa": check_kappa_threshold("--min-judge-kappa", min_judge_kappa),
        "min_cases": check_cases("--min-cases", min_cases),
        "min_valid": check_share_threshold("--min-valid", min_valid),
        "min_confirmed": check_share_threshold("--min-confirmed", min_confirmed),
        "max_missed": check_share_threshold("--max-missed", max_missed),
        "min_decided": check_share_threshold("--min-decided", min_decided),
        "no_humans": no_humans,
        "gate_on": check_gate_on("--gate-on", gate_on),
        "gate_raters": raters_of_gate,
    }
    gate_event: int | None = None
    if labels is not None:
        rub = load_rubric(rubric) if rubric is not None else None
        table = labels_from_file(labels, rub)
        if rub is None and any(r.rubric_ids for r in table.raters):
            rub = rubric_for_table(table)  # the rubric the rows name (an export's)
        result = compute_report(table, rub, **options)  # type: ignore[arg-type]
        written = write_report_and_record_gate(result, out)
    else:
        from tiap.agreement import labels_from_workspace
        from tiap.agreement.diagnostics import with_diagnostics

        with Workspace.open_readonly(db) as ws:  # type: ignore[arg-type]
            table = labels_from_workspace(ws, subset=subset)
            rub = load_rubric(rubric) if rubric is not None else rubric_for_table(table)
            result = compute_report(table, rub, **options)  # type: ignore[arg-type]
            result = with_diagnostics(ws, result)  # probe and drift results, read only
        written = write_report_and_record_gate(result, out)  # read-only: records nothing
        if result.gate.applies:  # the one write: the verdict, once the report is written
            if Workspace.writable(db):  # type: ignore[arg-type]
                with Workspace(db, create=False) as ws:  # type: ignore[arg-type]
                    gate_event = record_gate(ws, result, report_dir=out)
            else:
                echo(f"tiap: warning: {db} is read-only: the gate was not recorded", err=True)
    answers = result.answer_correctness
    for line in [
        *summary_lines(result),
        *qrels_lines(result),
        *(answer_lines(answers) if answers is not None else []),
    ]:
        echo(line)
    _print_drift_warnings(result)
    if gate_event is not None:
        echo(f"gate recorded in {db}")
    echo("wrote " + ", ".join(str(p) for p in written.paths))
    if result.gate.applies and not result.gate.passed:
        raise typer.Exit(EXIT_GATE_FAILED)
