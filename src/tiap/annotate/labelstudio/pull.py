"""Pull Label Studio annotations into the workspace as human labels.

- Each annotation's annotator (``completed_by``) becomes a rater: the user's
  email (else username, else ``labelstudio-user-ID``), unless ``rater_map``
  maps the email, username or numeric id to another name.
- A label row carries ``origin='labelstudio'`` and an ``external_id`` made of
  the project, the annotation id, its last update time and the rater, so
  pulling again adds nothing and an edited annotation adds one new row (the
  latest wins).
- Cancelled (skipped) annotations and annotations without a choice are not
  labels; they are counted.
- A label is withdrawn (a ``retracted`` row) only when Label Studio no longer
  has it: its annotation was deleted, or it was skipped or left without a
  choice since. Annotations are matched by their id, so a changed ``rater_map``
  withdraws nothing: the annotations are stored under the new name too, the
  labels under the earlier name stay, and the summary says so (``renamed``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tiap.annotate.labelstudio.client import Connection, api_errors, export_tasks, find_project
from tiap.annotate.labelstudio.config import ConfigInfo, check_config
from tiap.annotate.labelstudio.models import ExportAnnotation, ExportTask, PullResult
from tiap.annotate.labelstudio.push import default_title, scope_case_ids
from tiap.cases.models import LabelRecord
from tiap.cases.vocab import HUMAN, ORIGIN_LABELSTUDIO
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

ORIGIN = ORIGIN_LABELSTUDIO
DELETED = "annotation deleted in Label Studio"
UNLABELLED = "annotation skipped or left without a choice in Label Studio"
_ANNOTATION = re.compile(rf"^{ORIGIN}:p(\d+):a(\d+):")


def external_id(project_id: int, ann: ExportAnnotation, rater: str) -> str:
    return f"{ORIGIN}:p{project_id}:a{ann.id}:{ann.version}:{rater}"


def annotation_id(project_id: int, external: str | None) -> int | None:
    """The Label Studio annotation a label of this project was stored from."""
    match = _ANNOTATION.match(external or "")
    if match is None or int(match.group(1)) != project_id:
        return None
    return int(match.group(2))


def rater_name(
    user_id: int | None, users: dict[int, tuple[str, str]], mapping: dict[str, str]
) -> str:
    email, username = users.get(user_id, ("", "")) if user_id is not None else ("", "")
    for key in (str(user_id), email, username):
        if key and key in mapping:
            return mapping[key]
    return email or username or f"labelstudio-user-{user_id}"


@dataclass
class _Scope:
    """The workspace's cases and the ones this project covers."""

    known: set[str]
    wanted: set[str]


@dataclass
class _Export:
    """What the project holds for the cases in scope."""

    records: list[LabelRecord] = field(default_factory=list)  # oldest version first
    raters: dict[int, str] = field(default_factory=dict)  # labelled annotation -> rater
    annotations: set[int] = field(default_factory=set)  # every annotation on those tasks
    cases: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)


@dataclass
class _Changes:
    """Stored labels of this project the server no longer has, or has under
    another rater name."""

    withdrawn: list[tuple[LabelRecord, str]] = field(default_factory=list)  # (label, note)
    renamed: Counter[tuple[str, str]] = field(default_factory=Counter)  # (earlier, now)


def pull(
    ws: Workspace,
    conn: Connection,
    rubric: Rubric,
    *,
    title: str | None = None,
    subset: str | None = None,
    overlap: bool = False,
    rater_map: dict[str, str] | None = None,
) -> PullResult:
    """Store the project's annotations as human labels; see the module docstring."""
    title = title or default_title(rubric, subset, overlap)
    scope = _scope(ws, subset, overlap)
    project, info = _project(conn, rubric, title)
    tasks, users = _export(conn, project.id)
    export = _read_annotations(tasks, info, rubric, scope, users, dict(rater_map or {}), project.id)
    for rater in sorted({rec.rater for rec in export.records}):
        ws.require_rater_kind(rater, HUMAN, hint="map the annotator to it with --rater-map")
    labelled = {rec.case_id for rec in export.records}
    for kind in ws.case_kinds(case_ids=labelled) if labelled else {}:
        rubric.require_case_kind(kind)
    changes = _compare(_stored_labels(ws, project.id, export.cases), export)
    with ws.transaction():
        ids = ws.add_labels(export.records)
        for rec, note in changes.withdrawn:
            ws.retract_label(rec.case_id, rec.rater, note=note)
    return _result(conn, project.id, title, export, changes, ids)


def _scope(ws: Workspace, subset: str | None, overlap: bool) -> _Scope:
    known = set(ws.case_ids())
    scoped = scope_case_ids(ws, subset, overlap)
    return _Scope(known=known, wanted=set(scoped) if scoped is not None else known)


