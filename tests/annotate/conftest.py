from __future__ import annotations

from pathlib import Path

import pytest
from annotate_support import make_workspace

from tiap.cases.workspace import Workspace
from tiap.rubric import load_rubric
from tiap.rubric.models import Rubric


@pytest.fixture
def rubric() -> Rubric:
    return load_rubric("contested-credit")


@pytest.fixture
def ws_path(tmp_path: Path) -> Path:
    """Ten cases c0000..c0009 in subset 'val'; the first four are the overlap."""
    return make_workspace(tmp_path / "w.sqlite", 10, overlap=4)


@pytest.fixture
def ws(ws_path: Path):
    with Workspace(ws_path) as handle:
        yield handle
