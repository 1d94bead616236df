"""The group-commit writer: results commit in groups of at most GROUP_CALLS calls,
off the event loop, each awaited result committed when it returns; a flush commits
at once; a result the workspace refuses fails its group (and only it); closing
commits what is queued; batch jobs queued one after another are stored together."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from tiap.cases import Workspace
from tiap.cases.group_commit import GROUP_CALLS, GROUP_WAIT_S, Batch, GroupWriter
from tiap.errors import TiapError


def event_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'probe'").fetchone()[0]
    finally:
        conn.close()


def workspace(tmp_path: Path) -> Path:
    db = tmp_path / "w.db"
    with Workspace(db):
        pass
    return db


def test_the_bound_is_64_calls_and_a_short_wait() -> None:
    assert GROUP_CALLS == 64
    assert 0 < GROUP_WAIT_S <= 0.05


def test_results_commit_in_groups_of_at_most_the_bound_off_the_loop(tmp_path: Path) -> None:
    db = workspace(tmp_path)
    loop_thread = threading.get_ident()
    seen: list[tuple[int, int]] = []  # (writer thread, transaction serial) per job

    def job(i: int):
        def run(ws: Workspace) -> int:
            assert ws.in_transaction
            seen.append((threading.get_ident(), ws.serial))
            ws.record_event("probe", {"i": i})
            return i

        return run

    async def main() -> list[int]:
        writer = await GroupWriter(db).start()
        try:
            return await asyncio.gather(*(writer.write(job(i)) for i in range(200)))
        finally:
            await writer.close()

    results = asyncio.run(main())
    assert results == list(range(200))
    assert event_count(db) == 200
    assert {t for t, _ in seen} != {loop_thread}
    assert len({t for t, _ in seen}) == 1  # one writer thread
    per_group: dict[int, int] = {}
    for _, serial in seen:
        per_group[serial] = per_group.get(serial, 0) + 1
    assert max(per_group.values()) <= GROUP_CALLS
    assert len(per_group) >= 200 // GROUP_CALLS + 1
    assert len(per_group) < 200  # grouped, not one transaction per result


def test_no_more_than_the_bound_is_ever_uncommitted(tmp_path: Path) -> None:
    db = workspace(tmp_path)
    uncommitted: list[int] = []

    async def main() -> None:
        writer = await GroupWriter(db, group_calls=8, group_wait_s=0.2).start()
        queued = []
        try:
            for i in range(20):
                queued.append(await writer.enqueue(lambda ws, i=i: ws.record_event("probe", {})))
                uncommitted.append(sum(not f.done() for f in queued))
            await asyncio.gather(*queued)
        finally:
            await writer.close()

    asyncio.run(main())
    assert max(uncommitted) <= 8
    assert event_count(db) == 20


def test_a_flush_commits_at_once_and_close_commits_what_is_queued(tmp_path: Path) -> None:
    db = workspace(tmp_path)

    async def main() -> tuple[int, int]:
        writer = await GroupWriter(db, group_wait_s=60.0).start()
        first = await writer.enqueue(lambda ws: ws.record_event("probe", {}))
        await writer.flush()  # without it the group would wait a minute
        assert first.done()
        committed = event_count(db)
        await writer.enqueue(lambda ws: ws.record_event("probe", {}))
        await writer.close()  # commits the one queued
        return committed, event_count(db)

    assert asyncio.run(main()) == (1, 2)


def test_a_refused_result_fails_its_group_and_is_raised_where_it_is_awaited(
    tmp_path: Path,
) -> None:
    db = workspace(tmp_path)

    def refused(ws: Workspace) -> None:
        ws.record_event("probe", {})
        raise TiapError("refused")

    async def main() -> None:
        writer = await GroupWriter(db).start()
        try:
            before = await writer.write(lambda ws: ws.record_event("probe", {}))
            assert before
            bad = await writer.enqueue(refused)
            good = await writer.enqueue(lambda ws: ws.record_event("probe", {}))
            with pytest.raises(TiapError, match="refused"):
                await writer.flush()  # in the same group
            with pytest.raises(TiapError, match="refused"):
                await bad
            with pytest.raises(TiapError, match="refused"):
                await good  # its group did not commit
            assert await writer.write(lambda ws: ws.record_event("probe", {}))  # goes on
        finally:
            await writer.close()

    asyncio.run(main())
    assert event_count(db) == 2  # the first and the last


def test_a_writer_on_a_missing_workspace_fails_to_start(tmp_path: Path) -> None:
    async def main() -> None:
        await GroupWriter(tmp_path / "none.db").start()

    with pytest.raises(TiapError, match="workspace not found"):
        asyncio.run(main())


def test_batch_jobs_queued_together_are_stored_together_in_order(tmp_path: Path) -> None:
    db = workspace(tmp_path)
    stores: list[tuple[str, list[int], int]] = []  # (store, items, transaction serial)

    def store(name: str):
        def run(ws: Workspace, items: list[int]) -> list[int]:
            stores.append((name, list(items), ws.serial))
            for i in items:
                ws.record_event("probe", {"i": i})
            return [i * 10 for i in items]

        return run

    odd, even = store("odd"), store("even")

    def plain(ws: Workspace) -> str:
        stores.append(("plain", [], ws.serial))
        return "plain"

    async def main() -> list[object]:
        writer = await GroupWriter(db, group_wait_s=60.0).start()
        try:
            queued = [await writer.enqueue(Batch(odd, i)) for i in (1, 3, 5)]
            queued.append(await writer.enqueue(plain))
            queued += [await writer.enqueue(Batch(odd, 7)), await writer.enqueue(Batch(even, 2))]
            queued.append(await writer.enqueue(Batch(odd, 9)))
            await writer.flush()
            return [q.result() for q in queued]
        finally:
            await writer.close()

    assert asyncio.run(main()) == [10, 30, 50, "plain", 70, 20, 90]
    # one group; runs of one store together, in queue order; anything else splits them
    assert [(name, items) for name, items, _ in stores] == [
        ("odd", [1, 3, 5]),
        ("plain", []),
        ("odd", [7]),
        ("even", [2]),
        ("odd", [9]),
    ]
    assert len({serial for *_, serial in stores}) == 1
    assert event_count(db) == 6


def test_a_batch_store_that_does_not_answer_each_item_fails_its_group(tmp_path: Path) -> None:
    db = workspace(tmp_path)

    def short(ws: Workspace, items: list[int]) -> list[int]:
        ws.record_event("probe", {})
        return items[:-1]

    async def main() -> None:
        writer = await GroupWriter(db, group_wait_s=60.0).start()
        try:
            first = await writer.enqueue(Batch(short, 1))
            second = await writer.enqueue(Batch(short, 2))
            with pytest.raises(TiapError, match="2 items"):
                await writer.flush()
            for queued in (first, second):
                with pytest.raises(TiapError, match="returned 1 results for 2 items"):
                    await queued
        finally:
            await writer.close()

    asyncio.run(main())
    assert event_count(db) == 0
