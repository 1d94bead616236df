"""Dataset -> trace bundle: stores with lineage, baseline runs, and the build report.

:func:`build_bundle` takes a dataset read by an adapter (:mod:`tiap.traces.locomo`,
:mod:`~tiap.traces.longmemeval`, :mod:`~tiap.traces.lmeb`), builds the requested
stores, ranks every store with every requested retriever (one run per
``(retriever, store)``, named ``<retriever>-<store>``), optionally attaches
existing run files, and returns the :class:`~tiap.traces.bundle.Bundle` with its
:class:`~tiap.traces.report.BuildReport`. :func:`write_build` writes both.
Progress and one-line summaries go to a :class:`tiap.progress.Reporter` (silent
by default).
"""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tiap.errors import InputError, TiapError
from tiap.io import iter_jsonl, write_json
from tiap.progress import NoReporter, Reporter
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.bundle import (
    CONFIG_FILE,
    QUERIES_FILE,
    REPORT_FILE,
    RUNS_DIR,
    SOURCES_FILE,
    STORES_DIR,
    Bundle,
    NumberedEntry,
    check_trec_ids,
    exclusion_reasons,
    write_bundle,
)
from tiap.traces.models import BundleConfig, RunConfig, RunEntry, cutoff
from tiap.traces.report import BuildReport, IssueLog
from tiap.traces.retrieve import make_retriever, rank_store, require_retrievers, scope_groups
from tiap.traces.retrieve.retriever import RankTimings, Retriever
from tiap.traces.stores import BuiltStores, build_stores, default_stores
from tiap.traces.trec import TREC_SUFFIXES, read_trec_entries

_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BuildOptions(BaseModel):
    """What to build from a dataset."""

    model_config = ConfigDict(extra="forbid")

    stores: list[str] | None = Field(default=None, description="None: every store available")
    retrievers: list[str] = Field(default_factory=lambda: ["bm25"])
    k: int = 60
    scope: Literal["conversation", "global"] = "conversation"
    runs: dict[str, Path] = Field(default_factory=dict, description="attach run files: name->path")
    name: str | None = None

    @field_validator("k", mode="before")
    @classmethod
    def _cutoff(cls, value: object) -> int:
        return cutoff(value)


@dataclass
class BuildResult:
    bundle: Bundle
    report: BuildReport
    #: seconds per phase: read, parse, index, retrieve, assemble (write adds "write")
    timings: dict[str, float] = field(default_factory=dict)


def _fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in counts.items())


def _attach_run(
    name: str, path: Path, store: str, ds: DatasetTraces, known: set[str]
) -> tuple[list[RunEntry], int]:
    if not _RUN_NAME.fullmatch(name):
        raise TiapError(f"run name '{name}' may use only letters, digits, '.', '_' and '-'")
    if path.suffix in TREC_SUFFIXES:
        numbered = [NumberedEntry(e.line, e.entry, e.doc_lines) for e in read_trec_entries(path)]
    else:
        numbered = [NumberedEntry(line, e) for line, e in iter_jsonl(path, RunEntry)]
    kept_ids = {q.query_id for q in ds.queries}
    excluded = set(ds.excluded_queries)
    entries: list[RunEntry] = []
    dropped = 0
    seen: dict[str, int | None] = {}
    for n in numbered:
        e = n.entry
        if e.query_id in seen:
            first = seen[e.query_id]
            at = f" (first at line {first})" if first is not None else ""
            raise InputError(path, f"duplicate query id '{e.query_id}'{at}", n.line)
        seen[e.query_id] = n.line
        if e.query_id in excluded:
            dropped += 1
            continue
        if e.query_id not in kept_ids:
            raise InputError(path, f"unknown query id '{e.query_id}'", n.line)
        for mid in e.ranking:
            if mid not in known:
                raise InputError(
                    path,
                    f"unknown memory id '{mid}' in the ranking of '{e.query_id}'",
                    n.line_of(mid),
                )
        entries.append(e)
    return entries, dropped


