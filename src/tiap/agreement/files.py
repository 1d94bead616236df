"""Read labels made elsewhere: CSV (or TSV) and JSON Lines files.

Each row is ``case_id, rater, label`` with optional ``rater_kind`` (``judge`` or
``human``), ``dataset``, ``run``, ``category`` and ``stratum`` (the case's sampling
stratum, :func:`tiap.cases.sample.stratum`), and where the label came from:
``rubric_id``, ``rubric_hash``, ``panel``, ``model``, ``settings_hash``,
``reason``, ``note``, ``origin``, ``created_at`` (ISO 8601) — the columns
``tiap labels export`` writes (:mod:`tiap.agreement.label_export`), so a report
on an exported file is the report on the workspace. Other columns are ignored.
An empty (or JSON ``null``) label is an invalid label: an abstention.

Policy for bad input (every error names the file and line), the same for
``agreement report --labels`` and ``tiap labels import`` (one reader,
:func:`read_label_rows`):

- a missing required column or field, a row with too many or too few fields,
  an unknown ``rater_kind``: error;
- two rows for the same (case, rater): error naming both lines (a file is a
  table of current labels, not a log; keep only the row you mean). Only
  ``import`` reads a history, where every row of the pair gives its
  ``created_at`` (an ``--all`` export);
- a rater given two different kinds, or a case given two different datasets,
  runs or categories: error;
- with a rubric, a label that is not one of the rubric's labels: error.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tiap.agreement.label_table import CaseMeta, LabelEntry, LabelTable, RaterInfo, sort_raters
from tiap.cases.vocab import RaterKind
from tiap.cells import restore
from tiap.errors import InputError
from tiap.io import describe_validation_error, parse_json_line, read_text_input, text_lines
from tiap.rubric import Rubric

REQUIRED_COLUMNS = ("case_id", "rater", "label")
_META = ("dataset", "run", "category", "stratum")
#: where a label came from (optional columns; a rater's values are gathered)
PROVENANCE = ("rubric_id", "rubric_hash", "panel", "model", "settings_hash")
#: every column a labels file may have, in the order an export writes them
COLUMNS = (
    "case_id",
    "rater",
    "rater_kind",
    "label",
    *_META,
    *PROVENANCE,
    "reason",
    "note",
    "origin",
    "created_at",
)
_TEXT = (*_META, *PROVENANCE, "reason", "note", "origin", "created_at")


class LabelFileRow(BaseModel):
    """One row of a labels file."""

    model_config = ConfigDict(extra="ignore")

    case_id: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    label: str | None
    rater_kind: RaterKind | None = None
    dataset: str | None = None
    run: str | None = None
    category: str | None = None
    stratum: str | None = None
    rubric_id: str | None = None
    rubric_hash: str | None = None
    panel: str | None = None
    model: str | None = None
    settings_hash: str | None = None
    reason: str | None = None
    note: str | None = None
    origin: str | None = None
    created_at: str | None = None

    @field_validator("case_id", "rater", "label", *_TEXT, mode="before")
    @classmethod
    def _scalar_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return str(value)
        if isinstance(value, str):
            return value.strip()
        return value

    @field_validator("label", "rater_kind", *_TEXT, mode="after")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("created_at", mode="after")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"created_at '{value[:40]}' is not an ISO 8601 time") from None
        return value

    @field_validator("rater_kind", mode="before")
    @classmethod
    def _kind_text(cls, value: Any) -> Any:
        return (value.strip().lower() or None) if isinstance(value, str) else value


def _detect_format(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in {".csv", ".tsv"}:
        return suffix[1:]
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return "jsonl"
    return "jsonl" if text[:4096].lstrip()[:1] == "{" else "csv"


def _validate(path: Path, line: int, data: dict[str, Any]) -> LabelFileRow:
    try:
        return LabelFileRow.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, describe_validation_error(exc), line) from None


def _iter_jsonl(path: Path, text: str) -> Iterator[tuple[int, LabelFileRow]]:
    for line, raw in text_lines(text):
        if not raw.strip():
            continue
        data = parse_json_line(raw, path, line)
        if not isinstance(data, dict):
            raise InputError(path, "expected a JSON object on each line", line)
        yield line, _validate(path, line, data)


def _iter_csv(path: Path, text: str, delimiter: str) -> Iterator[tuple[int, LabelFileRow]]:
    with io.StringIO(text, newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter, restkey="\0extra")
        try:
            header = [h.strip() for h in reader.fieldnames or []]
        except csv.Error as exc:
            raise InputError(path, f"malformed CSV ({exc})", 1) from None
        if not header:
            raise InputError(path, "empty file: expected a header row case_id,rater,label")
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise InputError(
                path, f"header lacks column(s) {', '.join(missing)} (found: {header})", 1
            )
        dupes = sorted({h for h in header if header.count(h) > 1})
        if dupes:
            raise InputError(path, f"duplicate column(s) {', '.join(dupes)} in the header", 1)
        reader.fieldnames = header
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # the line the csv reader was on (DictReader's lags)
                raise InputError(path, f"malformed CSV ({exc})", reader.reader.line_num) from None
            line = reader.line_num
            if "\0extra" in row:
                raise InputError(path, f"more fields than the header's {len(header)}", line)
            if any(v is None for v in row.values()):
                raise InputError(path, f"fewer fields than the header's {len(header)}", line)
            # a cell an export wrote with a leading quote (a formula start) is read back
            yield line, _validate(path, line, {k: restore(v) for k, v in row.items()})


def iter_label_rows(path: str | Path) -> Iterator[tuple[int, LabelFileRow]]:
    """Every row of a labels file with its line number (format from the suffix, else
    sniffed); a bad row is an :class:`InputError` naming the file and line."""
    p = Path(path)
    text = read_text_input(p, what="labels file")
    fmt = _detect_format(p, text)
    if fmt == "jsonl":
        yield from _iter_jsonl(p, text)
    else:
        yield from _iter_csv(p, text, "\t" if fmt == "tsv" else ",")


class LabelRows(BaseModel):
    """A labels file's rows (with their line numbers), checked as one table: the
    raters' kinds and the cases' dataset, run and category it gives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    rows: list[tuple[int, LabelFileRow]]
    #: rater -> the kind its rows give (None: none given)
    kinds: dict[str, RaterKind | None]
    #: case id -> dataset, run and category (None: not given)
    cases: dict[str, dict[str, str | None]]


