"""`tiap answers extract --reader MODEL`: answers written by a reader model
(:mod:`tiap.judge.reader`), printed and written into the run file."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import typer

from tiap.cli.output import echo
from tiap.errors import Interrupted, TiapError
from tiap.text import inert

#: exit status of a run left incomplete (budget, failed replies)
EXIT_INCOMPLETE = 3
INTERRUPT_HINT = (
    "every reply received is stored in the workspace; nothing was written to the run file; "
    "run the same command again to go on (stored replies are not asked again)"
)


@dataclass(frozen=True)
class ReaderOptions:
    """The reader's options as given on the command line (checked by :func:`check`)."""

    reader: str
    db: Path | None
    api_base: str | None
    api_key_env: str | None
    route: str
    concurrency: int
    max_tokens: int
    temperature: float
    seed: int | None
    timeout: float
    input_cost_per_mtok: float | None
    output_cost_per_mtok: float | None
    max_cost: float | None
    partial: bool
    quiet: bool


#: reader-only options that are set when they differ from these (for the extractive path)
READER_DEFAULTS: dict[str, Any] = {
    "db": None,
    "api_base": None,
    "api_key_env": None,
    "route": "auto",
    "concurrency": 4,
    "max_tokens": 100,
    "temperature": 0.0,
    "seed": None,
    "timeout": 60.0,
    "input_cost_per_mtok": None,
    "output_cost_per_mtok": None,
    "max_cost": None,
    "partial": False,
}


def refuse_reader_options(given: dict[str, Any]) -> None:
    """Without ``--reader``: a reader-only option given is an error."""
    for name, default in READER_DEFAULTS.items():
        if given[name] != default:
            option = "--" + name.replace("_", "-")
            raise TiapError(f"{option} is a reader setting: it needs --reader MODEL")


def check(opts: ReaderOptions) -> Path:
    """Every number where it enters (one line, exit 2 when out of range); the
    workspace's path."""
    from tiap.limits import (
        MAX_CONCURRENCY,
        MAX_SECONDS,
        MAX_TOKENS,
        check_cost,
        check_float,
        check_int,
        check_seed,
    )

    if opts.db is None:
        raise TiapError("--reader needs --db PATH: the workspace its calls are stored in")
    check_int("--concurrency", opts.concurrency, minimum=1, maximum=MAX_CONCURRENCY)
    check_int("--max-tokens", opts.max_tokens, minimum=1, maximum=MAX_TOKENS)
    check_float("--temperature", opts.temperature, minimum=0.0, maximum=2.0)
    check_float("--timeout", opts.timeout, minimum=0.001, maximum=MAX_SECONDS)
    if opts.seed is not None:
        check_seed("--seed", opts.seed)
    for name, value in (
        ("--input-cost-per-mtok", opts.input_cost_per_mtok),
        ("--output-cost-per-mtok", opts.output_cost_per_mtok),
        ("--max-cost", opts.max_cost),
    ):
        if value is not None:
            check_cost(name, value)
    if (opts.input_cost_per_mtok is None) != (opts.output_cost_per_mtok is None):
        raise TiapError("give both --input-cost-per-mtok and --output-cost-per-mtok, or neither")
    return opts.db


def continue_command(bundle: Path, run: str, top: int, replace: bool, opts: ReaderOptions) -> str:
    """The same command, with every option that decides what it asks, shell-quoted."""
    args = ["tiap", "answers", "extract", str(bundle), "--run", run, "--top", str(top)]
    if replace:
        args.append("--replace")
    args += ["--reader", opts.reader]
    for f in fields(opts):
        if f.name in ("reader", "quiet"):
            continue
        value = getattr(opts, f.name)
        if f.name in READER_DEFAULTS and value == READER_DEFAULTS[f.name]:
            continue
        option = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            args.append(option)
        else:
            args += [option, repr(value) if isinstance(value, float) else str(value)]
    return shlex.join(args)


def read(bundle_dir: Path, run: str, top: int, replace: bool, opts: ReaderOptions) -> None:
    """Plan, call, print, and write the answers when complete (or ``--partial``)."""
    from tiap.cases import Workspace
    from tiap.judge.reader import plan_reader, run_reader
    from tiap.judge.reader_prompt import ReaderSettings
    from tiap.traces.bundle import read_bundle
    from tiap.traces.extractive import run_file

    db = check(opts)
    settings = ReaderSettings(
        model=opts.reader,
        api_base=opts.api_base,
        api_key_env=opts.api_key_env,
        route=opts.route,
        concurrency=opts.concurrency,
        max_tokens=opts.max_tokens,
        temperature=opts.temperature,
        seed=opts.seed,
        timeout_s=opts.timeout,
        input_cost_per_mtok=opts.input_cost_per_mtok,
        output_cost_per_mtok=opts.output_cost_per_mtok,
    )
    loaded = read_bundle(bundle_dir)
    run_file(loaded, run)  # a TREC run is refused before anything is asked
    with Workspace(db) as ws:
        plan = plan_reader(ws, loaded, run, settings, top=top, replace=replace)
        from tiap.cli.progress_display import progress_reporter

        try:
            with progress_reporter(opts.quiet) as reporter:
                result = run_reader(ws, plan, max_cost=opts.max_cost, reporter=reporter)
        except KeyboardInterrupt:
            raise Interrupted(INTERRUPT_HINT) from None
    _report(result)
    if result.error is not None:
        raise TiapError(f"the reader stopped: {result.error}")
    _finish(loaded, result, opts.partial, continue_command(bundle_dir, run, top, replace, opts))


def _report(result: Any) -> None:
    cost = f"${result.cost_usd:,.4f}" + (
        f" (+{result.cost_unknown} calls unpriced)" if result.cost_unknown else ""
    )
    echo(
        f"reader {inert(result.plan.settings.model)}: {len(result.answers):,} of "
        f"{result.n_queries:,} queries answered ({result.cache_hits:,} stored replies, "
        f"{result.calls:,} calls, {result.retries:,} retries, {cost})"
    )


def _finish(loaded: Any, result: Any, partial: bool, come_back: str) -> None:
    from tiap.traces.extractive import Extracted, write_answers

    plan = result.plan
    if result.complete or partial:
        entries = result.entries()
        extracted = Extracted(
            run=plan.bundle_run,
            entries=entries,
            n_answers=len(result.answers),
            n_empty=0,
            top=plan.top,
        )
        path = write_answers(loaded, extracted, method=plan.method)
        echo(f"wrote {len(result.answers):,} answers to {inert(str(path))}")
        echo(f"method: {inert(plan.method)}")
    if result.complete:
        return
    why = []
    if result.failures:
        counts = ", ".join(f"{k} {v:,}" for k, v in result.failure_counts.items())
        why.append(
            f"{len(result.failures):,} without an answer ({counts}; failed calls are asked "
            "again, a stored refusal or empty reply is given again)"
        )
    if result.not_asked:
        stop = "stopped by the budget" if result.stopped_by_budget else "stopped"
        why.append(f"{result.not_asked:,} not asked ({stop})")
    kept = (
        "the answered ones were written, the others have none"
        if partial
        else "nothing was written to the run file (--partial writes the answered ones)"
    )
    echo(
        f"tiap: {result.missing:,} of {result.n_queries:,} answers missing: {'; '.join(why)}; "
        f"{kept}; every reply is stored: to go on, {come_back}",
        err=True,
    )
    raise typer.Exit(EXIT_INCOMPLETE)
