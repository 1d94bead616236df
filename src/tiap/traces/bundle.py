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

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePath

import tomli_w

from tiap import runtime
from tiap.errors import InputError, TiapError
from tiap.io import iter_jsonl, parse_toml, read_text_input, write_jsonl
from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source
from tiap.traces.report import BuildReport, Issue
from tiap.traces.trec import TREC_SUFFIXES, read_trec_entries, trec_id_problem, write_trec_run

CONFIG_FILE = "bundle.toml"
QUERIES_FILE = "queries.jsonl"
SOURCES_FILE = "sources.jsonl"
STORES_DIR = "stores"
RUNS_DIR = "runs"
#: written next to a built bundle by ``tiap traces build`` (see :mod:`tiap.traces.build`).
REPORT_FILE = "build_report.json"


@dataclass(frozen=True)
class NumberedEntry:
    """A run entry with where it was read: the line of the entry (a TREC query's
    first line) and, for TREC runs, the line of each ranked id."""

    line: int | None
    entry: RunEntry
    doc_lines: Mapping[str, int] | None = None

    def line_of(self, memory_id: str) -> int | None:
        if self.doc_lines is not None and memory_id in self.doc_lines:
            return self.doc_lines[memory_id]
        return self.line


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
            {n: [NumberedEntry(None, e) for e in es] for n, es in self.runs.items()},
            {n: Path(STORES_DIR) / f"{n}.jsonl" for n in self.stores},
            {n: Path(RUNS_DIR) / f"{n}.jsonl" for n in self.runs},
        )


# --------------------------------------------------------------------------- reading


#: what an error says to someone who gave a benchmark's own files where a bundle goes
BUILD_HINT = (
    "a benchmark's own file or folder is made into a bundle by "
    "'tiap traces build DATASET PATH --out DIR' (see 'tiap traces build --help')"
)


def read_config(root: Path) -> BundleConfig:
    path = root / CONFIG_FILE
    if not root.exists():
        raise InputError(root, "bundle directory not found")
    if not root.is_dir():
        raise InputError(
            root, f"not a directory (a bundle is a directory with a bundle.toml); {BUILD_HINT}"
        )
    if not path.exists() and not path.is_symlink():
        raise InputError(path, f"file not found (every bundle needs a bundle.toml); {BUILD_HINT}")
    _inside(root, path)
    return parse_toml(read_text_input(path), path, BundleConfig)


def _inside(root: Path, path: Path) -> Path:
    """``path`` when it lies inside the bundle ``root`` once symbolic links are
    followed; else an :class:`InputError` naming it."""
    try:
        resolved = path.resolve()
        inside = resolved.is_relative_to(root.resolve())
    except (OSError, RuntimeError) as exc:  # a symbolic link loop
        raise InputError(path, f"cannot resolve the path ({exc})") from None
    if not inside:
        raise InputError(
            path, f"leads outside the bundle (to {resolved}); a bundle's files must be inside it"
        )
    return path


def _member(root: Path, file: str, what: str) -> Path:
    """A file named by ``file = "..."`` in ``bundle.toml``: a relative path inside the bundle."""
    rel = PurePath(file)
    if not file.strip() or "\0" in file or rel.is_absolute() or ".." in rel.parts or rel.anchor:
        raise InputError(
            root / CONFIG_FILE,
            f"{what}: file '{file}' must be a relative path inside the bundle "
            "(not absolute, no '..')",
        )
    return root / rel


def _named(root: Path, name: str, what: str) -> str:
    """A store's or run's name, which names its file: no NUL, no '..'."""
    if not name or "\0" in name or ".." in PurePath(name).parts:
        raise InputError(root / CONFIG_FILE, f"{what} name {name!r} cannot name a file")
    return name


def _store_path(root: Path, name: str, config: BundleConfig) -> Path:
    _named(root, name, "store")
    sc = config.stores.get(name)
    if sc is not None and sc.file is not None:
        return _member(root, sc.file, f"store '{name}'")
    return root / STORES_DIR / f"{name}.jsonl"


def _run_path(root: Path, name: str, rc: RunConfig) -> Path:
    _named(root, name, "run")
    if rc.file is not None:
        return _member(root, rc.file, f"run '{name}'")
    default = root / RUNS_DIR / f"{name}.jsonl"
    if default.exists() or default.is_symlink():
        return default
    for suffix in TREC_SUFFIXES:
        alt = root / RUNS_DIR / f"{name}{suffix}"
        if alt.exists() or alt.is_symlink():  # a broken link is an error naming it
            return alt
    return default


