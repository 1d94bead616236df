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
- When a rater no longer has any annotation on a task (it was deleted in Label
  Studio) and their latest label there came from this project, the label is
  withdrawn with a ``retracted`` row.
"""

from __future__ import annotations

import json
from collections import Counter

from tiap.annotate.labelstudio.client import Connection, api_errors, export_tasks, find_project
from tiap.annotate.labelstudio.config import check_config
from tiap.annotate.labelstudio.models import ExportAnnotation, ExportTask, PullResult
from tiap.annotate.labelstudio.push import default_title, scope_case_ids
from tiap.cases.models import LabelRecord
from tiap.cases.vocab import HUMAN, ORIGIN_LABELSTUDIO
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

ORIGIN = ORIGIN_LABELSTUDIO


def external_id(project_id: int, ann: ExportAnnotation, rater: str) -> str:
    return f"{ORIGIN}:p{project_id}:a{ann.id}:{ann.version}:{rater}"


def rater_name(
    user_id: int | None, users: dict[int, tuple[str, str]], mapping: dict[str, str]
) -> str:
    email, username = users.get(user_id, ("", "")) if user_id is not None else ("", "")
    for key in (str(user_id), email, username):
        if key and key in mapping:
            return mapping[key]
    return email or username or f"labelstudio-user-{user_id}"


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
    scoped = scope_case_ids(ws, subset, overlap)
    mapping = dict(rater_map or {})
    project = find_project(conn, title)
    if project is None:
        raise TiapError(
            f"Label Studio at {conn.url} has no project titled '{title}' "
            "(push first, or pass --project)"
        )
    info = check_config(project.label_config or "", rubric, title)
    raw_tasks = export_tasks(conn, project.id)
    with api_errors(conn.url, conn._secret):
        tasks = [ExportTask.model_validate(t) for t in raw_tasks]
        users = {u.id: (u.email or "", u.username or "") for u in conn.client.users.list()}
    known = set(ws.case_ids())
    scope = set(scoped) if scoped is not None else known
    counts: Counter[str] = Counter()
    found: list[tuple[str, int, LabelRecord]] = []
    present: set[tuple[str, str]] = set()
    project_cases: set[str] = set()
    for task in tasks:
        cid = task.case_id
        if cid is None or cid not in known:
            counts["unknown_tasks"] += 1
            continue
        if cid not in scope:
            counts["outside_subset"] += 1
            continue
        project_cases.add(cid)
        for ann in task.annotations:
            counts["annotations"] += 1
            if ann.was_cancelled:
                counts["skipped"] += 1
                continue
            label = ann.choice(info.control)
            if label is None or label not in rubric.label_names:
                counts["empty"] += 1
                continue
            rater = rater_name(ann.user_id, users, mapping)
            present.add((cid, rater))
            record = LabelRecord(
                case_id=cid,
                rater=rater,
                rater_kind=HUMAN,
                label=label,
                raw=json.dumps(ann.result, sort_keys=True, ensure_ascii=False),
                rubric_id=rubric.id,
                rubric_hash=rubric.content_hash,
                origin=ORIGIN,
                external_id=external_id(project.id, ann, rater),
            )
            found.append((ann.version, ann.id, record))
    found.sort(key=lambda item: (item[0], item[1]))
    per_rater = Counter(rec.rater for _, _, rec in found)
    for rater in per_rater:
        ws.require_rater_kind(rater, HUMAN, hint="map the annotator to it with --rater-map")
    prefix = f"{ORIGIN}:p{project.id}:"
    gone = [
        rec
        for rec in ws.latest_labels(case_ids=project_cases, rater_kind=HUMAN)
        if rec.origin == ORIGIN
        and (rec.external_id or "").startswith(prefix)
        and (rec.case_id, rec.rater) not in present
    ]
    with ws.transaction():
        ids = ws.add_labels([rec for _, _, rec in found])
        for rec in gone:
            ws.retract_label(rec.case_id, rec.rater, note="annotation deleted in Label Studio")
    added = sum(1 for i in ids if i != -1)
    return PullResult(
        url=conn.url,
        project_id=project.id,
        project=title,
        annotations=counts["annotations"],
        labels_added=added,
        labels_present=len(ids) - added,
        skipped=counts["skipped"],
        empty=counts["empty"],
        retracted=len(gone),
        unknown_tasks=counts["unknown_tasks"],
        outside_subset=counts["outside_subset"],
        raters=dict(sorted(per_rater.items())),
    )