def _project(conn: Connection, rubric: Rubric, title: str) -> tuple[Any, ConfigInfo]:
    """The project titled ``title``, whose labeling config must match the rubric."""
    project = find_project(conn, title)
    if project is None:
        raise TiapError(
            f"Label Studio at {conn.url} has no project titled '{title}' "
            "(push first, or pass --project)"
        )
    return project, check_config(project.label_config or "", rubric, title)


def _export(
    conn: Connection, project_id: int
) -> tuple[list[ExportTask], dict[int, tuple[str, str]]]:
    """The project's tasks with their annotations, and user id -> (email, username)."""
    raw_tasks = export_tasks(conn, project_id)
    with api_errors(conn.url, conn._secret):
        tasks = [ExportTask.model_validate(t) for t in raw_tasks]
        users = {u.id: (u.email or "", u.username or "") for u in conn.client.users.list()}
    return tasks, users


def _read_annotations(
    tasks: Iterable[ExportTask],
    info: ConfigInfo,
    rubric: Rubric,
    scope: _Scope,
    users: dict[int, tuple[str, str]],
    mapping: dict[str, str],
    project_id: int,
) -> _Export:
    """A label record for every annotation that gives one of the rubric's labels,
    on the tasks of cases in scope; the rest is counted."""
    out = _Export()
    found: list[tuple[str, int, LabelRecord]] = []
    for task in tasks:
        cid = task.case_id
        if cid is None or cid not in scope.known:
            out.counts["unknown_tasks"] += 1
            continue
        if cid not in scope.wanted:
            out.counts["outside_subset"] += 1
            continue
        out.cases.add(cid)
        for ann in task.annotations:
            out.counts["annotations"] += 1
            out.annotations.add(ann.id)
            if ann.was_cancelled:
                out.counts["skipped"] += 1
                continue
            label = ann.choice(info.control)
            if label is None or label not in rubric.label_names:
                out.counts["empty"] += 1
                continue
            rater = rater_name(ann.user_id, users, mapping)
            out.raters[ann.id] = rater
            record = _record(cid, rater, label, ann, rubric, project_id)
            found.append((ann.version, ann.id, record))
    found.sort(key=lambda item: (item[0], item[1]))  # stored oldest version first
    out.records = [rec for _, _, rec in found]
    return out


def _record(
    case_id: str, rater: str, label: str, ann: ExportAnnotation, rubric: Rubric, project_id: int
) -> LabelRecord:
    return LabelRecord(
        case_id=case_id,
        rater=rater,
        rater_kind=HUMAN,
        label=label,
        raw=json.dumps(ann.result, sort_keys=True, ensure_ascii=False),
        rubric_id=rubric.id,
        rubric_hash=rubric.content_hash,
        origin=ORIGIN,
        external_id=external_id(project_id, ann, rater),
    )


def _stored_labels(
    ws: Workspace, project_id: int, case_ids: set[str]
) -> list[tuple[LabelRecord, int]]:
    """The current human labels pulled from this project, with their annotation id."""
    out = []
    for rec in ws.latest_labels(case_ids=case_ids, rater_kind=HUMAN):
        ann_id = annotation_id(project_id, rec.external_id) if rec.origin == ORIGIN else None
        if ann_id is not None:
            out.append((rec, ann_id))
    return out


def _compare(stored: list[tuple[LabelRecord, int]], export: _Export) -> _Changes:
    """Which stored labels Label Studio no longer has (withdrawn, with why), and
    which it has under another rater name (a changed ``rater_map``: kept)."""
    changes = _Changes()
    for rec, ann_id in stored:
        now = export.raters.get(ann_id)
        if now is None:
            note = UNLABELLED if ann_id in export.annotations else DELETED
            changes.withdrawn.append((rec, note))
        elif now != rec.rater:
            changes.renamed[(rec.rater, now)] += 1
    return changes


def _result(
    conn: Connection,
    project_id: int,
    title: str,
    export: _Export,
    changes: _Changes,
    ids: list[int],
) -> PullResult:
    added = sum(1 for i in ids if i != -1)
    renamed: dict[str, dict[str, int]] = {}
    for (earlier, now), n in sorted(changes.renamed.items()):
        renamed.setdefault(earlier, {})[now] = n
    counts = export.counts
    return PullResult(
        url=conn.url,
        project_id=project_id,
        project=title,
        annotations=counts["annotations"],
        labels_added=added,
        labels_present=len(ids) - added,
        skipped=counts["skipped"],
        empty=counts["empty"],
        retracted=len(changes.withdrawn),
        unknown_tasks=counts["unknown_tasks"],
        outside_subset=counts["outside_subset"],
        raters=dict(sorted(Counter(rec.rater for rec in export.records).items())),
        renamed=renamed,
    )
