"""`tiap cases` sub-commands: extract, from-qrels, sample, list, show, subsets,
versions, rename-rater (from-answers: :mod:`tiap.cli.cases_answers`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tiap.cli import cases_display as display
from tiap.cli.output import echo, echo_json

if TYPE_CHECKING:
    from tiap.cases.vocab import CaseKind

app = typer.Typer(
    help="Cases: contested credits extracted from a bundle, annotated (query, document) "
    "pairs drawn from qrels, or a run's generated answers; validation subsets; looking at "
    "them.",
    no_args_is_help=True,
)

DB_HELP = "Workspace file (SQLite)."
REPLACE_STALE_HELP = (
    "When the workspace holds cases of an earlier version of the input: retire the stale "
    "ones and their labels (kept, left out of every figure) and store this version's."
)
KIND_HELP = (
    "Only cases of this kind: contested (credits), qrels (annotated pairs) or answer "
    "(generated answers)."
)


def _kind(value: str | None) -> CaseKind | None:
    """``--kind`` checked against the case kinds."""
    from tiap.cases.vocab import CASE_KINDS
    from tiap.errors import TiapError

    if value is None:
        return None
    kind = next((k for k in CASE_KINDS if k == value), None)
    if kind is None:
        raise TiapError(f"--kind: give one of {', '.join(CASE_KINDS)} (not '{value}')")
    return kind


def _runs(values: list[str] | None) -> list[str] | None:
    """Run names from repeated and/or comma-separated options."""
    if not values:
        return None
    return [r.strip() for v in values for r in v.split(",") if r.strip()] or None


@app.command("extract")
def extract(
    bundle: Path = typer.Argument(..., help="Trace bundle directory."),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    k: int | None = typer.Option(None, "--k", help="Cut-off (default: the bundle's k)."),
    runs: list[str] | None = typer.Option(
        None, "--runs", help="Only these runs (repeat or comma-separate)."
    ),
    rule: str = typer.Option(
        "both",
        "--rule",
        help="both: Source and Canonical both give credit (the paper's Section 4.4); "
        "either: Source or Canonical does (its Section 3.3). Recorded with the cases' "
        "version.",
    ),
    replace_stale: bool = typer.Option(False, "--replace-stale", help=REPLACE_STALE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Find contested credits (Raw misses in the top k, Source and Canonical credited;
    --rule either: Source or Canonical). The cases record the bundle version they are
    of (a fingerprint of what defines them, the rule included); a bundle that gives
    another version than the workspace holds is an error unless --replace-stale."""
    from tiap.cases.extract import check_extract, extract_cases, rule_named
    from tiap.cases.workspace import Workspace
    from tiap.limits import check_k
    from tiap.traces.bundle import read_bundle

    contested_rule = rule_named(rule)
    if k is not None:
        check_k("--k", k)
    b = read_bundle(bundle)
    for warning in b.warnings:
        echo(f"tiap: warning: {warning}", err=True)
    check_extract(b, k=k, runs=_runs(runs))  # before the workspace is opened (or created)
    with Workspace(db) as ws:
        report = extract_cases(
            b, ws, k=k, runs=_runs(runs), rule=contested_rule, replace_stale=replace_stale
        )
    if as_json:
        display.json_out(report.model_dump(mode="json"))
        return
    display.print_extract_report(report, db)


@app.command("from-qrels")
def from_qrels(
    source: Path = typer.Argument(
        ...,
        help="An LMEB/BEIR task directory (queries.jsonl, corpus.jsonl, qrels.tsv), a tree "
        "of them (each a task named by its path), or a trace bundle.",
    ),
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    per_dataset: int = typer.Option(
        100, "--per-dataset", help="Annotated pairs drawn per dataset (stratified by grade)."
    ),
    seed: int = typer.Option(1337, "--seed", help="Seed of the draw within each query."),
    negatives: int = typer.Option(
        0,
        "--negatives",
        help="Also draw up to N top-ranked documents per dataset that the qrels give no "
        "positive grade (needs --run).",
    ),
    run: str | None = typer.Option(
        None,
        "--run",
        help="The run for --negatives: a TREC or JSONL run file (looked up in each task "
        "directory, one level up, then as given), or a bundle's run by name.",
    ),
    group_by: str = typer.Option(
        "dataset",
        "--group-by",
        help="What a dataset is for --per-dataset and --negatives: LMEB's dataset "
        "('dataset': in a tree Type/Dataset/Task, a dataset's tasks together) or each task "
        "('task'). Recorded with the cases.",
    ),
    name: str = typer.Option("qrels", "--name", help="Name of the subset of drawn pairs."),
    replace: bool = typer.Option(False, "--replace", help="Replace a subset of that name."),
    replace_stale: bool = typer.Option(False, "--replace-stale", help=REPLACE_STALE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the counts as JSON."),
) -> None:
    """Annotated (query, document) pairs as cases of kind qrels, for auditing relevance
    labels (deterministic, stratified by grade, spread over queries), stored as a subset."""
    from tiap.cases.from_qrels import check_options, draw_qrels, store_qrels
    from tiap.cases.qrels_groups import check_group_by
    from tiap.cases.workspace import Workspace

    check_options(per_dataset, seed, negatives, run)
    grouping = check_group_by("--group-by", group_by)
    # drawn (the source and the run read) before the workspace is opened: bad input creates none
    cases, drawn = draw_qrels(
        source,
        per_dataset=per_dataset,
        seed=seed,
        negatives=negatives,
        run=run,
        subset=name,
        group_by=grouping,
    )
    with Workspace(db) as ws:
        report = store_qrels(ws, cases, drawn, replace=replace, replace_stale=replace_stale)
    if as_json:
        display.json_out(report.model_dump(mode="json"))
        return
    display.print_qrels_report(report, db)


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
    kind: str | None = typer.Option(
        None,
        "--kind",
        help="Draw from cases of this kind (contested, qrels or answer); needed when the "
        "workspace holds several.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the subset as JSON."),
) -> None:
    """Draw a stratified validation subset (by rank bucket; qrels pairs by dataset and
    grade; answers by run and question type) with a reviewer overlap."""
    from tiap.cases.sample import check_replace, default_overlap, sample_subset
    from tiap.cases.workspace import Workspace
    from tiap.errors import TiapError
    from tiap.limits import check_cases, check_seed

    check_cases("--n", n)
    if overlap is not None:
        check_cases("--overlap", overlap, minimum=0)
        if overlap > n:
            raise TiapError(f"--overlap ({overlap}) cannot exceed --n ({n})")
    check_seed("--seed", seed)
    with Workspace(db, create=False) as ws:
        check_replace(ws, name, replace=replace, force=force)
        result = sample_subset(
            ws,
            name=name,
            n=n,
            overlap=default_overlap(n) if overlap is None else overlap,
            seed=seed,
            from_runs=_runs(from_runs),
            replace=replace,
            kind=_kind(kind),
        )
    if as_json:
        display.json_out(result.model_dump(mode="json"))
        return
    display.print_sample_result(result)


