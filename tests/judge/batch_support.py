"""Helpers of the provider-batch tests: panels of judges on a
:class:`~support.batch_server.BatchServer`, the cases' scripted labels, what the
server and the workspace saw."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from judge_support import KEY_ENV, rows

from support.batch_server import BatchServer
from support.loopback import label_reply, question_key
from tiap.judge.batch_run import BatchOptions

FAST = BatchOptions(poll_s=0.01)
# $1 / $2 per million tokens directly, half that through the batch API
PRICES = (1.0, 2.0)
BATCH_PRICES = (0.5, 1.0)


def number(body: dict) -> int:
    return int(question_key(body).rsplit(" ", 1)[1].rstrip("?"))


def parity(body: dict) -> object:
    """Even cases supports, odd partial."""
    return label_reply("supports" if number(body) % 2 == 0 else "partial")


def expected(i: int) -> str:
    return "supports" if i % 2 == 0 else "partial"


def panel_text(url: str, judges: dict[str, str], *, direct: tuple[str, ...] = ()) -> str:
    """Judges ``name -> model`` on the loopback server; those in ``direct`` have
    ``batch = false``."""
    lines = [
        'name = "batchy"',
        "temperature = 0",
        "max_tokens = 50",
        "timeout_s = 5",
        "max_attempts = 3",
        "backoff_initial_s = 0.01",
        "backoff_max_s = 0.05",
    ]
    for name, model in judges.items():
        lines += [
            "[[judges]]",
            f'name = "{name}"',
            f'model = "{model}"',
            f'api_base = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            "concurrency = 2",
            f"input_cost_per_mtok = {PRICES[0]}",
            f"output_cost_per_mtok = {PRICES[1]}",
            f"batch_input_cost_per_mtok = {BATCH_PRICES[0]}",
            f"batch_output_cost_per_mtok = {BATCH_PRICES[1]}",
        ]
        if name in direct:
            lines.append("batch = false")
    return "\n".join(lines) + "\n"


def write_panel(path: Path, url: str, judges: dict[str, str], **kwargs: object) -> Path:
    path.write_text(panel_text(url, judges, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path


def direct_requests(server: BatchServer) -> Counter[str]:
    """Chat requests that came over HTTP (batch lines carry no Authorization)."""
    return Counter(r.key for r in server.requests if r.authorization is not None)


def batch_lines(server: BatchServer) -> list[dict]:
    return [json.loads(line) for f in server.uploads() for line in f.data.splitlines()]


def labels(db: Path) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    got = rows(db, "SELECT case_id, rater, label, reason FROM labels ORDER BY id")
    assert len(got) == len({(c, r) for c, r, _, _ in got})  # one label per pair
    return {(c, r): (label, reason) for c, r, label, reason in got}
