"""What the `tiap traces` commands share: options, writing a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tiap.cli.output import echo
from tiap.errors import TiapError
from tiap.limits import check_k
from tiap.traces.dataset_registry import BEAM_MAX_CHARS, DATASETS

if TYPE_CHECKING:
    from tiap.progress import Reporter
    from tiap.traces.build import BuildResult

OUT = typer.Option(..., "--out", "-o", help="Bundle directory to write.")
RETRIEVER = typer.Option(
    None,
    "--retriever",
    "-r",
    help="Retriever (repeatable): bm25 (the default; bm25s), dense (all-MiniLM-L6-v2, extra "
    "'dense'), or none to build the stores without runs.",
)
K = typer.Option(60, "--k", "-k", help="Rankings keep the top k memories.")
SCOPE = typer.Option(
    "conversation",
    "--scope",
    help="Candidate pool of a query: its own conversation/haystack ('conversation') "
    "or the whole store ('global').",
)
RUN_FORMAT = typer.Option("jsonl", "--run-format", help="Write runs as jsonl or trec.")
FORCE = typer.Option(False, "--force", help="Replace an existing bundle in --out.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress (bars or lines) or step summaries.")
KEEP_DUPLICATES = typer.Option(
    False, "--keep-duplicates", help="Keep exact repeats of a QA item (listed either way)."
)
GRANULARITY = typer.Option(
    "turn", "--granularity", "-g", help="Sources are turns ('turn') or sessions ('session')."
)
EVIDENCE = typer.Option(
    "has-answer",
    "--evidence",
    "-e",
    help="Evidence: has-answer (flagged turns; questions with none are excluded), "
    "answer-sessions (answer_session_ids), or has-answer-or-sessions (flagged turns, "
    "else the answer sessions).",
)
SCALE = typer.Option(
    None, "--scale", help="The scale (100K, 500K, 1M, 10M) when DIR is not named after it."
)


def _check_max_chars(value: int) -> int:
    from tiap.limits import MAX_TEXT_CHARS, check_int

    return check_int("--max-chars", value, minimum=0, maximum=MAX_TEXT_CHARS)


MAX_CHARS = typer.Option(
    BEAM_MAX_CHARS,
    "--max-chars",
    callback=_check_max_chars,
    help="Cut a message longer than this many characters (after runaway whitespace is "
    "collapsed) before indexing; 0: no cap.",
)


def store_option(dataset: str) -> Any:
    """``--store/-s`` with the stores ``dataset`` supports in its help."""
    info = DATASETS[dataset]
    return typer.Option(
        None,
        "--store",
        "-s",
        help=f"Store to build (repeatable): {info.stores_help}. "
        f"Default: {', '.join(info.default_stores)}.",
    )


def retrievers(values: list[str] | None) -> list[str]:
    """The ``-r`` values: default bm25; ``none`` alone means no runs. A retriever
    whose optional extra is missing is refused here, before any work."""
    from tiap.traces.retrieve import RETRIEVERS, require_retrievers

    chosen = list(values) if values else ["bm25"]
    if "none" in chosen:
        if len(chosen) > 1:
            raise TiapError("--retriever none cannot be combined with other retrievers")
        return []
    for name in chosen:
        if name not in RETRIEVERS:
            known = ", ".join((*RETRIEVERS, "none"))
            raise TiapError(f"unknown retriever '{name}' (known: {known})")
    require_retrievers(chosen)
    return chosen


def parse_pairs(option: str, values: list[str] | None, *, files: bool = True) -> dict[str, str]:
    """``NAME=VALUE`` options (each name once; with ``files`` the value must be a file)."""
    out: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise TiapError(f"{option} '{value}': expected NAME=PATH")
        if name in out:
            raise TiapError(f"{option}: name '{name}' given twice")
        if files and not Path(rest).is_file():
            raise TiapError(f"{option} {name}: {rest}: file not found")
        out[name] = rest
    return out


def check_choices(scope: str, run_format: str, k: int | None = None) -> None:
    """The options every build and import share (``k``: ``--k``, when given)."""
    if k is not None:
        check_k("--k", k)
    if scope not in ("conversation", "global"):
        raise TiapError(f"unknown scope '{scope}' (use conversation or global)")
    if run_format not in ("jsonl", "trec"):
        raise TiapError(f"unknown run format '{run_format}' (use jsonl or trec)")


def write_result(
    result: BuildResult, out: Path, run_format: str, force: bool, reporter: Reporter
) -> None:
    """Write the bundle and its report, and print one line saying what was written."""
    from tiap.traces.build import REPORT_FILE, rules_line, write_build

    with reporter.step(f"writing {out}", None):
        write_build(result, out, run_format=run_format, force=force)
    b, r = result.bundle, result.report
    rules = rules_line(r)
    if rules:
        reporter.message(rules)
    excluded = len(r.excluded_queries)
    echo(
        f"wrote {out}: {len(b.queries):,} queries, {len(b.sources):,} sources, "
        f"{len(b.stores)} stores, {len(b.runs)} runs; "
        f"{excluded:,} queries excluded, {sum(r.issue_counts.values()):,} rule applications "
        f"counted in {out / REPORT_FILE} ({len(r.issues):,} listed: every data quirk, "
        "examples of routine rules)"
    )
