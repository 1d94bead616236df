"""Fixtures for the judge tests: workspaces with cases, a loopback OpenAI-compatible
server on 127.0.0.1, and panel files pointing at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from judge_support import KEY_ENV, SECRET, make_case, panel_toml

from support.loopback import LoopbackServer, Script
from tiap.cases import Workspace


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., Path]:
    """``make_workspace(n, name="ws.db", validation=True)``: a workspace file with
    ``n`` cases and (by default) a validation subset ``val`` holding all of them."""

    def make(n: int, name: str = "ws.db", validation: bool = True) -> Path:
        path = tmp_path / name
        cases = [make_case(i) for i in range(n)]
        with Workspace(path) as ws:
            ws.add_cases(cases)
            if validation:
                ws.save_subset("val", [c.case_id for c in cases], params={"kind": "validation"})
        return path

    return make


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A loopback server replying ``supports`` to everything (script it per test)."""
    with LoopbackServer(Script()) as server:
        yield server


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def write_panel(tmp_path: Path) -> Callable[..., Path]:
    def write(url: str, filename: str = "panel.toml", **kwargs: Any) -> Path:
        path = tmp_path / filename
        path.write_text(panel_toml(url, **kwargs), encoding="utf-8")
        return path

    return write
