"""`tiap cases` sub-commands: extract, sample, list, show, subsets, rename-rater."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from tiap.cases.extract import ExtractReport
    from tiap.cases.models import Case, LabelRecord
    from tiap.cases.sample import SampleResult
    from tiap.cases.workspace import Workspace

app = typer.Typer(
    help="Contested credits: extract them from a bundle, draw validation subsets, look at them.",
    no_args_is_help=True,
)

DB_HELP = "Workspace file (SQLite)."


def _runs(values: list[str] | None) -> list[str] | None:
    """Run names from repeated and/or comma-separated options."""
    if not values:
        return None
    return [r.strip() for v in values for r in v.split(",") if r.strip()] or None


def _echo_json(obj: object) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False))


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    """Plain aligned columns (never truncated, so ids can be copied)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _print_extract_report(report: ExtractReport, db: Path) -> None:
    buckets = list(report.buckets)
    header = ["run", "store", "queries", "empty target", "raw credited", "contested"]
    header += [f"rank {b}" for b in buckets]
    rows = [
        [
            run,
            rc.store,
            str(rc.queries),
            str(rc.empty_target),
            str(rc.raw_credited),
            str(rc.contested),
            *(str(rc.buckets.get(b, 0)) for b in buckets),
        ]
        for run, rc in report.runs.items()
    ]
    rows.append(
        ["all", "", "", "", "", str(report.contested), *(str(report.buckets[b]) for b in buckets)]
    )
    typer.echo(f"contested credits at k={report.k} in {report.dataset}")
    typer.echo(_table(header, rows, right=set(range(2, len(header)))))
    missing = sum(rc.no_ranking for rc in report.runs.values())
    if missing:
        typer.echo(f"{missing} (run, query) pairs had no ranking (counted as empty rankings)")
    typer.echo(
        "empty target: the query's Raw or Canonical target is empty on the run's store, "
        "so it cannot be contested"
    )
    typer.echo(f"{report.added} new cases in {db} ({report.already_present} already there)")


def _print_sample_result(result: SampleResult) -> None:
    for note in result.notes:
        typer.echo(f"note: {note}")
    alloc = ", ".join(f"{b}: {n}" for b, n in result.allocation.items())
    over = ", ".join(f"{b}: {n}" for b, n in result.overlap_allocation.items())
    typer.echo(
        f"subset '{result.name}': {len(result.case_ids)} of {result.pool_size} cases ({alloc}); "
        f"overlap {len(result.overlap_ids)} ({over})"
    )


def _print_case_table(cases: list[Case], overlap: set[str]) -> None:
    header = ["case_id", "run", "query_id", "rank", "bucket"]
    if overlap:
        header.append("overlap")
    header.append("memory")
    rows = []
    for c in cases:
        row = [c.case_id, c.run, c.query_id, str(c.rank), c.rank_bucket]
        if overlap:
            row.append("yes" if c.case_id in overlap else "")
        rows.append([*row, _short(c.memory_text, 60)])
    if rows:
        typer.echo(_table(header, rows, right={3}))
    typer.echo(f"{len(cases)} cases")


def _print_case(case: Case, labels: list[LabelRecord]) -> None:
    lines = [
        f"case {case.case_id}  run {case.run} (store {case.store})  dataset {case.dataset}",
        f"query {case.query_id}  category {case.category or 'unknown'}",
        f"question: {case.question}",
        f"gold answer: {case.answer}",
        "evidence:",
        *(f"  {e.render()}" for e in case.evidence),
        f"credited memory {case.memory_id} at rank {case.rank} (bucket {case.rank_bucket}, "
        f"k={case.k}):",
        f"  {case.memory_text}",
    ]
    if labels:
        lines.append("labels (latest per rater):")
        for lab in labels:
            value = lab.label if lab.label is not None else f"(none: {lab.reason})"
            lines.append(f"  {lab.rater} [{lab.rater_kind}]: {value}")
    else:
        lines.append("labels: none yet")
    typer.echo("\n".join(lines))


