"""Push cases to Label Studio as tasks (and, on request, the judges' labels as predictions)."""

from __future__ import annotations

from typing import Any

from tiap.annotate.labelstudio.client import Connection, api_errors, export_tasks, find_project
from tiap.annotate.labelstudio.config import (
    ConfigInfo,
    check_config,
    control_name,
    instructions_html,
    label_config,
    project_description,
    target_name,
    task_data,
)
from tiap.annotate.labelstudio.models import ExportTask, PushResult
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

BATCH = 500


def default_title(rubric: Rubric, subset: str | None, overlap: bool = False) -> str:
    """``tiap RUBRIC [SUBSET [overlap]]``: one project per rubric and scope."""
    title = f"tiap {rubric.id}" + (f" {subset}" if subset else "")
    return title + (" overlap" if overlap else "")


def scope_case_ids(ws: Workspace, subset: str | None, overlap: bool) -> list[str] | None:
    """The case ids a project holds: a subset's, its reviewer overlap's, or every case
    (``None``)."""
    if overlap:
        if subset is None:
            raise TiapError("--overlap needs --subset (the overlap belongs to a subset)")
        ids = ws.overlap_ids(subset)
        if not ids:
            raise TiapError(f"subset '{subset}' has no reviewer overlap")
        return ids
    return ws.case_ids(subset=subset) if subset is not None else None


def _prediction(info: ConfigInfo, label: str) -> list[dict[str, Any]]:
    return [
        {
            "from_name": info.control,
            "to_name": info.to_name,
            "type": "choices",
            "value": {"choices": [label]},
        }
    ]


def _judge_labels(ws: Workspace, case_ids: list[str]) -> dict[str, dict[str, str]]:
    """case -> judge -> label (latest valid judge labels)."""
    out: dict[str, dict[str, str]] = {}
    for rec in ws.latest_labels(case_ids=case_ids, rater_kind="judge"):
        if rec.label is not None:
            out.setdefault(rec.case_id, {})[rec.rater] = rec.label
    return out


def push(
    ws: Workspace,
    conn: Connection,
    rubric: Rubric,
    *,
    title: str | None = None,
    subset: str | None = None,
    overlap: bool = False,
    with_predictions: bool = False,
) -> PushResult:
    """Create the project if needed, then import the cases it does not hold yet.

    An existing project must have a config that matches the rubric. With
    ``with_predictions`` each judge's latest valid label becomes a prediction
    (``model_version`` = the judge's name), also for tasks pushed earlier. With
    ``overlap`` only the subset's reviewer-overlap cases are pushed (by default
    to a project of their own, for the second reviewer).
    """
    title = title or default_title(rubric, subset, overlap)
    cases = ws.cases(subset=subset)
    if overlap:
        wanted = set(scope_case_ids(ws, subset, overlap) or ())
        cases = [c for c in cases if c.case_id in wanted]
    if not cases:
        raise TiapError(f"{ws.path}: no cases to push (run 'tiap cases extract' first)")
    data = {c.case_id: task_data(c, rubric) for c in cases}
    project = find_project(conn, title)
    created = project is None
    with api_errors(conn.url, conn._secret):
        if project is None:
            project = conn.client.projects.create(
                title=title,
                label_config=label_config(rubric),
                description=project_description(rubric),
                expert_instruction=instructions_html(rubric),
                show_instruction=True,
                show_skip_button=True,
            )
            info = ConfigInfo(control=control_name(rubric), to_name=target_name(rubric))
            existing: dict[str, int] = {}
        else:
            info = check_config(project.label_config or "", rubric, title)
            existing = {}
            for raw in export_tasks(conn, project.id):
                task = ExportTask.model_validate(raw)
                if task.case_id is not None:
                    existing.setdefault(task.case_id, task.id)
        project_id = _project_id(project, conn.url)
        judges = _judge_labels(ws, list(data)) if with_predictions else {}
        new_ids = [cid for cid in data if cid not in existing]
        # plain JSON tasks: the SDK sends mappings as they are
        payload: list[Any] = [
            {
                "data": data[cid],
                "predictions": [
                    {"model_version": judge, "result": _prediction(info, label)}
                    for judge, label in sorted(judges.get(cid, {}).items())
                ],
            }
            for cid in new_ids
        ]
        predictions = sum(len(t["predictions"]) for t in payload)
        for start in range(0, len(payload), BATCH):
            conn.client.projects.import_tasks(
                project_id, request=payload[start : start + BATCH], return_task_ids=True
            )
        if with_predictions and existing:
            predictions += _add_missing_predictions(conn, project_id, info, existing, judges)
    return PushResult(
        url=conn.url,
        project_id=project_id,
        project=title,
        created=created,
        tasks_added=len(new_ids),
        tasks_present=len(data) - len(new_ids),
        predictions_added=predictions,
    )


def _project_id(project: Any, url: str) -> int:
    """The id of a project the server returned (its models make every field optional)."""
    project_id = getattr(project, "id", None)
    if not isinstance(project_id, int):
        raise TiapError(f"Label Studio at {url} returned a project without an id")
    return project_id


def _add_missing_predictions(
    conn: Connection,
    project_id: int,
    info: ConfigInfo,
    existing: dict[str, int],
    judges: dict[str, dict[str, str]],
) -> int:
    have = {(p.task, p.model_version) for p in conn.client.predictions.list(project=project_id)}
    added = 0
    for cid, task_id in existing.items():
        for judge, label in sorted(judges.get(cid, {}).items()):
            if (task_id, judge) in have:
                continue
            conn.client.predictions.create(
                task=task_id, result=_prediction(info, label), model_version=judge
            )
            added += 1
    return added
