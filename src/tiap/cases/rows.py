"""Row mapping between the pydantic models and the workspace tables.

A :class:`Columns` holds the one column list of a table, derived from its model's
fields: a field is stored in the column of the same name, except JSON fields
(declared once, here) stored as JSON text in ``<field>_json``. Reading tolerates
columns an older schema lacks (the field keeps its default), so a workspace
opened read-only without migrating can still be read.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from tiap.cases.models import (
    BundleVersion,
    Case,
    CaseVersion,
    EventRecord,
    LabelMark,
    LabelRecord,
    ModelCall,
    SubsetMember,
    SubsetRecord,
)
from tiap.cases.probe_models import AnchorCase, AnchorLabel, AnchorSet, ProbeLabelRecord
from tiap.cases.run_models import BatchPair, BatchRequest, LedgerEntry, PairLease, ProviderBatch

M = TypeVar("M", bound=BaseModel)


def dumps(obj: Any) -> str:
    """JSON as the workspace stores it: sorted keys, non-ASCII kept."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _model_json(value: Any) -> Any:
    """Nested models, for :func:`json.dumps`: plain data without their unset optional
    (None) fields."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def dumps_field(value: Any) -> str:
    """A JSON field as the workspace stores it (:func:`dumps`, nested models as
    their data)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_model_json)


class JsonTemplate:
    """The JSON text (:func:`dumps_field`) of ``{**fixed, key: value}`` for any
    ``value``: the text around the value serialised once, the value's put in
    (the same text as serialising the whole)."""

    _MARK = "\x00tiap-json-value\x00"

    def __init__(self, fixed: Mapping[str, Any], key: str) -> None:
        self.fixed = {k: v for k, v in fixed.items() if k != key}
        self.key = key
        whole = dumps_field({**self.fixed, key: self._MARK})
        parts = whole.split(dumps_field(self._MARK))
        self.parts = (parts[0], parts[1]) if len(parts) == 2 else None

    def text(self, value: Any, value_json: str | None = None) -> str:
        """The JSON text; ``value_json``: ``value`` already serialised as
        :func:`dumps_field` does, when the caller has it."""
        if self.parts is None:  # the marker in the fixed part: serialised whole
            return dumps_field({**self.fixed, self.key: value})
        if value_json is None:
            value_json = dumps_field(value)
        return self.parts[0] + value_json + self.parts[1]