def build_bundle(
    ds: DatasetTraces,
    options: BuildOptions | None = None,
    reporter: Reporter | None = None,
) -> BuildResult:
    """Stores, runs and report for a dataset (nothing is written). A dataset left
    with no query is an error saying why its queries were excluded."""
    opts = options or BuildOptions()
    if not ds.queries:
        raise TiapError(no_queries_problem(ds))
    require_retrievers(opts.retrievers)  # a missing extra is found before the work
    rep = reporter or NoReporter()
    timings: dict[str, float] = {"parse": 0.0, "index": 0.0, "retrieve": 0.0, "assemble": 0.0}
    store_names = opts.stores or default_stores(ds)
    retrievers = [make_retriever(r) for r in dict.fromkeys(opts.retrievers)]
    log = ds.log.copy()

    t0 = time.perf_counter()
    built = _build_stores(ds, store_names, log, rep)
    timings["parse"] = time.perf_counter() - t0

    runs = _Runs()
    rank_t = _rank_stores(ds, built, retrievers, opts, runs, rep)
    timings["index"], timings["retrieve"] = rank_t.index, rank_t.retrieve

    t2 = time.perf_counter()
    raw_store = next((s for s in store_names if s == "raw"), store_names[0])
    _attach_runs(ds, built, raw_store, opts.runs, runs, log, rep)
    bundle = Bundle(
        config=_bundle_config(ds, opts, built, runs.configs),
        queries=list(ds.queries),
        sources={s.source_id: s for s in ds.sources},
        stores=built.memories,
        runs=runs.entries,
    )
    report = _build_report(ds, opts, built, retrievers, runs.entries, log)
    timings["assemble"] = time.perf_counter() - t2
    return BuildResult(bundle=bundle, report=report, timings=timings)


@dataclass
class _Runs:
    """The bundle's runs as they are built: entries and configuration per run."""

    entries: dict[str, list[RunEntry]] = field(default_factory=dict)
    configs: dict[str, RunConfig] = field(default_factory=dict)


def _build_stores(
    ds: DatasetTraces, store_names: list[str], log: IssueLog, rep: Reporter
) -> BuiltStores:
    """The requested stores; turns the parser found no fact in are logged."""
    built = build_stores(ds, store_names)
    for tid in built.turns_without_facts:
        log.add("parser_no_facts", tid)
    for name, mems in built.memories.items():
        derived = sum(not m.raw for m in mems)
        rep.message(f"store {name}: {len(mems):,} memories ({derived:,} derived)")
    return built


def _rank_stores(
    ds: DatasetTraces,
    built: BuiltStores,
    retrievers: list[Retriever],
    opts: BuildOptions,
    runs: _Runs,
    rep: Reporter,
) -> RankTimings:
    """One run per (retriever, store), named ``<retriever>-<store>``: every query
    ranked within its scope group."""
    rank_t = RankTimings()
    for retriever in retrievers:
        texts = [m.text for mems in built.memories.values() for m in mems]
        unique = len(dict.fromkeys(texts))
        t1 = time.perf_counter()
        with rep.step(f"{retriever.name}: preparing {unique:,} texts", unique) as advance:
            retriever.prepare(texts, advance)
        rank_t.index += time.perf_counter() - t1
        for store, mems in built.memories.items():
            run = f"{retriever.name}-{store}"
            groups = scope_groups(mems, ds.queries, opts.scope, ds.candidate_pools)
            with rep.step(f"{run}: ranking {len(ds.queries):,} queries", len(ds.queries)) as adv:
                entries = rank_store(retriever, mems, ds.queries, opts.k, groups, adv, rank_t)
            config: dict[str, Any] = {"k": opts.k, "scope": opts.scope, **retriever.config()}
            config.update(built.configs[store].config)
            runs.entries[run] = entries
            runs.configs[run] = RunConfig(store=store, retriever=retriever.name, config=config)
            empty = sum(not e.ranking for e in entries)
            rep.message(
                f"run {run}: {len(entries):,} queries ranked over {len(groups):,} pools"
                + (f", {empty:,} with no candidate" if empty else "")
            )
    return rank_t


def _attach_runs(
    ds: DatasetTraces,
    built: BuiltStores,
    raw_store: str,
    files: dict[str, Path],
    runs: _Runs,
    log: IssueLog,
    rep: Reporter,
) -> None:
    """Existing run files over the raw store, checked against its memories."""
    for name, path in files.items():
        if name in runs.entries:
            raise TiapError(f"attached run '{name}' has the name of a built run")
        known = {m.memory_id for m in built.memories[raw_store]}
        entries, dropped = _attach_run(name, path, raw_store, ds, known)
        if dropped:
            log.add("run_query_excluded", name, value=str(path.name), result=dropped)
        runs.entries[name] = entries
        runs.configs[name] = RunConfig(
            store=raw_store, retriever="external", config={"file": path.name}
        )
        rep.message(f"run {name}: {len(entries):,} queries attached from {path.name}")


