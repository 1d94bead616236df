"""Run ``tiap`` with the given arguments in a fresh Python process and measure it:
its exit status, its seconds and its peak resident memory (shared by the benchmarks
that print a memory figure)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

#: runs the command line in this process, then prints its peak RSS as JSON
_CHILD = """
import json, resource, sys, time
from tiap.cli import main
start = time.perf_counter()
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as exc:
    code = exc.code
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
print(json.dumps({"exit": code, "seconds": time.perf_counter() - start, "peak_rss_mb": peak}))
"""


def run_measured(args: list[str], ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """``tiap ARGS`` in a fresh process: ``{"peak_rss_mb", "seconds"}``; exits with
    the command's error output when its status is not in ``ok``."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], check=True, capture_output=True, text=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["exit"] not in ok:
        raise SystemExit(f"tiap {args[0]} exited {result['exit']}: {done.stderr}")
    return {"peak_rss_mb": result["peak_rss_mb"], "seconds": result["seconds"]}
