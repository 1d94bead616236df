"""Read, validate and write trace bundles (DESIGN.md, "Trace bundle").

A bundle is a directory::

    bundle.toml        dataset, default k, stores and runs (store, retriever, config)
    queries.jsonl      Query per line
    sources.jsonl      Source per line
    stores/NAME.jsonl  Memory per line (one store's lineage)
    runs/NAME.jsonl    RunEntry per line; a TREC run file (NAME.trec/.run/.txt) also works

:func:`read_bundle` checks every cross-reference and raises
:class:`~tiap.errors.InputError` naming the file, the line and the problem.
Recoverable oddities (a memory listed twice in one ranking) are kept and
reported in :attr:`Bundle.warnings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import tomli_w

from tiap import runtime
from tiap.errors import InputError, TiapError
from tiap.io import iter_jsonl, parse_toml, write_jsonl
from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source
from tiap.traces.trec import TREC_SUFFIXES, read_trec_run, write_trec_run

CONFIG_FILE = "bundle.toml"
QUERIES_FILE = "queries.jsonl"
SOURCES_FILE = "sources.jsonl"
STORES_DIR = "stores"
RUNS_DIR = "runs"


@dataclass
class Bundle:
    """An in-memory trace bundle. Build one from files with :func:`read_bundle`."""

    config: BundleConfig
    queries: list[Query]
    sources: dict[str, Source]
    stores: dict[str, list[Memory]]
    runs: dict[str, list[RunEntry]]
    root: Path | None = None
    warnings: list[str] = field(default_factory=list)

    @cached_property
    def query_by_id(self) -> dict[str, Query]:
        return {q.query_id: q for q in self.queries}

    @cached_property
    def query_index(self) -> dict[str, int]:
        """Position of each query in ``queries.jsonl`` (0-based)."""
        return {q.query_id: i for i, q in enumerate(self.queries)}

    def memories(self, store: str) -> dict[str, Memory]:
        """The store's memories by id."""
        return self._memory_maps[store]

    @cached_property
    def _memory_maps(self) -> dict[str, dict[str, Memory]]:
        return {name: {m.memory_id: m for m in mems} for name, mems in self.stores.items()}

    def run_config(self, run: str) -> RunConfig:
        return self.config.runs[run]

    def run_store(self, run: str) -> str:
        return self.config.runs[run].store

    def rankings(self, run: str) -> dict[str, list[str]]:
        """``query_id -> ranking`` for one run; queries absent from the run are absent here."""
        return {e.query_id: e.ranking for e in self.runs[run]}

    def validate(self) -> None:
        """Check every cross-reference of an in-memory bundle (raises :class:`TiapError`)."""
        where = self.root or Path("<bundle>")
        self.warnings = _check_all(
            where,
            self.config,
            [(None, q) for q in self.queries],
            [(None, s) for s in self.sources.values()],
            {n: [(None, m) for m in ms] for n, ms in self.stores.items()},
            {n: [(None, e) for e in es] for n, es in self.runs.items()},
            {n: Path(STORES_DIR) / f"{n}.jsonl" for n in self.stores},
            {n: Path(RUNS_DIR) / f"{n}.jsonl" for n in self.runs},
        )


# --------------------------------------------------------------------------- reading


def read_config(root: Path) -> BundleConfig:
    path = root / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not root.exists():
            raise InputError(root, "bundle directory not found") from None
        raise InputError(path, "file not found (every bundle needs a bundle.toml)") from None
    return parse_toml(text, path, BundleConfig)


def _store_path(root: Path, name: str, config: BundleConfig) -> Path:
    sc = config.stores.get(name)
    return root / (sc.file if sc and sc.file else f"{STORES_DIR}/{name}.jsonl")


def _run_path(root: Path, name: str, rc: RunConfig) -> Path:
    if rc.file:
        return root / rc.file
    default = root / RUNS_DIR / f"{name}.jsonl"
    if default.exists():
        return default
    for suffix in TREC_SUFFIXES:
        alt = root / RUNS_DIR / f"{name}{suffix}"
        if alt.exists():
            return alt
    return default