def _bundle_config(
    ds: DatasetTraces, opts: BuildOptions, built: BuiltStores, run_configs: dict[str, RunConfig]
) -> BundleConfig:
    """``bundle.toml``: the dataset, its input, the stores and the runs."""
    return BundleConfig(
        name=opts.name,
        dataset=ds.dataset,
        memory_type=ds.memory_type,
        k=opts.k,
        description=ds.description,
        metadata={
            "input_file": ds.input_file,
            "input_sha256": ds.input_sha256,
            "scope": opts.scope,
            **ds.options,
        },
        stores=built.configs,
        runs=run_configs,
    )


def _build_report(
    ds: DatasetTraces,
    opts: BuildOptions,
    built: BuiltStores,
    retrievers: list[Retriever],
    runs: dict[str, list[RunEntry]],
    log: IssueLog,
) -> BuildReport:
    """``build_report.json``: options, counts, and every rule the data needed."""
    return BuildReport(
        dataset=ds.dataset,
        input_file=ds.input_file,
        input_sha256=ds.input_sha256,
        options={
            **ds.options,
            "stores": list(built.memories),
            "retrievers": [r.name for r in retrievers],
            "k": opts.k,
            "scope": opts.scope,
            "attached_runs": {n: p.name for n, p in opts.runs.items()},
        },
        counts=dict(ds.counts),
        categories=dict(sorted(Counter(q.category or "" for q in ds.queries).items())),
        stores={n: len(m) for n, m in built.memories.items()},
        runs={n: len(e) for n, e in runs.items()},
        rules=log.rules(),
        issue_counts=dict(sorted(log.counts.items())),
        excluded_queries=list(ds.excluded_queries),
        issues=list(log.issues),
    )


_BUNDLE_FILES = (CONFIG_FILE, QUERIES_FILE, SOURCES_FILE, REPORT_FILE)


def prepare_out_dir(out: Path, force: bool) -> None:
    """Refuse to write into a non-empty directory unless ``force``; then clear old bundle files."""
    if out.exists() and not out.is_dir():
        raise TiapError(f"{out}: exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise TiapError(f"{out}: directory exists and is not empty (use --force to replace it)")
    for name in _BUNDLE_FILES:
        (out / name).unlink(missing_ok=True)
    for sub in (STORES_DIR, RUNS_DIR):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)


def write_build(
    result: BuildResult, out: str | Path, *, run_format: str = "jsonl", force: bool = False
) -> Path:
    """Write the bundle and ``build_report.json`` into ``out``."""
    root = Path(out)
    t0 = time.perf_counter()
    if run_format == "trec":
        check_trec_ids(result.bundle)  # before anything in ``out`` is replaced
    prepare_out_dir(root, force)
    write_bundle(result.bundle, root, run_format=run_format)
    write_json(root / REPORT_FILE, result.report.model_dump(mode="json", exclude_none=True))
    result.timings["write"] = time.perf_counter() - t0
    return root


def no_queries_problem(ds: DatasetTraces) -> str:
    """Why a dataset has no query to build a bundle from."""
    n = len(ds.excluded_queries)
    if not n:
        return f"{ds.input_file}: no queries to build a bundle from (the input has none)"
    reasons = exclusion_reasons(ds.excluded_queries, ds.log.issues)
    return (
        f"{ds.input_file}: no queries to build a bundle from: all {n:,} were excluded ({reasons})"
    )


def summary_lines(ds: DatasetTraces) -> list[str]:
    """What reading the dataset gave, for the build log (the rules applied are
    listed once the bundle is built: :func:`rules_line`)."""
    lines = [f"{ds.dataset}: {_fmt_counts(ds.counts)}"]
    for family, mems in ds.derived.items():
        lines.append(f"{family}: {len(mems):,} derived memories read")
    return lines


def rules_line(report: BuildReport) -> str | None:
    """Every rule the build applied, with its count (reading the dataset and building
    the stores and runs, e.g. ``parser_no_facts``): they add up to the report's total."""
    if not report.issue_counts:
        return None
    return "rules applied: " + ", ".join(f"{k} {v:,}" for k, v in report.issue_counts.items())
