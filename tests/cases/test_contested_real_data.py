"""On the real LoCoMo file, contested cases and ``per_query.csv`` say the same thing.

A contested credit is a (run, query) whose ``hit@k`` in ``per_query.csv`` (from
``tiap rescore`` at that k) is 0 under Raw and 1 under Source and Canonical:
both read one index of targets and ranks. The bundle is built once for the
module with ``tiap traces build locomo`` (BM25, every store); skipped only when
the shared data folder is absent.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tiap.cases.extract import find_contested
from tiap.cli import main
from tiap.traces.bundle import read_bundle

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


def _run(args: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code in (0, None)


@pytest.fixture(scope="module")
def locomo_bundle(shared_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = shared_data_dir / "locomo" / "locomo10.json"
    if not source.is_file():
        pytest.skip(f"LoCoMo not found at {source} (shared data folder without it)")
    out = tmp_path_factory.mktemp("locomo-contested") / "bundle"
    _run(["traces", "build", "locomo", str(source), "--out", str(out), "-q"])
    return out


def _hit_pattern(per_query: Path, k: int) -> set[tuple[str, str]]:
    """(run, query) pairs with hit@k 0 under raw and 1 under source and canonical."""
    hits: dict[tuple[str, str], dict[str, float | None]] = {}
    with per_query.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            cell = row[f"hit@{k}"]
            hits.setdefault((row["run"], row["query_id"]), {})[row["target"]] = (
                float(cell) if cell else None
            )
    wanted = {"raw": 0.0, "source": 1.0, "canonical": 1.0}
    return {pair for pair, by_target in hits.items() if by_target == wanted}


@pytest.mark.parametrize("k", [10, 60])
def test_contested_cases_are_the_hit_pattern_of_per_query(
    locomo_bundle: Path, tmp_path: Path, k: int
) -> None:
    out = tmp_path / "rescore"
    _run(["rescore", str(locomo_bundle), "--out", str(out), "--k", str(k)])
    pattern = _hit_pattern(out / "per_query.csv", k)
    cases, report = find_contested(read_bundle(locomo_bundle), k=k)
    contested = [(c.run, c.query_id) for c in cases]
    assert len(contested) == len(set(contested))  # one case per (run, query)
    assert set(contested) == pattern
    assert report.contested == len(pattern) > 500  # the real thing, not an empty match
    assert len({run for run, _ in pattern}) >= 4  # over several runs
    assert all(c.rank <= k for c in cases)