def _read_run(path: Path) -> list[NumberedEntry]:
    if path.suffix in TREC_SUFFIXES:
        return [NumberedEntry(e.line, e.entry, e.doc_lines) for e in read_trec_entries(path)]
    return [NumberedEntry(line, e) for line, e in iter_jsonl(path, RunEntry)]


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
    config_file = root / CONFIG_FILE
    queries = list(iter_jsonl(_inside(root, root / QUERIES_FILE), Query))
    sources = list(iter_jsonl(_inside(root, root / SOURCES_FILE), Source))

    store_names = set(config.stores)
    stores_dir = root / STORES_DIR
    if stores_dir.is_dir():
        store_names |= {p.stem for p in stores_dir.glob("*.jsonl")}
    for name, rc in config.runs.items():
        if rc.store not in store_names:
            raise InputError(
                config_file,
                f"run '{name}' names store '{rc.store}', which has no file "
                f"{STORES_DIR}/{rc.store}.jsonl and no [stores.{rc.store}] entry",
            )
    store_files = {n: _inside(root, _store_path(root, n, config)) for n in sorted(store_names)}
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
    run_files = {n: _inside(root, _run_path(root, n, rc)) for n, rc in config.runs.items()}
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
        runs={n: [r.entry for r in rs] for n, rs in runs.items()},
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
    runs: Mapping[str, Sequence[NumberedEntry]],
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
        _unique(path, [(r.line, r.entry) for r in entries], "query_id", "query id")
        for numbered in entries:
            line, e = numbered.line, numbered.entry
            if e.query_id not in query_ids:
                raise InputError(path, f"unknown query id '{e.query_id}'", line)
            seen: set[str] = set()
            for mid in e.ranking:
                if mid not in known:
                    raise InputError(
                        path,
                        f"unknown memory id '{mid}' in ranking of query '{e.query_id}' "
                        f"(not in store '{rc.store}')",
                        numbered.line_of(mid),
                    )
                if mid in seen:
                    at = f" (line {line})" if line is not None else ""
                    warnings.append(
                        f"{path}{at}: memory '{mid}' appears more than once in the ranking of "
                        f"query '{e.query_id}'; only its first occurrence counts"
                    )
                seen.add(mid)
    return warnings


# ---------------------------------------------------------------------- no queries


def exclusion_reasons(excluded: Sequence[str], issues: Sequence[Issue]) -> str:
    """``query_no_evidence 10, duplicate_question 2``: why the ``excluded`` queries
    were left out, by rule (each query counted once, under its first exclusion)."""
    left = set(excluded)
    reasons: Counter[str] = Counter()
    for issue in issues:
        if issue.action == "excluded" and issue.item in left:
            reasons[issue.kind] += 1
            left.discard(issue.item)
    if left:
        reasons["unlisted"] += len(left)
    return ", ".join(f"{kind} {n:,}" for kind, n in reasons.most_common())


def no_queries_problem(bundle: Bundle) -> str:
    """Why a bundle without queries has none: the exclusions its ``build_report.json``
    lists, when it has one."""
    where = bundle.root / QUERIES_FILE if bundle.root is not None else Path("<bundle>")
    problem = f"{where}: the bundle has no queries"
    report = bundle.root / REPORT_FILE if bundle.root is not None else None
    if report is None or not report.is_file():
        return problem
    try:
        built = BuildReport.model_validate(json.loads(read_text_input(report)))
    except (TiapError, ValueError, RecursionError):
        return f"{problem} ({report} cannot be read)"
    n = len(built.excluded_queries)
    if not n:
        return f"{problem} ({report} excluded none: the input had no queries)"
    reasons = exclusion_reasons(built.excluded_queries, built.issues)
    return f"{problem}: the build excluded all {n:,} ({reasons}; listed in {report})"


# --------------------------------------------------------------------------- writing


def trec_ids_problem(bundle: Bundle) -> str | None:
    """Why the bundle's runs cannot be written as TREC runs (an id or a run name
    with whitespace, which the format splits at), or ``None``."""
    for name, entries in bundle.runs.items():
        problem = trec_id_problem(name)
        if problem is not None:
            return f"run name {name!r} {problem}"
        for e in entries:
            problem = trec_id_problem(e.query_id)
            if problem is not None:
                return f"run '{name}': query id {e.query_id!r} {problem}"
            for mid in e.ranking:
                problem = trec_id_problem(mid)
                if problem is not None:
                    return f"run '{name}': memory id {mid!r} (query {e.query_id!r}) {problem}"
    return None


def check_trec_ids(bundle: Bundle) -> None:
    """Refuse, before anything is written, runs a TREC file cannot hold."""
    problem = trec_ids_problem(bundle)
    if problem is not None:
        raise TiapError(
            f"cannot write the runs as TREC: {problem}, and a TREC run is split at "
            "whitespace (write them as JSON Lines: --run-format jsonl)"
        )


def write_bundle(bundle: Bundle, path: str | Path, *, run_format: str = "jsonl") -> Path:
    """Validate ``bundle`` and write it to directory ``path`` (created if needed).

    ``run_format`` is ``"jsonl"`` or ``"trec"``. Output is deterministic.
    """
    if run_format not in ("jsonl", "trec"):
        raise TiapError(f"unknown run format '{run_format}' (use jsonl or trec)")
    bundle.validate()
    if run_format == "trec":
        check_trec_ids(bundle)
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
