"""``report.md`` wording of which runs the pooled figures pool over
(:mod:`tiap.rescore.pooling`)."""

from __future__ import annotations

from tiap.report.blocks import Block, Data, joined, para
from tiap.rescore.report_models import RescoreReport


def pooled_label(report: RescoreReport) -> str:
    """``all runs``, or ``N runs, raw-only left out`` when some are."""
    pooled = report.pooled_runs
    if pooled is None or not pooled.left_out:
        return "all runs"
    return f"{len(pooled.runs)} runs, raw-only left out"


def pooled_note(report: RescoreReport) -> list[Block]:
    """Which runs were left out of the pooled rows, and why (nothing when none was)."""
    pooled = report.pooled_runs
    if pooled is None or not pooled.left_out:
        return []
    return [
        para(
            f"The pooled rows leave out {len(pooled.left_out)} run(s) on a {pooled.reason} (",
            *joined(", ", (Data(r) for r in pooled.left_out)),
            "); `--pool-raw-only` pools them too.",
        )
    ]
