"""Changing a copy of a bundle on disk, the way a rebuilt bundle changes: every
derived memory's text, every ranking, or only the layout of its files."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from tiap.cases.extract import find_contested
from tiap.cases.models import Case
from tiap.traces.bundle import read_bundle


def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def rewrite_derived_texts(bundle: Path, prefix: str = "Rewritten: ") -> int:
    """Every derived (non-raw) memory of every store gets a new text; returns how many."""
    changed = 0
    for path in sorted((bundle / "stores").glob("*.jsonl")):
        rows = _rows(path)
        for row in rows:
            if not row["raw"]:
                row["text"] = prefix + str(row["text"])
                changed += 1
        _write(path, rows)
    return changed


def rewrite_memory(bundle: Path, store: str, memory_id: str, text: str) -> None:
    """One memory of one store gets a new text."""
    path = bundle / "stores" / f"{store}.jsonl"
    rows = _rows(path)
    for row in rows:
        if row["memory_id"] == memory_id:
            row["text"] = text
    _write(path, rows)


def reverse_rankings(bundle: Path) -> None:
    """Every ranking of every run, best last (scores dropped)."""
    for path in sorted((bundle / "runs").glob("*.jsonl")):
        rows = _rows(path)
        for row in rows:
            row["ranking"] = list(reversed(row["ranking"]))  # type: ignore[call-overload]
            row.pop("scores", None)
        _write(path, rows)


def relayout(bundle: Path, seed: int = 7) -> None:
    """The same content in another layout: the lines of every store, run and
    ``sources.jsonl`` shuffled, keys in another order with whitespace, and the runs
    of ``bundle.toml`` listed in reverse order."""
    rng = random.Random(seed)
    paths = [bundle / "sources.jsonl", *sorted((bundle / "stores").glob("*.jsonl"))]
    paths += sorted((bundle / "runs").glob("*.jsonl"))
    for path in paths:
        rows = _rows(path)
        rng.shuffle(rows)
        text = "".join(
            json.dumps(dict(reversed(list(r.items()))), indent=None, separators=(" , ", " : "))
            + "\n"
            for r in rows
        )
        path.write_text(text, encoding="utf-8")
    config = (bundle / "bundle.toml").read_text(encoding="utf-8")
    head, *runs = config.split("\n[runs.")
    blocks: dict[str, list[str]] = {}
    order: list[str] = []
    for block in runs:
        name = block.split("]", 1)[0].removesuffix(".config")
        if name not in blocks:
            order.append(name)
        blocks.setdefault(name, []).append(block)
    body = [b for name in reversed(order) for b in blocks[name]]
    (bundle / "bundle.toml").write_text(
        "\n[runs.".join([head, *body]),
        encoding="utf-8",
    )


def fresh_cases(bundle: Path, k: int | None = None) -> list[Case]:
    """The contested credits a fresh extraction of the bundle on disk gives."""
    return find_contested(read_bundle(bundle), k=k)[0]