def read_label_rows(
    path: str | Path, *, rubric: Rubric | None = None, history: bool = False
) -> LabelRows:
    """Every row of a labels file, checked as a table (see the module doc): what
    ``agreement report --labels`` and ``tiap labels import`` both read.

    A second row for one (case, rater) is an error naming both lines, unless
    ``history`` and every row for the pair gives its time (``created_at``): a history
    (an ``--all`` export), whose rows ``import`` applies in file order. With
    ``rubric``, a label outside it is an error naming its line."""
    p = Path(path)
    allowed = set(rubric.label_names) if rubric is not None else None
    cases: dict[str, dict[str, tuple[str | None, int]]] = {}
    kinds: dict[str, tuple[RaterKind | None, int]] = {}
    seen: dict[tuple[str, str], tuple[int, bool]] = {}
    last: dict[tuple[str, str], tuple[int, LabelFileRow]] = {}
    rows: list[tuple[int, LabelFileRow]] = []
    for line, row in iter_label_rows(p):
        key = (row.case_id, row.rater)
        timed = row.created_at is not None
        first = seen.get(key)  # (line, whether it gives its time)
        if first is None:
            seen[key] = (line, timed)
        elif not (history and timed and first[1]):
            raise InputError(p, _second_row(row, first[0], history), line)
        else:
            _check_history_step(p, line, row, last[key])
        last[key] = (line, row)
        if allowed is not None and row.label is not None and row.label not in allowed:
            raise InputError(
                p,
                f"label '{row.label}' is not in rubric '{rubric.id}' "  # type: ignore[union-attr]
                f"({', '.join(rubric.label_names)})",  # type: ignore[union-attr]
                line,
            )
        _merge_kind(p, line, kinds, row)
        _merge_case(p, line, cases, row)
        rows.append((line, row))
    if not rows:
        raise InputError(p, "no label rows")
    return LabelRows(
        path=p,
        rows=rows,
        kinds={name: kind for name, (kind, _) in kinds.items()},
        cases={cid: {k: v for k, (v, _) in meta.items()} for cid, meta in cases.items()},
    )


