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
from tiap.cases.run_models import BatchPair, BatchRequest, LedgerEntry, PairLease, ProviderBatch

M = TypeVar("M", bound=BaseModel)


def dumps(obj: Any) -> str:
    """JSON as the workspace stores it: sorted keys, non-ASCII kept."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    """Plain JSON data; nested models without their unset optional (None) fields."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


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

    def insert_sql(self, verb: str = "INSERT") -> str:
        names = self.insert_names
        return (
            f"{verb} INTO {self.table} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' for _ in names)})"
        )

    def values(self, obj: M, **extra: Any) -> list[Any]:
        """Parameters for :meth:`insert_sql` (extra columns by keyword)."""
        out = []
        for f in self.insert_fields:
            value = getattr(obj, f)
            out.append(dumps(_jsonable(value)) if f in self.json_fields else value)
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
    LEASES,
    LEDGER,
    BATCHES,
    BATCH_REQUESTS,
    BATCH_PAIRS,
)
"""Every data table with its full column list (``LABEL_MARKS`` reads a part of labels)."""
