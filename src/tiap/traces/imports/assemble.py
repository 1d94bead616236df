"""A benchmark plus a memory system's exports -> a trace bundle (one store per system).

:func:`import_bundle` takes a benchmark read by an adapter
(:class:`~tiap.traces.adapter_output.DatasetTraces`) and, per system, its memories
export and its search exports read through a mapping. Each system becomes a
store (its memories, with ``with_raw`` preceded by the benchmark's raw turns as
raw memories: the native-store layout), each search export a run on that
store. Lineage that does not resolve is counted and listed in the build report,
never dropped silently:

- a link that names no benchmark source is dropped (``import_link_unresolved``);
- a memory left with no link is kept, neither raw nor linked, so it is in no
  target (``import_memory_unlinked``; flagged raw, it is kept as not raw:
  ``import_raw_unlinked``);
- a ranked id that is not in the store is dropped from its ranking
  (``import_ranked_unknown``), a repeat is kept (``import_ranked_repeat``);
- results for a query the benchmark build excluded are dropped
  (``import_query_excluded``); an id that is no query of the benchmark is an error.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.errors import InputError, TiapError
from tiap.io import file_sha256
from tiap.progress import NoReporter, Reporter
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.build import BuildResult
from tiap.traces.bundle import Bundle
from tiap.traces.imports.exports import MemoryRecord, read_memories, read_search
from tiap.traces.imports.mapping import MISSING, ImportMapping, MemoriesMapping
from tiap.traces.models import BundleConfig, Memory, RunConfig, RunEntry, StoreConfig
from tiap.traces.report import BuildReport, IssueLog

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: counted per store (``<store>.<key>`` in the report's counts), always present
STORE_COUNTS = (
    "memories_read",
    "memories_linked",
    "memories_unlinked",
    "links_read",
    "links_unresolved",
    "raw_memories_added",
)
#: counted per run (``<run>.<key>``)
RUN_COUNTS = (
    "queries_ranked",
    "queries_without_results",
    "queries_excluded",
    "ranked_unknown",
    "ranked_repeat",
)


@dataclass
class SystemExport:
    """One memory system's exports: its memories and one search export per run."""

    name: str
    memories: Path
    mapping: ImportMapping
    mapping_name: str
    searches: dict[str, Path] = field(default_factory=dict)