@app.command("list")
def list_cases(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    subset: str | None = typer.Option(None, "--subset", help="Only the cases of this subset."),
    runs: list[str] | None = typer.Option(None, "--runs", help="Only these runs."),
    kind: str | None = typer.Option(None, "--kind", help=KIND_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON Lines, one case a line."),
) -> None:
    """List cases (a subset's own order, else by kind, run and query)."""
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        cases = ws.cases(subset=subset, runs=_runs(runs), kind=_kind(kind))
        overlap = set(ws.overlap_ids(subset)) if subset else set()
    if as_json:
        for c in cases:
            echo_json(c.model_dump_json())
        return
    display.print_case_table(cases, overlap)


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
        display.json_out(
            {
                "case": case.model_dump(mode="json"),
                "labels": [lab.model_dump(mode="json", exclude_none=True) for lab in labels],
            }
        )
        return
    display.print_case(case, labels)


@app.command("subsets")
def subsets(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the named subsets of a workspace with their parameters."""
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        stale = set(ws.stale_subsets())
        rows: list[dict[str, Any]] = []
        for name in ws.subsets():
            record = ws.subset(name)
            rows.append(
                {
                    "name": name,
                    "size": len(ws.case_ids(subset=name, include_stale=True)),
                    "overlap": len(ws.overlap_ids(name, include_stale=True)),
                    "params": record.params,
                    "bundle_version": record.bundle_fingerprint,
                    "stale": name in stale,
                }
            )
    if as_json:
        display.json_out(rows)
        return
    if not rows:
        echo("no subsets (draw one with 'tiap cases sample')")
    for row in rows:
        p = row["params"]
        runs = ",".join(p.get("from_runs") or []) or "all runs"
        stale_note = "; stale: draw it again" if row["stale"] else ""
        echo(
            f"{row['name']}: {row['size']} cases, {row['overlap']} in overlap "
            f"(kind={p.get('kind', '?')}, seed={p.get('seed', '?')}, from {runs}"
            f"{stale_note})"
        )


@app.command("versions")
def versions(
    db: Path = typer.Option(..., "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the bundle versions the workspace's cases have been of (current and
    retired), and how many retired case versions it keeps."""
    from tiap.cases.fingerprint import short
    from tiap.cases.workspace import Workspace

    with Workspace.open_readonly(db) as ws:
        records = ws.bundle_versions()
        retired: dict[str, int] = {}
        for v in ws.retired_case_versions():
            key = v.bundle_fingerprint or ""
            retired[key] = retired.get(key, 0) + 1
    if as_json:
        display.json_out(
            {
                "versions": [r.model_dump(mode="json") for r in records],
                "retired_cases": retired,
            }
        )
        return
    if not records:
        echo("no bundle version recorded (extract the cases with this tiap to record one)")
    rows = [
        [
            r.scope,
            short(r.fingerprint),
            str(r.cases),
            r.created_at,
            r.retired_at or "current",
            str(retired.get(r.fingerprint, 0)),
            r.source or "",
        ]
        for r in records
    ]
    if rows:
        header = [
            "scope",
            "version",
            "cases",
            "recorded",
            "retired",
            "retired cases kept",
            "source",
        ]
        echo(display.table(header, rows, right={2, 5}))
    if retired.get(""):
        echo(f"{retired['']} retired cases were of no recorded version (an earlier tiap's)")


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
    echo(f"renamed {renamed} labels of {kind} '{old}' to '{new}' in {db}")
