"""Fixtures: a real workspace with cases in a validation subset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agreement_support import make_case

from tiap.cases.workspace import Workspace
from tiap.rubric import Rubric, load_rubric


@pytest.fixture
def rubric() -> Rubric:
    return load_rubric("contested-credit")


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """Twelve cases (two datasets, three runs), all in a validation subset."""
    ws = Workspace(tmp_path / "ws.sqlite")
    cases = [
        make_case(
            i, dataset=("locomo", "longmemeval")[i % 2], run=f"run-{i % 3}", category=str(i % 4)
        )
        for i in range(12)
    ]
    ws.add_cases(cases)
    ws.save_subset("validation", [c.case_id for c in cases], params={"kind": "validation"})
    yield ws
    ws.close()
