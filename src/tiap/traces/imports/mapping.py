"""Mapping files: which fields of a memory system's exports hold what tiap needs.

A mapping is a small TOML file (see ``mappings/mem0.toml`` and
``mappings/jsonl.toml``, the built-in ones) with two tables:

- ``[memories]``: where the list of memories is in a JSON export
  (``records``), and for each memory the dotted paths of its ``id``, its
  ``text`` and its ``source_ids`` (a list or a single value; ``split`` cuts a
  string at a separator), the ``source_id_template`` that turns a link value
  into a benchmark source id (``{value}``, and ``{conversation}`` read from the
  ``conversation`` path; plain fields only, see :func:`template_parts`), and the
  ``raw`` / ``canonical`` flags: a fixed
  ``true``/``false`` for the whole store, or the dotted path of a boolean field.
- ``[search]``: the ``layout`` of a search export (``keyed``: a JSON object
  query id -> result; ``records``: JSON Lines or a JSON list of records that
  name their query in ``query_id``; ``auto`` tells them apart), the path of
  the ranked list (``results``) and in each result the paths of the memory id
  (``memory_id``; a result that is a bare string or number is the id itself)
  and of its ``score``, or a parallel list of ``scores``; optionally the path of
  the query's generated ``answer`` in the query's record (empty: the export
  carries none).

A dotted path walks nested objects (``metadata.source_ids``); the empty path is
the object itself.
"""

from __future__ import annotations

import string
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tiap.io import builtin_toml_names, load_builtin_or_file

PACKAGE = "tiap.traces.imports"
FOLDER = "mappings"
TEMPLATE_FIELDS = frozenset({"value", "conversation"})


class _Missing:
    """The value at a path that does not exist."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def get_path(obj: Any, path: str) -> Any:
    """The value at dotted ``path`` inside ``obj`` (``MISSING`` when absent)."""
    if not path:
        return obj
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


def _check_path(value: str) -> str:
    if value and any(not part for part in value.split(".")):
        raise ValueError(f"'{value}' is not a dotted path (empty part)")
    return value


@lru_cache(maxsize=64)
def template_parts(template: str) -> tuple[tuple[str, str | None], ...]:
    """A template as ``(literal text, None)`` and ``("", field)`` parts.

    Only ``{value}`` and ``{conversation}`` are fields (``{{`` and ``}}`` are
    literal braces): a format spec (``{value:d}``, ``{value:>999999999}``), a
    conversion (``{value!r}``), an index or attribute (``{value[0]}``), a positional
    field (``{}``, ``{0}``) or an unmatched brace is a ``ValueError`` saying so."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{exc} (write a literal brace as {{{{ or }}}})") from None
    unknown = sorted({n for _, n, _, _ in parsed if n is not None} - TEMPLATE_FIELDS)
    if unknown:
        shown = ", ".join(n[:40] or "{}" for n in unknown)
        raise ValueError(f"unknown field(s) {shown} (use {{value}} and {{conversation}})")
    parts: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if literal:
            parts.append((literal, None))
        if name is None:
            continue
        if spec or conversion:
            given = (f"!{conversion}" if conversion else "") + (f":{spec[:40]}" if spec else "")
            raise ValueError(
                f"{{{name}{given}}}: a field takes no format spec or conversion (write {{{name}}})"
            )
        parts.append(("", name))
    return tuple(parts)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoriesMapping(_Strict):
    """How to read a memories export (Mem0 ``get_all``, JSON Lines, ...)."""

    records: str = Field(default="", description="path of the list of memories in a JSON export")
    id: str = "id"
    text: str = "text"
    source_ids: str = "source_ids"
    source_id_template: str = "{value}"
    conversation: str = Field(default="", description="path filling {conversation}")
    split: str = Field(default="", description="separator that splits a string link value")
    raw: bool | str = False
    canonical: bool | str = True

    _paths = field_validator("records", "id", "text", "source_ids", "conversation")(_check_path)

    @field_validator("raw", "canonical")
    @classmethod
    def _flag(cls, value: bool | str) -> bool | str:
        if isinstance(value, str):
            if not value:
                raise ValueError("give true, false or the dotted path of a boolean field")
            _check_path(value)
        return value

    @field_validator("id", "text")
    @classmethod
    def _required_path(cls, value: str) -> str:
        if not value:
            raise ValueError("the path may not be empty")
        return value

    @field_validator("source_id_template")
    @classmethod
    def _template_fields(cls, value: str) -> str:
        names = {name for _, name in template_parts(value) if name is not None}
        if "value" not in names:
            raise ValueError("must contain {value}")
        return value

    @model_validator(mode="after")
    def _template_conversation(self) -> MemoriesMapping:
        if "conversation" in self.template_fields and not self.conversation:
            raise ValueError("source_id_template uses {conversation}: set 'conversation'")
        return self

    @property
    def template_fields(self) -> set[str]:
        """The fields ``source_id_template`` uses."""
        return {n for _, n in template_parts(self.source_id_template) if n is not None}

    def source_id(self, value: object, conversation: object) -> str:
        """A link value as a source id: the template with its fields filled in (their
        text, never formatted)."""
        fields = {"value": value, "conversation": conversation}
        return "".join(
            text if name is None else str(fields[name])
            for text, name in template_parts(self.source_id_template)
        )


class SearchMapping(_Strict):
    """How to read a search export (ranked memory ids per benchmark query)."""

    layout: Literal["auto", "keyed", "records"] = "auto"
    records: str = Field(default="", description="path of the list of records in a JSON export")
    query_id: str = "query_id"
    results: str = "results"
    memory_id: str = "id"
    score: str = "score"
    scores: str = ""
    answer: str = Field(default="", description="path of the query's generated answer")

    _paths = field_validator(
        "records", "query_id", "results", "memory_id", "score", "scores", "answer"
    )(_check_path)


class ImportMapping(_Strict):
    """A mapping file: ``[memories]`` and ``[search]``."""

    name: str | None = None
    description: str = ""
    memories: MemoriesMapping = Field(default_factory=MemoriesMapping)
    search: SearchMapping = Field(default_factory=SearchMapping)


def builtin_mappings() -> list[str]:
    """Names of the mappings shipped with tiap (``mem0``, ``jsonl``)."""
    return builtin_toml_names(PACKAGE, FOLDER)


def load_mapping(name_or_path: str) -> ImportMapping:
    """A built-in mapping by name, or a TOML mapping file by path."""
    return load_builtin_or_file(
        name_or_path, ImportMapping, package=PACKAGE, folder=FOLDER, what="mapping"
    )
