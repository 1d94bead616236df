"""Labels out of a workspace, in the format ``agreement report --labels`` reads.

:func:`export_labels` writes CSV, TSV or JSON Lines (by the file's suffix), one
row per label with every column of :data:`tiap.agreement.files.COLUMNS`: the
case and rater, the label (empty: an invalid judgment, ``reason`` says why),
the case's dataset, run, category (for the prevalence tables) and sampling stratum
(for the calibrated prevalence), and where
the label came from (rubric id and hash, panel, model, request-settings hash,
note, origin, time).

- ``latest=True`` (the default) writes each rater's current label per case,
  exactly the labels :func:`tiap.agreement.label_table.labels_from_workspace` reads
  (withdrawn human labels left out), in the workspace's case order: a report on
  the file has the figures of the report on the workspace. Cases nobody
  labelled have no row (a file lists labels), and the summary counts them.
- ``latest=False`` writes every row, oldest first per case and rater (the
  history, withdrawals included): an archive that ``tiap labels import`` reads
  back, not a table of current labels.

In CSV and TSV a cell that a spreadsheet would run as a formula (a rater name or a
note beginning with ``=``, ``+``, ``-``, ``@``, ...) is written with a leading single
quote (:mod:`tiap.cells`); the readers of labels files remove it again. JSON Lines
keep the text exactly.

The workspace is only read (open it with ``Workspace.open_readonly``). The same
workspace gives the same bytes.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tiap.agreement.files import COLUMNS
from tiap.cases.models import Case, LabelRecord
from tiap.cases.sample import stratum
from tiap.cases.vocab import RaterKind
from tiap.cells import line
from tiap.errors import TiapError
from tiap.io import check_apart

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

#: file suffix -> format
FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class ExportSummary(BaseModel):
    """What an export wrote."""

    model_config = ConfigDict(extra="forbid")

    path: str
    format: str
    rows: int
    cases: int
    cases_without_labels: int
    raters: dict[str, int]
    latest: bool


def file_format(path: Path) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from the suffix; anything else is an error."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise TiapError(f"{path}: name the file .csv, .tsv or .jsonl (its format)")
    return fmt


def _row(rec: LabelRecord, case: Case) -> dict[str, Any]:
    values: dict[str, Any] = {
        **rec.model_dump(),
        "dataset": case.dataset,
        "run": case.run,
        "category": case.category,
        "stratum": stratum(case),
    }
    return {col: values.get(col) for col in COLUMNS}


def _records(
    ws: Workspace, cases: list[Case], rater_kind: RaterKind | None, latest: bool
) -> list[LabelRecord]:
    """The rows to write, in case order (the workspace's), then rater, then time."""
    position = {c.case_id: i for i, c in enumerate(cases)}
    if latest:
        records = ws.latest_labels(case_ids=list(position), rater_kind=rater_kind)
    else:
        records = [
            rec
            for c in cases
            for rec in ws.label_history(c.case_id)
            if rater_kind is None or rec.rater_kind == rater_kind
        ]
    return sorted(records, key=lambda r: (position[r.case_id], r.rater, r.id or 0))


def _text(fmt: str, rows: Iterable[dict[str, Any]]) -> str:
    buf = io.StringIO()
    if fmt == "jsonl":
        for row in rows:
            buf.write(json.dumps(row, ensure_ascii=False) + "\n")
        return buf.getvalue()
    delimiter = "\t" if fmt == "tsv" else ","
    buf.write(line(COLUMNS, delimiter))
    for row in rows:  # text a spreadsheet would run as a formula gets a leading quote
        buf.write(line(("" if row[c] is None else str(row[c]) for c in COLUMNS), delimiter))
    return buf.getvalue()


def _write(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory, then rename."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise TiapError(f"{path}: directory {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise TiapError(f"{path}: cannot write the labels ({exc.strerror})") from None


def export_labels(
    ws: Workspace,
    path: str | Path,
    *,
    subset: str | None = None,
    rater_kind: RaterKind | None = None,
    latest: bool = True,
) -> ExportSummary:
    """Write the labels of a subset's cases (or every case) to ``path``; see the
    module doc. ``rater_kind`` keeps only judges' or only people's labels."""
    out = Path(path)
    fmt = file_format(out)
    check_apart(out, [("workspace", ws.path)])  # the file is replaced by a rename
    cases = ws.cases(subset=subset)
    if not cases:
        where = f"subset '{subset}'" if subset else "the workspace"
        raise TiapError(f"{ws.path}: {where} has no cases")
    by_id = {c.case_id: c for c in cases}
    records = _records(ws, cases, rater_kind, latest)
    _write(out, _text(fmt, (_row(rec, by_id[rec.case_id]) for rec in records)))
    raters: dict[str, int] = {}
    for rec in records:
        raters[rec.rater] = raters.get(rec.rater, 0) + 1
    labelled = {rec.case_id for rec in records}
    return ExportSummary(
        path=str(out),
        format=fmt,
        rows=len(records),
        cases=len(labelled),
        cases_without_labels=len(cases) - len(labelled),
        raters=dict(sorted(raters.items())),
        latest=latest,
    )
