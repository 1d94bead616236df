"""A retriever's optional extra is checked before any work: ``traces build ... -r bm25
-r dense`` without the ``dense`` extra fails at once, before reading the benchmark
file or building the BM25 runs, and creates nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tiap.errors import TiapError
from tiap.traces.retrieve import require_retrievers


@pytest.fixture
def no_dense_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``dense`` extra as if not installed (its modules cannot be found)."""
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)


@pytest.mark.shared_data
def test_a_missing_extra_fails_before_the_build(
    tiap_cli, no_dense_extra, shared_data_dir: Path, tmp_path: Path
) -> None:
    locomo = shared_data_dir / "locomo" / "locomo10.json"
    out = tmp_path / "locomo"
    result = tiap_cli(
        "traces", "build", "locomo", locomo, "--out", out, "-r", "bm25", "-r", "dense"
    )
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("tiap: error: dense retrieval needs the optional 'dense' extra")
    assert "pip install 'tiap[dense]'" in lines[0]
    assert "missing: sentence_transformers" in lines[0]
    assert "bm25" not in result.err  # no step of the build ran
    assert result.out == ""
    assert not out.exists()


def test_the_library_checks_too(no_dense_extra) -> None:
    with pytest.raises(TiapError, match="'dense' extra"):
        require_retrievers(["bm25", "dense"])
    require_retrievers(["bm25"])  # BM25 needs no extra