def _read_run(path: Path) -> list[tuple[int | None, RunEntry]]:
    if path.suffix in TREC_SUFFIXES:
        return [(None, e) for e in read_trec_run(path)]
    return list(iter_jsonl(path, RunEntry))


def read_bundle(path: str | Path) -> Bundle:
    """Read and validate a bundle directory.

    A large bundle is hundreds of thousands of small records that form no
    reference cycles: inside :func:`tiap.runtime.tuned` (the ``tiap`` command)
    the cyclic collector pauses while they are read and they go to its oldest
    generation afterwards (:func:`tiap.runtime.bulk_read`). Otherwise the
    collector is left alone.
    """
    with runtime.bulk_read():
        return _read_bundle(Path(path))


def _read_bundle(root: Path) -> Bundle:
    config = read_config(root)
    queries = list(iter_jsonl(root / QUERIES_FILE, Query))
    sources = list(iter_jsonl(root / SOURCES_FILE, Source))

    store_names = set(config.stores)
    stores_dir = root / STORES_DIR
    if stores_dir.is_dir():
        store_names |= {p.stem for p in stores_dir.glob("*.jsonl")}
    for name, rc in config.runs.items():
        if rc.store not in store_names:
            raise InputError(
                root / CONFIG_FILE,
                f"run '{name}' names store '{rc.store}', which has no file "
                f"{STORES_DIR}/{rc.store}.jsonl and no [stores.{rc.store}] entry",
            )
    store_files = {n: _store_path(root, n, config) for n in sorted(store_names)}
    stores = {n: list(iter_jsonl(p, Memory)) for n, p in store_files.items()}

    runs_dir = root / RUNS_DIR
    if runs_dir.is_dir():
        for p in sorted(runs_dir.iterdir()):
            if p.suffix in (".jsonl", *TREC_SUFFIXES) and p.stem not in config.runs:
                raise InputError(
                    p,
                    f"run '{p.stem}' is not declared in {CONFIG_FILE} "
                    f'(add [runs.{p.stem}] with store = "...")',
                )
    run_files = {n: _run_path(root, n, rc) for n, rc in config.runs.items()}
    runs = {n: _read_run(p) for n, p in run_files.items()}

    warnings = _check_all(
        root,
        config,
        queries,
        sources,
        stores,
        runs,
        {n: p.relative_to(root) for n, p in store_files.items()},
        {n: p.relative_to(root) for n, p in run_files.items()},
    )
    return Bundle(
        config=config,
        queries=[q for _, q in queries],
        sources={s.source_id: s for _, s in sources},
        stores={n: [m for _, m in ms] for n, ms in stores.items()},
        runs={n: [e for _, e in es] for n, es in runs.items()},
        root=root,
        warnings=warnings,
    )


# ------------------------------------------------------------------------ validation


def _unique(path: Path, items: Sequence[tuple[int | None, object]], key: str, what: str) -> None:
    first: dict[str, int | None] = {}
    for line, item in items:
        value = getattr(item, key)
        if value in first:
            at = f" (first at line {first[value]})" if first[value] is not None else ""
            raise InputError(path, f"duplicate {what} '{value}'{at}", line)
        first[value] = line