def _moment(row: LabelFileRow) -> datetime:
    """A row's time, comparable with any other (a time without a zone is UTC)."""
    when = datetime.fromisoformat(row.created_at or "")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _check_history_step(
    path: Path, line: int, row: LabelFileRow, prev: tuple[int, LabelFileRow]
) -> None:
    """A history's rows for one (case, rater) go forward in time: a row at the same
    time as the one before it, or earlier, would leave the current label to the
    order of the file's lines. An error naming both lines."""
    prev_line, before = prev
    if _moment(row) > _moment(before):
        return
    how = "at the same time as" if _moment(row) == _moment(before) else "earlier than"
    raise InputError(
        path,
        f"label for case '{row.case_id}' by rater '{row.rater}' is {how} the one at line "
        f"{prev_line} ({row.created_at} vs {before.created_at}); a history's rows for a case "
        "and rater go forward in time",
        line,
    )


def _second_row(row: LabelFileRow, first: int, history: bool) -> str:
    what = (
        f"second label for case '{row.case_id}' by rater '{row.rater}' (first at line {first}); "
        "keep one row per case and rater"
    )
    if history:
        what += " (or give every row of the pair its created_at time: a history)"
    return what


def labels_from_file(path: str | Path, rubric: Rubric | None = None) -> LabelTable:
    """A label table from a CSV, TSV or JSONL file (format from the suffix, else
    sniffed). With ``rubric``, labels outside it are errors with their line."""
    read = read_label_rows(path, rubric=rubric)
    sources: dict[str, _Sources] = {}
    for _, row in read.rows:
        sources.setdefault(row.rater, _Sources()).add(row)
    return LabelTable(
        source="file",
        path=str(read.path),
        cases=[
            CaseMeta(
                case_id=cid,
                dataset=m["dataset"],
                run=m["run"],
                category=m["category"],
                stratum=m["stratum"],
            )
            for cid, m in read.cases.items()
        ],
        raters=sort_raters(sources[n].info(n, k) for n, k in read.kinds.items()),
        labels=[
            LabelEntry(
                case_id=row.case_id,
                rater=row.rater,
                label=row.label,
                rubric_id=row.rubric_id,
                rubric_hash=row.rubric_hash,
            )
            for _, row in read.rows
        ],
    )


class _Sources:
    """Where one rater's rows say their labels came from."""

    def __init__(self) -> None:
        self.values: dict[str, set[str]] = {key: set() for key in PROVENANCE}
        self.without_settings = 0

    def add(self, row: LabelFileRow) -> None:
        for key in PROVENANCE:
            value = getattr(row, key)
            if value is not None:
                self.values[key].add(value)
        # a judge row that has the column but no hash (as exported from a workspace)
        if row.rater_kind == "judge" and row.settings_hash is None:
            self.without_settings += "settings_hash" in row.model_fields_set

    def info(self, name: str, kind: RaterKind | None) -> RaterInfo:
        v = {key: sorted(values) for key, values in self.values.items()}
        return RaterInfo(
            name=name,
            kind=kind,
            panels=v["panel"],
            rubric_ids=v["rubric_id"],
            rubric_hashes=v["rubric_hash"],
            models=v["model"],
            settings_hashes=v["settings_hash"],
            labels_without_settings=self.without_settings,
        )


def _merge_kind(
    path: Path, line: int, kinds: dict[str, tuple[RaterKind | None, int]], row: LabelFileRow
) -> None:
    known = kinds.get(row.rater)
    if known is None or (known[0] is None and row.rater_kind is not None):
        kinds[row.rater] = (row.rater_kind, line)
    elif row.rater_kind is not None and known[0] != row.rater_kind:
        raise InputError(
            path,
            f"rater '{row.rater}' is '{row.rater_kind}' here but '{known[0]}' at line {known[1]}",
            line,
        )


def _merge_case(
    path: Path, line: int, cases: dict[str, dict[str, tuple[str | None, int]]], row: LabelFileRow
) -> None:
    meta = cases.setdefault(row.case_id, dict.fromkeys(_META, (None, line)))
    for key in _META:
        value = getattr(row, key)
        if value is None:
            continue
        old, old_line = meta[key]
        if old is None:
            meta[key] = (value, line)
        elif old != value:
            raise InputError(
                path,
                f"case '{row.case_id}' has {key} '{value}' here but '{old}' at line {old_line}",
                line,
            )
