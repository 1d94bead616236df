"""The audit tests run ``tiap`` with wide tables (``COLUMNS=200``)."""

from __future__ import annotations

import pytest

from support.cli import TiapCli


@pytest.fixture(scope="session")
def tiap_cli(tiap_cli: TiapCli) -> TiapCli:
    return tiap_cli.with_env(COLUMNS="200")