class Columns(Generic[M]):
    """The columns of ``table`` for ``model``.

    ``json``: fields stored as JSON text (column ``<field>_json``); ``generated``:
    fields the database assigns (never inserted); ``extra``: columns of the table
    that are not fields of the model (``created_at`` of a case), given at insert.
    """

    def __init__(
        self,
        model: type[M],
        table: str,
        *,
        json_fields: Collection[str] = (),
        generated: Collection[str] = (),
        extra: tuple[str, ...] = (),
    ) -> None:
        fields = list(model.model_fields)
        unknown = (set(json_fields) | set(generated)) - set(fields)
        if unknown:
            raise ValueError(f"{table}: not fields of {model.__name__}: {sorted(unknown)}")
        self.model = model
        self.table = table
        self.json_fields = frozenset(json_fields)
        self.fields = fields
        self.column = {f: f"{f}_json" if f in self.json_fields else f for f in fields}
        self.insert_fields = [f for f in fields if f not in set(generated)]
        self.extra = extra
        self._sql: dict[tuple[str, int], str] = {}

    @property
    def names(self) -> list[str]:
        """Every column of the table (model fields, then extra columns)."""
        return [self.column[f] for f in self.fields] + list(self.extra)

    @property
    def insert_names(self) -> list[str]:
        return [self.column[f] for f in self.insert_fields] + list(self.extra)

    def select(self, alias: str = "", present: Collection[str] | None = None) -> str:
        """``a, b, c`` (``l.a, l.b, ...`` with an alias) for the model's columns; only
        those in ``present`` when given (the columns an older schema has)."""
        prefix = f"{alias}." if alias else ""
        names = [self.column[f] for f in self.fields]
        if present is not None:
            names = [n for n in names if n in present]
        return ", ".join(prefix + n for n in names)

    def insert_sql(self, verb: str = "INSERT", rows: int = 1) -> str:
        """The insert statement of ``rows`` rows (one ``VALUES`` tuple each)."""
        key = (verb, rows)
        sql = self._sql.get(key)
        if sql is None:
            names = self.insert_names
            one = f"({', '.join('?' for _ in names)})"
            sql = f"{verb} INTO {self.table} ({', '.join(names)}) VALUES {', '.join([one] * rows)}"
            self._sql[key] = sql
        return sql

    def values(
        self, obj: M, *, json_text: Mapping[str, str] | None = None, **extra: Any
    ) -> list[Any]:
        """Parameters for :meth:`insert_sql` (extra columns by keyword); ``json_text``:
        JSON fields whose text is known (as :func:`dumps_field` writes their value)."""
        data = vars(obj)
        known = json_text or {}
        out = [
            (known.get(f) or dumps_field(data[f])) if f in self.json_fields else data[f]
            for f in self.insert_fields
        ]
        return out + [extra[name] for name in self.extra]

    def load(self, row: sqlite3.Row | Mapping[str, Any]) -> M:
        keys = set(row.keys())
        data: dict[str, Any] = {}
        for f in self.fields:
            col = self.column[f]
            if col not in keys:
                continue
            value = row[col]
            data[f] = json.loads(value) if f in self.json_fields and value is not None else value
        return self.model.model_validate(data)

    def load_all(self, rows: Iterable[sqlite3.Row]) -> list[M]:
        return [self.load(r) for r in rows]


CASES = Columns(
    Case,
    "cases",
    json_fields=("evidence", "memory_source_ids", "metadata"),
    extra=("created_at", "bundle_fingerprint", "retired_at"),
)
LABELS = Columns(LabelRecord, "labels", generated=("id",))
LABEL_MARKS = Columns(LabelMark, "labels")
MODEL_CALLS = Columns(ModelCall, "model_calls", json_fields=("request", "response"))
SUBSETS = Columns(SubsetRecord, "subsets", json_fields=("params",))
SUBSET_CASES = Columns(SubsetMember, "subset_cases")
EVENTS = Columns(EventRecord, "events", json_fields=("payload",), generated=("id",))
BUNDLE_VERSIONS = Columns(BundleVersion, "bundle_versions", json_fields=("definition",))
CASE_VERSIONS = Columns(CaseVersion, "case_versions", json_fields=("case",), generated=("id",))
PROBE_LABELS = Columns(
    ProbeLabelRecord, "probe_labels", json_fields=("probe_params",), generated=("id",)
)
ANCHOR_SETS = Columns(AnchorSet, "anchor_sets", json_fields=("judges",))
ANCHOR_CASES = Columns(AnchorCase, "anchor_cases")
ANCHOR_LABELS = Columns(AnchorLabel, "anchor_labels")

LEASES = Columns(PairLease, "judge_leases")
LEDGER = Columns(LedgerEntry, "budget_ledger")
BATCHES = Columns(ProviderBatch, "provider_batches", generated=("id",))
BATCH_REQUESTS = Columns(BatchRequest, "provider_batch_requests")
BATCH_PAIRS = Columns(BatchPair, "provider_batch_pairs")

TABLES: tuple[Columns[Any], ...] = (
    CASES,
    LABELS,
    MODEL_CALLS,
    SUBSETS,
    SUBSET_CASES,
    EVENTS,
    BUNDLE_VERSIONS,
    CASE_VERSIONS,
    PROBE_LABELS,
    ANCHOR_SETS,
    ANCHOR_CASES,
    ANCHOR_LABELS,
    LEASES,
    LEDGER,
    BATCHES,
    BATCH_REQUESTS,
    BATCH_PAIRS,
)
"""Every data table with its full column list (``LABEL_MARKS`` reads a part of labels)."""