def _check_all(
    root: Path,
    config: BundleConfig,
    queries: Sequence[tuple[int | None, Query]],
    sources: Sequence[tuple[int | None, Source]],
    stores: Mapping[str, Sequence[tuple[int | None, Memory]]],
    runs: Mapping[str, Sequence[tuple[int | None, RunEntry]]],
    store_files: dict[str, Path],
    run_files: dict[str, Path],
) -> list[str]:
    warnings: list[str] = []
    q_path, s_path = root / QUERIES_FILE, root / SOURCES_FILE
    _unique(s_path, sources, "source_id", "source id")
    source_ids = {s.source_id for _, s in sources}
    _unique(q_path, queries, "query_id", "query id")
    for line, q in queries:
        if not q.evidence:
            raise InputError(q_path, f"query '{q.query_id}' has no evidence", line)
        for sid in q.evidence:
            if sid not in source_ids:
                raise InputError(
                    q_path, f"query '{q.query_id}' cites unknown source id '{sid}'", line
                )
    query_ids = {q.query_id for _, q in queries}

    memory_ids: dict[str, set[str]] = {}
    for name, mems in stores.items():
        path = root / store_files[name]
        _unique(path, mems, "memory_id", "memory id")
        for line, m in mems:
            for sid in m.source_ids:
                if sid not in source_ids:
                    raise InputError(
                        path, f"memory '{m.memory_id}' links to unknown source id '{sid}'", line
                    )
        memory_ids[name] = {m.memory_id for _, m in mems}

    for name, entries in runs.items():
        rc = config.runs.get(name)
        path = root / run_files[name]
        if rc is None:
            raise InputError(root / CONFIG_FILE, f"run '{name}' has no [runs.{name}] entry")
        if rc.store not in memory_ids:
            raise InputError(root / CONFIG_FILE, f"run '{name}' names unknown store '{rc.store}'")
        known = memory_ids[rc.store]
        _unique(path, entries, "query_id", "query id")
        for line, e in entries:
            if e.query_id not in query_ids:
                raise InputError(path, f"unknown query id '{e.query_id}'", line)
            seen: set[str] = set()
            for mid in e.ranking:
                if mid not in known:
                    raise InputError(
                        path,
                        f"unknown memory id '{mid}' in ranking of query '{e.query_id}' "
                        f"(not in store '{rc.store}')",
                        line,
                    )
                if mid in seen:
                    at = f" (line {line})" if line is not None else ""
                    warnings.append(
                        f"{path}{at}: memory '{mid}' appears more than once in the ranking of "
                        f"query '{e.query_id}'; only its first occurrence counts"
                    )
                seen.add(mid)
    return warnings


# --------------------------------------------------------------------------- writing


def write_bundle(bundle: Bundle, path: str | Path, *, run_format: str = "jsonl") -> Path:
    """Validate ``bundle`` and write it to directory ``path`` (created if needed).

    ``run_format`` is ``"jsonl"`` or ``"trec"``. Output is deterministic.
    """
    if run_format not in ("jsonl", "trec"):
        raise TiapError(f"unknown run format '{run_format}' (use jsonl or trec)")
    bundle.validate()
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    runs_cfg = {}
    for name, rc in bundle.config.runs.items():
        suffix = ".jsonl" if run_format == "jsonl" else ".trec"
        runs_cfg[name] = rc.model_copy(update={"file": f"{RUNS_DIR}/{name}{suffix}"})
    stores_cfg = {n: sc.model_copy(update={"file": None}) for n, sc in bundle.config.stores.items()}
    config = bundle.config.model_copy(update={"runs": runs_cfg, "stores": stores_cfg})
    data = {k: v for k, v in config.model_dump(mode="json", exclude_none=True).items() if v != {}}
    write_jsonl(root / QUERIES_FILE, bundle.queries)
    write_jsonl(root / SOURCES_FILE, bundle.sources.values())
    for name, mems in bundle.stores.items():
        write_jsonl(root / STORES_DIR / f"{name}.jsonl", mems)
    for name, entries in bundle.runs.items():
        if run_format == "jsonl":
            write_jsonl(root / RUNS_DIR / f"{name}.jsonl", entries)
        else:
            write_trec_run(root / RUNS_DIR / f"{name}.trec", entries, tag=name)
    # bundle.toml last: a write cut short leaves no bundle.toml, so the directory is
    # not taken for a bundle ("every bundle needs a bundle.toml")
    (root / CONFIG_FILE).write_text(tomli_w.dumps(data), encoding="utf-8", newline="\n")
    return root