class _Importer:
    def __init__(self, ds: DatasetTraces, log: IssueLog, with_raw: bool) -> None:
        self.ds = ds
        self.log = log
        self.with_raw = with_raw
        self.sources = {s.source_id: s for s in ds.sources}
        self.query_ids = {q.query_id for q in ds.queries}
        self.excluded = set(ds.excluded_queries)
        self.counts: dict[str, int] = {}

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def links(
        self, system: str, rec: MemoryRecord, mapping: MemoriesMapping
    ) -> tuple[list[str], list[str]]:
        """``(resolved source ids, the links that resolve to nothing)``; each bad link is logged."""
        no_conversation = "conversation" in mapping.template_fields and rec.conversation in (
            MISSING,
            None,
        )
        resolved: list[str] = []
        bad: list[tuple[str, str]] = []
        for value in rec.links:
            if isinstance(value, bool) or not isinstance(value, str | int):
                bad.append((str(value), "not a string or an integer"))
            elif no_conversation:
                bad.append((str(value), f"no '{mapping.conversation}' to fill {{conversation}}"))
            else:
                sid = mapping.source_id(value, rec.conversation)
                if sid not in self.sources:
                    bad.append((sid, "no such source in the benchmark"))
                elif sid not in resolved:
                    resolved.append(sid)
        for value, why in bad:
            self.log.add(
                "import_link_unresolved", f"{system}:{rec.memory_id}", value=value, detail=why
            )
        self.count(f"{system}.links_read", len(rec.links))
        self.count(f"{system}.links_unresolved", len(bad))
        return resolved, [v for v, _ in bad]

    def store(self, system: SystemExport) -> list[Memory]:
        mapping = system.mapping.memories
        records = read_memories(system.memories, mapping)
        for key in STORE_COUNTS:
            self.count(f"{system.name}.{key}", 0)
        out: list[Memory] = []
        if self.with_raw:
            out.extend(self.ds.raw_memories())
            self.count(f"{system.name}.raw_memories_added", len(out))
        first: dict[str, str] = {}
        for rec in records:
            at = f"line {rec.line}" if rec.line is not None else rec.where
            if rec.memory_id in first:
                raise InputError(
                    system.memories,
                    f"{'' if rec.line else rec.where + ': '}duplicate memory id "
                    f"'{rec.memory_id}' (first at {first[rec.memory_id]})",
                    rec.line,
                )
            if self.with_raw and rec.memory_id in self.sources:
                raise InputError(
                    system.memories,
                    f"{'' if rec.line else rec.where + ': '}memory id '{rec.memory_id}' is a "
                    "benchmark source id, which --with-raw uses for the raw turns",
                    rec.line,
                )
            first[rec.memory_id] = at
            out.append(self.memory(system.name, rec, mapping))
        self.count(f"{system.name}.memories_read", len(records))
        return out

    def memory(self, system: str, rec: MemoryRecord, mapping: MemoriesMapping) -> Memory:
        links, bad = self.links(system, rec, mapping)
        raw = bool(rec.raw)
        canonical = rec.canonical if rec.canonical is not None else not raw
        item = f"{system}:{rec.memory_id}"
        meta: dict[str, Any] = {}
        if bad:
            meta["unresolved_links"] = bad
        if not links:
            why = "no source link" if not rec.links else "no source link resolves"
            self.log.add("import_memory_unlinked", item, detail=why)
            self.count(f"{system}.memories_unlinked")
            if raw:
                self.log.add("import_raw_unlinked", item)
                raw = False
        else:
            self.count(f"{system}.memories_linked")
        convs = {self.sources[s].conversation_id for s in links}
        return Memory(
            memory_id=rec.memory_id,
            text=rec.text,
            source_ids=links,
            raw=raw,
            canonical=canonical,
            conversation_id=convs.pop() if len(convs) == 1 else None,
            metadata=meta,
        )

    def run(
        self, run: str, system: str, path: Path, mapping: ImportMapping, known: set[str]
    ) -> list[RunEntry]:
        entries: list[RunEntry] = []
        first: dict[str, str] = {}
        for key in RUN_COUNTS:
            self.count(f"{run}.{key}", 0)
        for e in read_search(path, mapping.search):
            where = "" if e.line is not None else f"{e.where}: "
            if e.query_id in first:
                raise InputError(
                    path,
                    f"{where}query '{e.query_id}' listed twice (first at {first[e.query_id]})",
                    e.line,
                )
            first[e.query_id] = f"line {e.line}" if e.line is not None else e.where
            if e.query_id not in self.query_ids:
                if e.query_id in self.excluded:
                    self.log.add("import_query_excluded", f"{run}:{e.query_id}", value=path.name)
                    self.count(f"{run}.queries_excluded")
                    continue
                raise InputError(
                    path,
                    f"{where}unknown query id '{e.query_id}' (no query of the benchmark)",
                    e.line,
                )
            ranking: list[str] = []
            scores: list[float | None] = []
            seen: set[str] = set()
            for mid, score in zip(e.ranking, e.scores, strict=True):
                item = f"{run}:{e.query_id}"
                if mid not in known:
                    self.log.add(
                        "import_ranked_unknown", item, value=mid, detail=f"not in {system}"
                    )
                    self.count(f"{run}.ranked_unknown")
                    continue
                if mid in seen:
                    self.log.add("import_ranked_repeat", item, value=mid)
                    self.count(f"{run}.ranked_repeat")
                seen.add(mid)
                ranking.append(mid)
                scores.append(score)
            kept = [s for s in scores if s is not None]
            if e.answer is not None:
                self.count(f"{run}.answers")
            entries.append(
                RunEntry(
                    query_id=e.query_id,
                    ranking=ranking,
                    scores=kept if len(kept) == len(ranking) else None,
                    answer=e.answer,
                )
            )
        self.count(f"{run}.queries_ranked", len(entries))
        self.count(f"{run}.queries_without_results", len(self.query_ids) - len(entries))
        return entries


def _check_names(systems: list[SystemExport]) -> None:
    runs: dict[str, str] = {}
    for s in systems:
        if not NAME.fullmatch(s.name):
            raise TiapError(f"store name '{s.name}' may use only letters, digits, '.', '_' and '-'")
        for run in s.searches:
            if not NAME.fullmatch(run):
                raise TiapError(f"run name '{run}' may use only letters, digits, '.', '_' and '-'")
            if run in runs:
                raise TiapError(f"run '{run}' is named twice (stores {runs[run]} and {s.name})")
            runs[run] = s.name
    names = [s.name for s in systems]
    dupes = sorted(n for n, c in Counter(names).items() if c > 1)
    if dupes:
        raise TiapError(f"store '{dupes[0]}' is given twice")
    if not systems:
        raise TiapError("nothing to import: give at least one memories export")


