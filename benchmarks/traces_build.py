"""Time the full LoCoMo trace build with BM25 (every store) and where the time goes.

Goal: the whole build, all stores (raw, observations, parser-D1/D5/D8,
summaries), under 2 minutes on a 2-core machine. Phases:

- parsing: reading locomo10.json and extracting the parser's facts;
- indexing: tokenising every text and building the BM25 index of each pool;
- retrieval: scoring each pool's queries and keeping the top k;
- writing: validating and writing the bundle and build_report.json
  (assembling the bundle in memory is counted here too).

Usage: python benchmarks/traces_build.py [PATH/locomo10.json]
(default: $TIAP_SHARED_DIR/data/locomo/locomo10.json or ../shared/data/...).
The last line printed is one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tiap.traces.build import BuildOptions, build_bundle, write_build
from tiap.traces.locomo import load_locomo


def _default_path() -> Path:
    env = os.environ.get("TIAP_SHARED_DIR")
    shared = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"
    return shared / "data" / "locomo" / "locomo10.json"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else _default_path()
    if not path.is_file():
        raise SystemExit(f"LoCoMo file not found: {path}")
    start = time.perf_counter()
    ds = load_locomo(path)
    read = time.perf_counter() - start
    result = build_bundle(ds, BuildOptions(retrievers=["bm25"]))
    with tempfile.TemporaryDirectory() as tmp:
        write_build(result, Path(tmp) / "bundle")
    total = time.perf_counter() - start
    t = result.timings
    phases = {
        "parsing": read + t["parse"],
        "indexing": t["index"],
        "retrieval": t["retrieve"],
        "writing": t["write"] + t["assemble"],
    }
    print(f"input: {path} ({ds.counts['turns']:,} turns, {len(ds.queries):,} queries)")
    print("stores: " + ", ".join(f"{n} {len(m):,}" for n, m in result.bundle.stores.items()))
    for name, seconds in phases.items():
        print(f"{name:>10}: {seconds:7.2f} s  ({seconds / total:6.1%})")
    other = total - sum(phases.values())
    print(f"{'other':>10}: {other:7.2f} s  ({other / total:6.1%})")
    print(f"{'total':>10}: {total:7.2f} s  (goal: under 120 s)")
    figures = {"build_seconds": round(total, 3)}
    figures.update({f"{k}_share": round(v / total, 4) for k, v in phases.items()})
    print(json.dumps(figures, sort_keys=False))


if __name__ == "__main__":
    main()