@app.command("extract")
def extract(
    bundle: Path = typer.Argument(..., help="Trace bundle directory."),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    k: int | None = typer.Option(None, "--k", help="Cut-off (default: the bundle's k)."),
    runs: list[str] | None = typer.Option(
        None, "--runs", help="Only these runs (repeat or comma-separate)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Find contested credits (Raw misses in the top k, Source and Canonical credited)."""
    from tiap.cases.extract import extract_cases
    from tiap.cases.workspace import Workspace
    from tiap.traces.bundle import read_bundle

    b = read_bundle(bundle)
    for warning in b.warnings:
        typer.echo(f"tiap: warning: {warning}", err=True)
    with Workspace(db) as ws:
        report = extract_cases(b, ws, k=k, runs=_runs(runs))
    if as_json:
        _echo_json(report.model_dump(mode="json"))
        return
    _print_extract_report(report, db)


def _check_replace(ws: Workspace, name: str, *, replace: bool, force: bool) -> None:
    """An existing subset is replaced only with ``--replace``, and one whose cases
    have labels only with ``--force`` too (the labels stay on their cases)."""
    from tiap.errors import TiapError

    if name not in ws.subsets():
        return
    if not replace:
        raise TiapError(
            f"{ws.path}: subset '{name}' exists already: choose another --name, or draw it "
            "again with --replace"
        )
    ids = ws.case_ids(subset=name)
    labelled = len({lab.case_id for lab in ws.latest_labels(case_ids=ids)})
    if labelled and not force:
        raise TiapError(
            f"{ws.path}: subset '{name}' has labels on {labelled} of its {len(ids)} cases: "
            "add --force to replace it anyway (the labels stay on their cases; report on "
            "the new subset again, as a gate recorded on the old one is not re-evaluated)"
        )


@app.command("sample")
def sample(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    name: str = typer.Option("validation", "--name", help="Name of the subset."),
    n: int = typer.Option(115, "--n", help="Cases in the subset."),
    overlap: int | None = typer.Option(
        None, "--overlap", help="Cases a second reviewer also labels [default: 36/115 of --n]."
    ),
    seed: int = typer.Option(1337, "--seed", help="Seed of the overlap draw."),
    from_runs: list[str] | None = typer.Option(
        None, "--from-runs", help="Draw only from these runs (repeat or comma-separate)."
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Draw a subset of that name again, replacing it."
    ),
    force: bool = typer.Option(
        False, "--force", help="With --replace: replace it even if its cases have labels."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the subset as JSON."),
) -> None:
    """Draw a stratified validation subset (by rank bucket) with a reviewer overlap."""
    from tiap.cases.sample import default_overlap, sample_subset
    from tiap.cases.workspace import Workspace

    with Workspace(db, create=False) as ws:
        _check_replace(ws, name, replace=replace, force=force)
        result = sample_subset(
            ws,
            name=name,
            n=n,
            overlap=default_overlap(n) if overlap is None else overlap,
            seed=seed,
            from_runs=_runs(from_runs),
            replace=replace,
        )
    if as_json:
        _echo_json(result.model_dump(mode="json"))
        return
    _print_sample_result(result)


@app.command("list")
def list_cases(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    subset: str | None = typer.Option(None, "--subset", help="Only the cases of this subset."),
    runs: list[str] | None = typer.Option(None, "--runs", help="Only these runs."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON Lines, one case a line."),
) -> None:
    """List cases (a subset's own order, else by run and query)."""
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        cases = ws.cases(subset=subset, runs=_runs(runs))
        overlap = set(ws.overlap_ids(subset)) if subset else set()
    if as_json:
        for c in cases:
            typer.echo(c.model_dump_json())
        return
    _print_case_table(cases, overlap)


@app.command("show")
def show(
    case_id: str = typer.Argument(..., help="The case id (from 'tiap cases list')."),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the case and its labels as JSON."),
) -> None:
    """Show one case as a rater sees it, with the latest label of every rater."""
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        case = ws.case(case_id)
        labels = ws.latest_labels(case_ids=[case_id])
    if as_json:
        _echo_json(
            {
                "case": case.model_dump(mode="json"),
                "labels": [lab.model_dump(mode="json", exclude_none=True) for lab in labels],
            }
        )
        return
    _print_case(case, labels)


@app.command("subsets")
def subsets(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the named subsets of a workspace with their parameters."""
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        rows: list[dict[str, Any]] = [
            {
                "name": name,
                "size": len(ws.case_ids(subset=name)),
                "overlap": len(ws.overlap_ids(name)),
                "params": ws.subset_params(name),
            }
            for name in ws.subsets()
        ]
    if as_json:
        _echo_json(rows)
        return
    if not rows:
        typer.echo("no subsets (draw one with 'tiap cases sample')")
    for row in rows:
        p = row["params"]
        runs = ",".join(p.get("from_runs") or []) or "all runs"
        typer.echo(
            f"{row['name']}: {row['size']} cases, {row['overlap']} in overlap "
            f"(kind={p.get('kind', '?')}, seed={p.get('seed', '?')}, from {runs})"
        )


@app.command("rename-rater")
def rename_rater(
    old: str = typer.Argument(..., help="The rater name to rename."),
    new: str = typer.Argument(..., help="A rater name the workspace does not use yet."),
    kind: str = typer.Option(
        ...,
        "--kind",
        help="Whose labels to rename: judge or human (a judge and a human "
        "sharing a name: rename the judge's).",
    ),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
) -> None:
    """Give one rater's labels a new name (recorded as an event). Repairs a workspace
    where a judge and a human share a name; then rename the judge in its panel too."""
    from tiap.cases.vocab import RATER_KINDS
    from tiap.cases.workspace import Workspace
    from tiap.errors import TiapError

    rater_kind = next((k for k in RATER_KINDS if k == kind), None)
    if rater_kind is None:
        raise TiapError(f"--kind: give one of {', '.join(RATER_KINDS)} (not '{kind}')")
    with Workspace(db, create=False) as ws:
        renamed = ws.rename_rater(old, new, rater_kind)
    typer.echo(f"renamed {renamed} labels of {kind} '{old}' to '{new}' in {db}")
