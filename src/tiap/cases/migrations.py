"""Recorded schema migrations of the workspace.

Each migration is a Python function taking the connection, registered with
:func:`~tiap.cases.migration_registry.migration` under the next version number
(:mod:`tiap.cases.migrations_v1_8`, then :mod:`tiap.cases.migrations_v9`, imported
here in that order); :func:`migrate` applies the ones a workspace has not recorded,
in order, each in the caller's transaction, and records it in ``schema_migrations``
(version, name, time). Append only: never edit a migration that has shipped
(workspaces have recorded it), add a new one at the end of
:mod:`tiap.cases.migrations_v9`. Statements are executed one by one, never split out
of a script.
"""

from __future__ import annotations

from tiap.cases import migrations_v1_8, migrations_v9
from tiap.cases.migration_registry import (
    MIGRATIONS,
    Migration,
    create_record_table,
    migrate,
    migration,
    newest_version,
    recorded_versions,
)

#: the modules that register the migrations, in version order
REGISTERED_BY = (migrations_v1_8, migrations_v9)

__all__ = [
    "MIGRATIONS",
    "REGISTERED_BY",
    "Migration",
    "create_record_table",
    "migrate",
    "migration",
    "newest_version",
    "recorded_versions",
]
