"""Helpers for the judge tests: cases, panel files for the loopback server, raw
SQLite queries."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tiap.cases import Case, EvidenceItem, rank_bucket

KEY_ENV = "TIAP_TEST_JUDGE_KEY"
SECRET = "sk-test-9f8e7d6c5b4a-SECRET"

MEMORIES = (
    "{name} attended an LGBTQ support group on {day} May 2023.",
    "{name} likes painting sunsets with her kids.",
    "{name} went to a support group in May.",
)


def make_case(i: int, prefix: str = "c") -> Case:
    """A contested case whose question is unique (the loopback server keys on it)."""
    day = i % 28 + 1
    name = "Caroline"
    rank = i % 60 + 1
    return Case(
        case_id=f"{prefix}{i:04d}",
        dataset="toy",
        run="run-a",
        store="store-a",
        query_id=f"q{i}",
        query_index=i,
        question=f"When did {name} go to support group meeting number {i}?",
        answer=f"{day} May 2023",
        category="temporal",
        evidence=[
            EvidenceItem(
                source_id=f"D1:{i}",
                text=f"I went to a LGBTQ support group yesterday, meeting {i}.",
                speaker=name,
                time="8 May 2023",
            )
        ],
        memory_id=f"m{i}",
        memory_text=MEMORIES[i % 3].format(name=name, day=day),
        memory_source_ids=[f"D1:{i}"],
        rank=rank,
        rank_bucket=rank_bucket(rank),
        k=60,
    )


def panel_toml(
    url: str,
    *,
    judges: tuple[str, ...] = ("judge-a",),
    model: str | dict[str, str] = "openai/gpt-4o-mini",
    concurrency: int = 1,
    timeout_s: float = 5.0,
    max_attempts: int = 3,
    max_tokens: int = 100,
    prices: tuple[float, float] | None = None,
    extra: str = "",
    name: str = "loop",
    route: str | None = None,
    response_format: str | dict[str, str] | None = None,
) -> str:
    """A panel TOML whose judges call the loopback server (``response_format``: one
    for every judge, or one per judge name)."""
    lines = [
        f'name = "{name}"',
        "temperature = 0",
        f"max_tokens = {max_tokens}",
        f"timeout_s = {timeout_s}",
        f"max_attempts = {max_attempts}",
        "backoff_initial_s = 0.01",
        "backoff_max_s = 0.05",
        extra,
    ]
    for judge in judges:
        lines += [
            "[[judges]]",
            f'name = "{judge}"',
            f'model = "{model if isinstance(model, str) else model[judge]}"',
            f'api_base = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            f"concurrency = {concurrency}",
        ]
        if route is not None:
            lines.append(f'route = "{route}"')
        fmt = response_format if not isinstance(response_format, dict) else response_format[judge]
        if fmt is not None:
            lines.append(f'response_format = "{fmt}"')
        if prices is not None:
            lines += [f"input_cost_per_mtok = {prices[0]}", f"output_cost_per_mtok = {prices[1]}"]
    return "\n".join(lines) + "\n"


def rows(db: Path, sql: str, args: tuple = ()) -> list[tuple]:
    """Query a workspace file directly (independently of the Workspace class)."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def execute(db: Path, sql: str, args: tuple = ()) -> int:
    """Change a workspace file directly (committed); returns the rows changed."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(sql, args).rowcount
    finally:
        conn.close()
