"""Pydantic models for what the Label Studio round-trip reads and reports."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ExportAnnotation(BaseModel):
    """One annotation in Label Studio's JSON export (fields tiap uses)."""

    model_config = ConfigDict(extra="ignore")

    id: int
    completed_by: int | dict[str, Any] | None = None
    result: list[dict[str, Any]] = Field(default_factory=list)
    was_cancelled: bool = False
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def user_id(self) -> int | None:
        if isinstance(self.completed_by, dict):
            value = self.completed_by.get("id")
            return value if isinstance(value, int) else None
        return self.completed_by

    @property
    def version(self) -> str:
        """Changes whenever the annotation is edited."""
        return self.updated_at or self.created_at or "0"

    def choice(self, control: str) -> str | None:
        """The single choice given in ``control``, if any."""
        for item in self.result:
            if item.get("from_name") != control:
                continue
            choices = (item.get("value") or {}).get("choices")
            if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], str):
                return choices[0]
        return None


class ExportTask(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    data: dict[str, Any] = Field(default_factory=dict)
    annotations: list[ExportAnnotation] = Field(default_factory=list)

    @property
    def case_id(self) -> str | None:
        value = self.data.get("case_id")
        return value if isinstance(value, str) else None


class PushResult(BaseModel):
    """What ``tiap annotate labelstudio push`` did (stable JSON keys)."""

    url: str
    project_id: int
    project: str
    created: bool
    tasks_added: int
    tasks_present: int
    predictions_added: int

    def summary(self) -> str:
        state = "created" if self.created else "existing"
        return (
            f"project '{self.project}' (id {self.project_id}, {state}): "
            f"{self.tasks_added} tasks added, {self.tasks_present} already there, "
            f"{self.predictions_added} predictions added; {self.url}/projects/{self.project_id}"
        )


class PullResult(BaseModel):
    """What ``tiap annotate labelstudio pull`` did (stable JSON keys)."""

    url: str
    project_id: int
    project: str
    annotations: int
    labels_added: int
    labels_present: int
    skipped: int = Field(description="cancelled (skipped) annotations: not labels")
    empty: int = Field(description="annotations without a choice")
    retracted: int = Field(
        description="labels withdrawn because Label Studio no longer has them: their "
        "annotation was deleted, or skipped or left without a choice since"
    )
    unknown_tasks: int = Field(description="tasks whose case_id is not in the workspace")
    outside_subset: int
    raters: dict[str, int] = Field(description="rater -> labels in the project")
    renamed: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="earlier rater name -> {name now: annotations}: annotations an earlier "
        "pull stored under another name (a changed rater map); those labels are kept",
    )

    def summary(self) -> str:
        raters = ", ".join(f"{k} {v}" for k, v in sorted(self.raters.items())) or "none"
        parts = [
            f"project '{self.project}' (id {self.project_id}): {self.annotations} annotations",
            f"{self.labels_added} new labels stored, {self.labels_present} already stored",
            f"{self.skipped} skipped",
            f"{self.empty} without a choice",
            f"{self.retracted} withdrawn (deleted, skipped or emptied in Label Studio)",
        ]
        if self.renamed:
            moves = ", ".join(
                f"{earlier} -> {now} ({n})"
                for earlier, names in sorted(self.renamed.items())
                for now, n in sorted(names.items())
            )
            parts.append(
                f"stored under a new rater name: {moves}; the labels under the earlier "
                "name are kept, not withdrawn"
            )
        if self.unknown_tasks:
            parts.append(f"{self.unknown_tasks} tasks not from this workspace")
        if self.outside_subset:
            parts.append(f"{self.outside_subset} outside the subset")
        return "; ".join(parts) + f"; raters: {raters}"
