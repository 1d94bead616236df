"""The rubric data model: labels with definitions and keys, a binary collapse,
prompt templates, and the judge's output schema."""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    create_model,
    model_serializer,
    model_validator,
)

from tiap.errors import TiapError

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

#: Placeholders filled from the rubric itself (instructions, not data).
RUBRIC_PLACEHOLDERS = frozenset({"labels", "label_names", "rubric_id"})

#: The kinds of case a rubric can judge (``tiap.cases``: ``cases.kind``).
RubricCaseKind = Literal["contested", "qrels", "answer"]
DEFAULT_CASE_KIND: RubricCaseKind = "contested"

#: The built-in rubric for each kind of case.
RUBRIC_FOR_KIND: dict[str, str] = {
    "contested": "contested-credit",
    "qrels": "qrels-relevance",
    "answer": "answer-correctness",
}

_KIND_NOUNS = {
    "contested": "contested credits",
    "qrels": "qrels pairs (annotated query-document pairs)",
    "answer": "answers (a run's generated answers to queries)",
}


class RubricLabel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    key: str = Field(min_length=1, max_length=1)
    definition: str = Field(min_length=1)


class PromptTemplates(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str = Field(min_length=1)
    user: str = Field(min_length=1)


class Rubric(BaseModel):
    """A judging rubric. Built-ins ship as TOML files in ``tiap/rubric/builtin``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str = Field(min_length=1)
    description: str = ""
    labels: list[RubricLabel] = Field(min_length=2)
    #: label -> binary label; empty when the rubric has no binary collapse.
    binary: dict[str, str] = Field(default_factory=dict)
    #: the binary label counted as positive (e.g. "relevant").
    binary_positive: str | None = None
    #: the case fields the prompt shows as data (each is fenced when rendered).
    fields: list[str] = Field(min_length=1)
    #: the kind of case the rubric judges: ``contested`` credits, ``qrels`` pairs or
    #: ``answer`` cases (a run's generated answers).
    case_kind: RubricCaseKind = DEFAULT_CASE_KIND
    #: the labels are ordered, in the order listed (``ordinal = true``): the agreement
    #: report then adds its ordinal figures (weighted kappa, Gwet's AC2, ordinal alpha)
    ordinal: StrictBool = False
    prompt: PromptTemplates

    @model_validator(mode="after")
    def _consistent(self) -> Rubric:
        names = [lab.name for lab in self.labels]
        keys = [lab.key for lab in self.labels]
        if len(set(names)) != len(names):
            raise ValueError("label names must be unique")
        if len(set(keys)) != len(keys):
            raise ValueError("label keys must be unique")
        if self.binary:
            missing = [n for n in names if n not in self.binary]
            extra = [n for n in self.binary if n not in names]
            if missing or extra:
                raise ValueError(
                    f"binary collapse must map every label exactly once "
                    f"(missing: {missing or 'none'}, unknown: {extra or 'none'})"
                )
            if len(set(self.binary.values())) != 2:
                raise ValueError("binary collapse must map onto exactly two binary labels")
            if self.binary_positive not in set(self.binary.values()):
                raise ValueError("binary_positive must be one of the binary labels")
            if self.ordinal:
                self._collapse_cuts_the_order_once(names)
        elif self.binary_positive is not None:
            raise ValueError("binary_positive given without a binary collapse")
        for part in ("system", "user"):
            for name in PLACEHOLDER.findall(getattr(self.prompt, part)):
                if name not in RUBRIC_PLACEHOLDERS and name not in self.fields:
                    raise ValueError(
                        f"prompt.{part} uses {{{{{name}}}}}, which is neither a rubric "
                        f"placeholder ({', '.join(sorted(RUBRIC_PLACEHOLDERS))}) nor in 'fields'"
                    )
        return self

    def _collapse_cuts_the_order_once(self, names: list[str]) -> None:
        """An ordinal rubric's binary collapse keeps the order: each binary label covers
        one run of neighbouring labels (a cut point, not a shuffle)."""
        runs = [
            self.binary[n]
            for i, n in enumerate(names)
            if i == 0 or self.binary[n] != self.binary[names[i - 1]]
        ]
        if len(runs) != 2:
            order = ", ".join(f"{n} -> {self.binary[n]}" for n in names)
            raise ValueError(
                "ordinal = true: the binary collapse must cut the labels' order once (each "
                f"binary label a run of neighbouring labels), but it maps {order}; list the "
                "labels in their order, or set ordinal = false"
            )

    @property
    def label_names(self) -> list[str]:
        return [lab.name for lab in self.labels]

    @property
    def binary_labels(self) -> list[str]:
        """The two binary labels, positive first; empty without a collapse."""
        if not self.binary:
            return []
        others = sorted(set(self.binary.values()) - {self.binary_positive})
        return [str(self.binary_positive), *others]

    def collapse(self, label: str | None) -> str | None:
        """The binary label for ``label`` (``None`` stays ``None``)."""
        if label is None or not self.binary:
            return None
        return self.binary[label]

    def label_for_key(self, key: str) -> RubricLabel | None:
        return next((lab for lab in self.labels if lab.key == key), None)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The rubric's content; the case kind only when it is not the default, and
        ``ordinal`` only when true, so a rubric written before rubrics declared them
        keeps its content (and hash)."""
        data: dict[str, Any] = handler(self)
        if data.get("case_kind") == DEFAULT_CASE_KIND:
            del data["case_kind"]
        if data.get("ordinal") is False:  # likewise a rubric of unordered labels
            del data["ordinal"]
        return data

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the rubric's canonical content: any edit changes it."""
        canon = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    def kind_problem(self, kind: str, case_id: str | None = None) -> str | None:
        """Why this rubric cannot judge a case of ``kind`` (``None``: it can), naming
        the rubric, both kinds and how to choose ``--rubric``."""
        if kind == self.case_kind:
            return None
        which = f"case '{case_id}' is" if case_id else "the cases are"
        fit = RUBRIC_FOR_KIND.get(kind)
        choose = f"--rubric {fit}, or " if fit else ""
        return (
            f"rubric '{self.id}' judges {_KIND_NOUNS.get(self.case_kind, self.case_kind)} "
            f"(case kind '{self.case_kind}'), but {which} of kind '{kind}': choose {choose}"
            f'a rubric file with case_kind = "{kind}"; a workspace holding several kinds is '
            "judged one kind at a time (--subset)"
        )

    def require_case_kind(self, kind: str, case_id: str | None = None) -> None:
        """Refuse (:class:`~tiap.errors.TiapError`) a case of another kind."""
        problem = self.kind_problem(kind, case_id)
        if problem is not None:
            raise TiapError(problem)

    @cached_property
    def output_model(self) -> type[BaseModel]:
        """The judge's reply schema: ``{"label": one of the labels, "rationale": str}``."""
        label_type: Any = Literal[tuple(self.label_names)]
        return create_model(
            "Judgment",
            __config__=ConfigDict(extra="forbid"),
            rationale=(str, Field(description="one or two sentences of reasons")),
            label=(label_type, Field(description="one label of the rubric")),
        )

    def output_schema(self) -> dict[str, Any]:
        return self.output_model.model_json_schema()
