"""Reading a bundle for rescoring leaves the garbage collector as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundle_support import random_bundle
from tiap.traces.bundle import read_bundle, write_bundle


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(random_bundle(8, n_queries=40, n_runs=2), tmp_path_factory.mktemp("b"))


@pytest.fixture
def gc_state() -> Iterator[None]:
    """Start with nothing frozen (an earlier test in this process may have frozen
    objects, e.g. the judge after importing litellm); restore the state after."""
    enabled = gc.isenabled()
    had_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    gc.unfreeze()
    if had_frozen:
        gc.freeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_read_bundle_restores_the_collector(bundle_dir: Path, gc_state: None) -> None:
    gc.enable()
    first = read_bundle(bundle_dir)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # nothing frozen
    gc.disable()
    second = read_bundle(bundle_dir)
    assert not gc.isenabled()  # a caller's choice is kept
    assert first.queries == second.queries
    assert first.runs == second.runs


def test_read_bundle_leaves_frozen_objects_frozen(bundle_dir: Path, gc_state: None) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    read_bundle(bundle_dir)
    assert gc.get_freeze_count() == frozen


def test_read_bundle_restores_the_collector_after_an_error(tmp_path: Path, gc_state: None) -> None:
    gc.enable()
    with pytest.raises(Exception, match="bundle directory not found"):
        read_bundle(tmp_path / "missing")
    assert gc.isenabled()
