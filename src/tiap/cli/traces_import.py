"""`tiap traces import DATASET`: a memory system's exports + the benchmark -> a trace bundle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tiap.cli.progress_display import progress_reporter
from tiap.cli.traces_common import (
    EVIDENCE,
    FORCE,
    GRANULARITY,
    KEEP_DUPLICATES,
    MAX_CHARS,
    OUT,
    QUIET,
    RUN_FORMAT,
    SCALE,
    check_choices,
    parse_pairs,
    write_result,
)
from tiap.errors import TiapError
from tiap.traces.dataset_registry import DATASETS

if TYPE_CHECKING:
    from tiap.traces.adapter_output import DatasetTraces
    from tiap.traces.imports import SystemExport

app = typer.Typer(
    help=(
        "Import an external memory system's exports (its memories with source links, and "
        "its search results per benchmark query) with the benchmark's file as a trace bundle: "
        "one store per system, one run per search export. A mapping (built in: mem0, jsonl; "
        "or a TOML file) says which fields hold what."
    ),
    no_args_is_help=True,
)

MEMORIES = typer.Option(
    ...,
    "--memories",
    "-m",
    help="A system's memories export as STORE=FILE (repeatable: one store per system).",
)
SEARCH = typer.Option(
    None,
    "--search",
    help="A search export as STORE=FILE (the run is named STORE) or STORE:RUN=FILE (repeatable).",
)
MAPPING = typer.Option(
    None,
    "--mapping",
    help="How to read the exports: mem0, jsonl or a TOML mapping file, for every store; "
    "or STORE=MAPPING for one store (repeatable).",
)
K = typer.Option(60, "--k", "-k", help="The bundle's default cut-off k (rankings are kept whole).")
WITH_RAW = typer.Option(
    False,
    "--with-raw",
    help="Add the benchmark's raw turns to every store as raw memories (the native-store "
    "layout), under their source ids.",
)


def _mappings(values: list[str] | None, stores: list[str]) -> dict[str, str]:
    default: str | None = None
    per_store: dict[str, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        if not sep:
            if default is not None:
                raise TiapError("--mapping: give one mapping for every store, or STORE=MAPPING")
            default = value
        elif name in per_store:
            raise TiapError(f"--mapping: store '{name}' given twice")
        else:
            per_store[name] = rest
    unknown = sorted(set(per_store) - set(stores))
    if unknown:
        raise TiapError(f"--mapping {unknown[0]}=...: no --memories {unknown[0]}=FILE")
    out: dict[str, str] = {}
    for store in stores:
        chosen = per_store.get(store, default)
        if chosen is None:
            raise TiapError(f"store '{store}' has no mapping: give --mapping mem0|jsonl|FILE.toml")
        out[store] = chosen
    return out


def _searches(values: list[str] | None, stores: list[str]) -> dict[str, dict[str, Path]]:
    out: dict[str, dict[str, Path]] = {s: {} for s in stores}
    runs: set[str] = set()
    for value in values or []:
        target, sep, path = value.partition("=")
        store, _, run = target.partition(":")
        if not sep or not store or not path:
            raise TiapError(f"--search '{value}': expected STORE=FILE or STORE:RUN=FILE")
        if store not in out:
            raise TiapError(f"--search {target}: no --memories {store}=FILE")
        run = run or store
        if run in runs:
            raise TiapError(f"--search: run '{run}' given twice (name runs with STORE:RUN=FILE)")
        if not Path(path).is_file():
            raise TiapError(f"--search {target}: {path}: file not found")
        runs.add(run)
        out[store][run] = Path(path)
    return out


def _systems(
    memories: list[str], search: list[str] | None, mapping: list[str] | None
) -> list[SystemExport]:
    from tiap.traces.imports import SystemExport, load_mapping

    files = parse_pairs("--memories", memories)
    mappings = _mappings(mapping, list(files))
    searches = _searches(search, list(files))
    return [
        SystemExport(
            name=store,
            memories=Path(path),
            mapping=load_mapping(mappings[store]),
            mapping_name=mappings[store],
            searches=searches[store],
        )
        for store, path in files.items()
    ]


def _inputs(benchmark: str, systems: list[SystemExport]) -> list[tuple[str, str | Path]]:
    """Every file an import reads: the benchmark's, and each system's exports and mapping."""
    out: list[tuple[str, str | Path]] = [("input", benchmark)]
    for s in systems:
        out.append((f"memories export of {s.name}", s.memories))
        out.extend((f"search export {run}", path) for run, path in s.searches.items())
        out.append((f"mapping of {s.name}", s.mapping_name))
    return out


def _import(
    read: Callable[[], DatasetTraces],
    what: str,
    out: Path,
    *,
    memories: list[str],
    search: list[str] | None,
    mapping: list[str] | None,
    with_raw: bool,
    k: int,
    run_format: str,
    force: bool,
    quiet: bool,
) -> None:
    from tiap.io import check_apart
    from tiap.traces.build import prepare_out_dir, summary_lines
    from tiap.traces.imports import import_bundle

    check_choices("conversation", run_format, k)
    systems = _systems(memories, search, mapping)
    check_apart(out, _inputs(what, systems))
    if not force:
        prepare_out_dir(out, force=False)
    with progress_reporter(quiet) as rep:
        with rep.step(f"reading {what}", None):
            ds = read()
        for line in summary_lines(ds):
            rep.message(line)
        result = import_bundle(ds, systems, with_raw=with_raw, k=k, reporter=rep)
        write_result(result, out, run_format, force, rep)


@app.command("locomo")
def import_locomo(
    path: Path = typer.Argument(..., help="locomo10.json (the benchmark the system ran on)."),
    out: Path = OUT,
    memories: list[str] = MEMORIES,
    search: list[str] | None = SEARCH,
    mapping: list[str] | None = MAPPING,
    with_raw: bool = WITH_RAW,
    keep_duplicates: bool = KEEP_DUPLICATES,
    k: int = K,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """Exports of a system run on LoCoMo (sources conv-26:D1:3, queries conv-26:q37)."""
    _import(
        lambda: DATASETS["locomo"].load(path, keep_duplicates=keep_duplicates),
        str(path),
        out,
        memories=memories,
        search=search,
        mapping=mapping,
        with_raw=with_raw,
        k=k,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@app.command("longmemeval")
def import_longmemeval(
    path: Path = typer.Argument(..., help="The LongMemEval file the system ran on."),
    out: Path = OUT,
    memories: list[str] = MEMORIES,
    search: list[str] | None = SEARCH,
    mapping: list[str] | None = MAPPING,
    with_raw: bool = WITH_RAW,
    granularity: str = GRANULARITY,
    evidence: str = EVIDENCE,
    k: int = K,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """Exports of a system run on LongMemEval (sources QID:SESSION:N, queries QID)."""
    _import(
        lambda: DATASETS["longmemeval"].load(path, granularity=granularity, evidence=evidence),
        str(path),
        out,
        memories=memories,
        search=search,
        mapping=mapping,
        with_raw=with_raw,
        k=k,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@app.command("beam")
def import_beam(
    directory: Path = typer.Argument(..., help="The BEAM scale directory the system ran on."),
    out: Path = OUT,
    memories: list[str] = MEMORIES,
    search: list[str] | None = SEARCH,
    mapping: list[str] | None = MAPPING,
    with_raw: bool = WITH_RAW,
    scale: str | None = SCALE,
    max_chars: int = MAX_CHARS,
    k: int = K,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """Exports of a system run on BEAM (sources BEAM-100K-3:17, queries
    BEAM-100K-3:summarization:0)."""
    _import(
        lambda: DATASETS["beam"].load(directory, scale=scale, max_chars=max_chars),
        str(directory),
        out,
        memories=memories,
        search=search,
        mapping=mapping,
        with_raw=with_raw,
        k=k,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )


@app.command("lmeb")
def import_lmeb(
    directory: Path = typer.Argument(..., help="The LMEB/BEIR task directory the system ran on."),
    out: Path = OUT,
    memories: list[str] = MEMORIES,
    search: list[str] | None = SEARCH,
    mapping: list[str] | None = MAPPING,
    with_raw: bool = WITH_RAW,
    k: int = K,
    run_format: str = RUN_FORMAT,
    force: bool = FORCE,
    quiet: bool = QUIET,
) -> None:
    """Exports of a system run on LMEB/BEIR data (sources are the corpus ids)."""
    _import(
        lambda: DATASETS["lmeb"].load(directory),
        str(directory),
        out,
        memories=memories,
        search=search,
        mapping=mapping,
        with_raw=with_raw,
        k=k,
        run_format=run_format,
        force=force,
        quiet=quiet,
    )
