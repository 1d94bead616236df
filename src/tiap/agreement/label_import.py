"""Labels collected elsewhere into a workspace (``tiap labels import``).

:func:`import_labels` reads a labels file — CSV, TSV or JSON Lines, the format
``agreement report --labels`` reads and ``tiap labels export`` writes
(:mod:`tiap.agreement.files`) — and appends its rows as label rows of one
stated rater kind, in file order, in one transaction.

Every row is checked before anything is written; an error names the file and
the line. The file is read and checked as ``agreement report --labels`` reads it
(:func:`tiap.agreement.files.read_label_rows`): two rows for one case and rater
are an error naming both lines — unless every row of the pair gives its time
(``created_at``), a history such as an ``--all`` export — and so are a rater
given two kinds and a case given two datasets. Then against the workspace: a
case id the workspace does not have, a label that is not one of the rubric's, a
row whose ``rater_kind`` is not the stated kind, a rater name the workspace uses
for the other kind (one namespace: a name is a judge or a human, never both), a
row made under another rubric.

A row is added unless it is there already, so importing the same file again
adds nothing, and a changed label is a new row (the latest row wins):

- a row that gives a time (``created_at``; e.g. an exported history) is there
  when its rater has a row on that case with the same label, note, rubric hash
  and time;
- any other row is there when it would not change the rater's current label on
  that case: the same label, note and rubric hash as the latest row (counting the
  rows the file added before it). The same label under another version of the
  rubric is a new label (the figures count one version).

So a file imported again after another one changed some of its labels sets
them back: the workspace's current labels are then the file's. Each added row's
``external_id`` names the file (its sha256), the line and the row it replaces,
so two imports of one file at the same time add its rows once.

The rubric is ``rubric``, else the one the rows name (``rubric_id``), else the
default; a row keeps its own ``rubric_hash`` when it gives one (the version it
was made under). Each stored row has ``origin='import'`` and keeps the file's
panel, model, settings hash, reason, note and time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from tiap.agreement.files import LabelFileRow, read_label_rows
from tiap.cases.models import LabelRecord
from tiap.cases.vocab import RETRACTED, RaterKind
from tiap.errors import InputError, TiapError
from tiap.io import file_sha256
from tiap.rubric import DEFAULT_RUBRIC, Rubric, builtin_rubrics, load_rubric

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

#: ``labels.origin`` of an imported row
ORIGIN = "import"
#: ``labels.reason`` of an imported row with an empty label and no reason of its own
EMPTY_LABEL = "empty_label"


class ImportSummary(BaseModel):
    """What an import read and added."""

    model_config = ConfigDict(extra="forbid")

    path: str
    rater_kind: RaterKind
    rubric_id: str
    rows: int
    added: int
    unchanged: int
    #: rows added per rater
    raters: dict[str, int]


def _rubric(path: Path, rows: list[tuple[int, LabelFileRow]], given: Rubric | None) -> Rubric:
    if given is not None:
        return given
    named = sorted({r.rubric_id for _, r in rows if r.rubric_id is not None})
    if not named:
        return load_rubric(DEFAULT_RUBRIC)
    if len(named) > 1:
        raise InputError(
            path, f"rows name several rubrics ({', '.join(named)}): choose one with --rubric"
        )
    if named[0] not in builtin_rubrics():
        raise InputError(
            path, f"rows name rubric '{named[0]}', which is not built in: pass it with --rubric"
        )
    return load_rubric(named[0])


def _check(
    ws: Workspace,
    path: Path,
    rows: list[tuple[int, LabelFileRow]],
    kind: RaterKind,
    rubric: Rubric,
) -> None:
    """Every row against the workspace and the rubric (nothing is written yet)."""
    known = set(ws.case_ids())
    allowed = set(rubric.label_names)
    checked: set[str] = set()
    for line, row in rows:
        if row.case_id not in known:
            raise InputError(path, f"no case '{row.case_id}' in {ws.path}", line)
        if row.rater_kind is not None and row.rater_kind != kind:
            raise InputError(
                path,
                f"rater '{row.rater}' is a {row.rater_kind} here, and this import is of "
                f"{kind} labels (--rater-kind {kind}); import them apart",
                line,
            )
        if row.rubric_id is not None and row.rubric_id != rubric.id:
            raise InputError(
                path, f"a label of rubric '{row.rubric_id}', not of '{rubric.id}'", line
            )
        if row.label is not None and row.label not in allowed:
            raise InputError(
                path,
                f"label '{row.label}' is not in rubric '{rubric.id}' "
                f"({', '.join(rubric.label_names)})",
                line,
            )
        if row.rater not in checked:
            try:
                ws.require_rater_kind(row.rater, kind)
            except TiapError as exc:
                raise InputError(path, str(exc), line) from None
            checked.add(row.rater)


def _record(row: LabelFileRow, kind: RaterKind, rubric: Rubric, external_id: str) -> LabelRecord:
    reason = row.reason if row.label is None else None
    return LabelRecord(
        case_id=row.case_id,
        rater=row.rater,
        rater_kind=kind,
        label=row.label,
        reason=reason or (EMPTY_LABEL if row.label is None else None),
        note=row.note,
        rubric_id=rubric.id,
        rubric_hash=row.rubric_hash or rubric.content_hash,
        panel=row.panel,
        model=row.model,
        settings_hash=row.settings_hash,
        origin=ORIGIN,
        external_id=external_id,
        created_at=row.created_at,
    )


def _external_id(digest: str, line: int, replaces: LabelRecord | None) -> str:
    """``labels-file:<file>:<line>:<the row it replaces>`` (hashes shortened)."""
    if replaces is None:
        before = "-"
    else:
        mark = replaces.external_id or f"id:{replaces.id}"
        before = hashlib.sha256(mark.encode()).hexdigest()[:16]
    return f"labels-file:{digest}:{line}:{before}"


def _same(a: LabelRecord, b: LabelRecord) -> bool:
    """Whether a stored row says what a file row says, under the same rubric version
    (a withdrawal is never a label; the same label under another version is a new one)."""
    if a.label is None and a.reason == RETRACTED and b.reason != RETRACTED:
        return False
    return (a.label, a.note, a.rubric_hash) == (b.label, b.note, b.rubric_hash)


def import_labels(
    ws: Workspace,
    path: str | Path,
    *,
    rater_kind: RaterKind,
    rubric: Rubric | None = None,
) -> ImportSummary:
    """Append the file's labels to the workspace as ``rater_kind`` labels; see the
    module doc for the checks and for which rows are added."""
    p = Path(path)
    rows = read_label_rows(p, history=True).rows  # the checks of 'agreement report --labels'
    rub = _rubric(p, rows, rubric)
    _check(ws, p, rows, rater_kind, rub)
    digest = file_sha256(p)[:16]
    case_ids = sorted({r.case_id for _, r in rows})
    raters = sorted({r.rater for _, r in rows})
    latest = {
        (rec.case_id, rec.rater): rec
        for rec in ws.latest_labels(case_ids=case_ids, raters=raters, include_retracted=True)
    }
    history: dict[tuple[str, str], list[LabelRecord]] = {}

    def rows_of(key: tuple[str, str]) -> list[LabelRecord]:
        """The rater's rows on the case: stored, then added by this file."""
        if key not in history:
            history[key] = ws.label_history(*key)
        return history[key]

    new: list[LabelRecord] = []
    for line, row in rows:
        key = (row.case_id, row.rater)
        current = latest.get(key)
        rec = _record(row, rater_kind, rub, _external_id(digest, line, current))
        if row.created_at is not None and any(
            h.created_at == row.created_at and _same(h, rec) for h in rows_of(key)
        ):
            continue
        if current is not None and _same(current, rec):
            continue
        new.append(rec)
        latest[key] = rec
        if row.created_at is not None:
            rows_of(key).append(rec)
    ids = ws.add_labels(new)
    added: dict[str, int] = {}
    for rec, row_id in zip(new, ids, strict=True):
        if row_id != -1:
            added[rec.rater] = added.get(rec.rater, 0) + 1
    n_added = sum(added.values())
    return ImportSummary(
        path=str(p),
        rater_kind=rater_kind,
        rubric_id=rub.id,
        rows=len(rows),
        added=n_added,
        unchanged=len(rows) - n_added,
        raters=dict(sorted(added.items())),
    )