def store_line(store: str, counts: dict[str, int], with_raw: bool) -> str:
    """What reading a system's memories made, in one line."""
    line = (
        f"store {store}: {counts.get(f'{store}.memories_read', 0):,} memories read, "
        f"{counts.get(f'{store}.memories_unlinked', 0):,} without lineage, "
        f"{counts.get(f'{store}.links_unresolved', 0):,} links unresolved"
    )
    if with_raw:
        line += f", {counts.get(f'{store}.raw_memories_added', 0):,} raw turns added"
    return line


def run_line(run: str, counts: dict[str, int]) -> str:
    """What reading a search export made, in one line."""
    answers = counts.get(f"{run}.answers", 0)
    return (
        f"run {run}: {counts.get(f'{run}.queries_ranked', 0):,} queries ranked, "
        f"{counts.get(f'{run}.ranked_unknown', 0):,} ranked ids not in the store dropped"
        + (f", {answers:,} with an answer" if answers else "")
    )


def import_bundle(
    ds: DatasetTraces,
    systems: list[SystemExport],
    *,
    with_raw: bool = False,
    k: int = 60,
    name: str | None = None,
    reporter: Reporter | None = None,
) -> BuildResult:
    """The bundle and build report for ``ds`` with the systems' stores and runs;
    reading each export is a step of ``reporter``, and each store and run it made
    a message (silent by default)."""
    _check_names(systems)
    rep = reporter or NoReporter()
    log = ds.log.copy()
    imp = _Importer(ds, log, with_raw)
    stores: dict[str, list[Memory]] = {}
    runs: dict[str, list[RunEntry]] = {}
    store_cfg: dict[str, StoreConfig] = {}
    run_cfg: dict[str, RunConfig] = {}
    files: dict[str, Any] = {}
    for system in systems:
        with rep.step(f"reading {system.memories}", None):
            mems = imp.store(system)
        rep.message(store_line(system.name, imp.counts, with_raw))
        stores[system.name] = mems
        known = {m.memory_id for m in mems}
        layout = "the benchmark's raw turns + " if with_raw else ""
        store_cfg[system.name] = StoreConfig(
            description=f"{layout}memories exported from {system.name}",
            config={
                "file": system.memories.name,
                "mapping": system.mapping_name,
                "with_raw": with_raw,
            },
        )
        files[system.name] = {
            "memories": system.memories.name,
            "memories_sha256": file_sha256(system.memories),
            "mapping": system.mapping_name,
            "searches": {r: p.name for r, p in system.searches.items()},
            "searches_sha256": {r: file_sha256(p) for r, p in system.searches.items()},
        }
        for run, path in system.searches.items():
            with rep.step(f"reading {path}", None):
                runs[run] = imp.run(run, system.name, path, system.mapping, known)
            rep.message(run_line(run, imp.counts))
            run_cfg[run] = RunConfig(
                store=system.name,
                retriever="external",
                config={"file": path.name, "system": system.name, "mapping": system.mapping_name},
            )
    options = {**ds.options, "with_raw": with_raw, "imported": files}
    config = BundleConfig(
        name=name,
        dataset=ds.dataset,
        k=k,
        description=f"{ds.description}; stores and runs imported from "
        + ", ".join(s.name for s in systems),
        metadata={"input_file": ds.input_file, "input_sha256": ds.input_sha256, **options},
        stores=store_cfg,
        runs=run_cfg,
    )
    bundle = Bundle(
        config=config,
        queries=list(ds.queries),
        sources={s.source_id: s for s in ds.sources},
        stores=stores,
        runs=runs,
    )
    bundle.validate()
    report = BuildReport(
        dataset=ds.dataset,
        input_file=ds.input_file,
        input_sha256=ds.input_sha256,
        options={**options, "k": k},
        counts={**ds.counts, **dict(sorted(imp.counts.items()))},
        categories=dict(sorted(Counter(q.category or "" for q in ds.queries).items())),
        stores={n: len(m) for n, m in stores.items()},
        runs={n: len(e) for n, e in runs.items()},
        rules=log.rules(),
        issue_counts=dict(sorted(log.counts.items())),
        excluded_queries=list(ds.excluded_queries),
        issues=list(log.issues),
    )
    return BuildResult(bundle=bundle, report=report)
