"""Claims before calls, one budget for every run: concurrent runs split the work.

Several ``tiap judge run`` processes may work on one workspace at once. Each is
an *owner* (host, process id and a random part). Before it calls a group of
pairs that send one request (:class:`~tiap.judge.plan.Group`), a run claims it
in one transaction (:meth:`Claimer.claim`, a batch of groups at a time):

- pairs another run labelled since this run's plan was made (a label newer than
  the plan's label epoch with the pair's request hash) are done: skipped;
- a group with a pair, or a request hash, leased by another live run is held by
  that run: left to it (tried once more at the end);
- a group whose request is an unanswered line of an open provider batch belongs
  to that batch;
- a group whose request another run has answered meanwhile is answered from the
  ``model_calls`` cache;
- the other groups, as many (in order) as the budget takes, are leased to this
  run until ``now + lease_s``; the leases are renewed while the run works
  (:class:`Keeper`), deleted as each group is stored and, whatever is left, when
  the run ends (Ctrl-C too). A crashed run's leases expire and are taken over;
  those of a run of this host whose process is gone are taken over at once.

The budget (``--max-cost``) is one ledger in the workspace (:class:`Ledger`):
runs of the same panel, rubric and subset that overlap in time share it; a claim
reserves each group's worst case, a stored call settles it with its actual cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import Workspace
from tiap.judge.plan import Group

#: default seconds a lease (and a ledger reservation, and a batch poller) lasts
#: without renewal; renewed every third of it.
LEASE_S = 120.0
#: groups claimed per transaction, at least.
CLAIM_MIN = 16


def _host() -> str:
    return socket.gethostname().split(".")[0] or "host"


def new_owner() -> str:
    """A name for this run in leases and the ledger: ``host:pid:random``."""
    return f"{_host()}:{os.getpid()}:{secrets.token_hex(4)}"


def owner_gone(owner: str) -> bool:
    """Whether an owner is a process of this host that no longer runs (killed,
    crashed): what it holds is free at once, without waiting for its leases to
    expire. Owners on other hosts are only ever freed by expiry."""
    parts = owner.split(":")
    if len(parts) != 3 or parts[0] != _host() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: alive
        return False
    try:  # a killed process its parent has not reaped yet is a zombie
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def reap_gone(ws: Workspace) -> list[str]:
    """Free what runs of this host that are gone held (see :func:`owner_gone`)."""
    gone = sorted(o for o in ws.live_owners(time.time()) if owner_gone(o))
    for owner in gone:
        ws.reap_owner(owner)
    return gone


def budget_scope(panel: str, rubric_hash: str, subset: str | None) -> str:
    """The runs that share a budget while they overlap: one panel, rubric and subset."""
    return f"{panel}|{rubric_hash}|{subset or ''}"


class Ledger:
    """This run's row of the workspace's budget ledger (see the module docstring),
    added when the run first claims something (a run with nothing to call adds none).

    Without ``max_cost`` nothing is limited, but what the run spends is recorded.
    """

    def __init__(
        self,
        ws: Workspace,
        owner: str,
        scope: str,
        max_cost: float | None,
        lease_s: float,
    ) -> None:
        self.ws = ws
        self.owner = owner
        self.scope = scope
        self.max_cost = max_cost
        self.lease_s = lease_s
        self._budget: str | None = None

    @property
    def budget(self) -> str:
        """The budget this run counts against (its ledger row is added now if need be)."""
        if self._budget is None:
            now = time.time()
            self._budget = self.ws.open_ledger(
                self.owner, self.scope, self.max_cost, now + self.lease_s, now
            )
        return self._budget

    @property
    def opened(self) -> bool:
        return self._budget is not None

    def fund(self, amounts: Sequence[float]) -> int:
        """How many of ``amounts`` (worst cases, in order) the budget takes now; they
        are reserved. Call inside the claiming transaction."""
        budget = self.budget
        if self.max_cost is None:
            return len(amounts)
        used = self.ws.budget_used(budget, time.time())
        total, n = 0.0, 0
        for amount in amounts:
            if used + total + amount > self.max_cost + 1e-12:
                break
            total += amount
            n += 1
        if total:
            self.ws.reserve_budget(self.owner, total)
        return n

    def settle(self, reserved: float, actual: float | None) -> None:
        """A call is stored: release its reservation, record its cost (an unknown
        cost counts as its worst case). Call inside the storing transaction."""
        spent = reserved if actual is None else actual
        if reserved or spent:
            _ = self.budget
            self.ws.settle_budget(self.owner, reserved if self.max_cost is not None else 0.0, spent)

    def release(self, reserved: float) -> None:
        """Give back a reservation whose call was never made."""
        if reserved and self.max_cost is not None and self.opened:
            self.ws.settle_budget(self.owner, reserved, 0.0)

    def used(self) -> float | None:
        """What the shared budget holds now (every run's spending and live
        reservations); None when this run never opened its ledger row."""
        if not self.opened:
            return None
        return self.ws.budget_used(self.budget, time.time())

    def close(self) -> None:
        if self.opened:
            self.ws.close_ledger(self.owner)


@dataclass
class Claim:
    """What one claim made of a batch of groups."""

    #: leased to this run (and funded): call them
    claimed: list[Group] = field(default_factory=list)
    #: answered since the plan: (group, stored response)
    cached: list[tuple[Group, dict[str, Any]]] = field(default_factory=list)
    #: leased by another live run
    held: list[Group] = field(default_factory=list)
    #: unanswered lines of an open provider batch
    batched: list[Group] = field(default_factory=list)
    #: not funded: the budget did not take them
    unfunded: list[Group] = field(default_factory=list)
    #: pairs another run labelled since the plan
    done: int = 0
    #: each claimed group's reservation, by request hash
    reserved: dict[str, float] = field(default_factory=dict)


@dataclass
class Claimer:
    """Claims groups of one judge for this run (see the module docstring)."""

    ws: Workspace
    owner: str
    rater: str
    rubric_hash: str
    label_epoch: int
    ledger: Ledger
    lease_s: float = LEASE_S

    def claim(
        self, groups: Sequence[Group], worst: Callable[[Group], float], *, lease: bool = True
    ) -> Claim:
        """Sort ``groups`` out, in one transaction, and lease (``lease``) and fund the
        claimable ones. With ``lease=False`` the caller records what owns them (a
        provider batch submission) in the same transaction."""
        out = Claim()
        with self.ws.transaction():
            now = time.time()
            hashes = [g.request_hash for g in groups]
            cases = [c for g in groups for c in g.case_ids]
            done = self.ws.labels_since(self.rater, self.rubric_hash, cases, self.label_epoch)
            foreign = [
                lease
                for lease in self.ws.live_leases(
                    self.rater, self.rubric_hash, case_ids=cases, request_hashes=hashes, now=now
                )
                if lease.owner != self.owner
            ]
            gone = {lease.owner for lease in foreign if owner_gone(lease.owner)}
            for owner in gone:
                self.ws.reap_owner(owner)
            foreign = [lease for lease in foreign if lease.owner not in gone]
            held_cases = {lease.case_id for lease in foreign}
            held_hashes = {lease.request_hash for lease in foreign}
            in_batch = self.ws.open_batch_requests(self.rater, self.rubric_hash, hashes)
            answered = self.ws.cached_responses(hashes)
            free: list[Group] = []
            for group in groups:
                left = [p for p in group.pairs if (p.case.case_id, group.request_hash) not in done]
                out.done += len(group.pairs) - len(left)
                if not left:
                    continue
                rest = Group(group.request_hash, left)
                if group.request_hash in held_hashes or held_cases.intersection(rest.case_ids):
                    out.held.append(rest)
                elif group.request_hash in in_batch:
                    out.batched.append(rest)
                elif group.request_hash in answered:
                    out.cached.append((rest, answered[group.request_hash]))
                else:
                    free.append(rest)
            costs = [worst(g) for g in free]
            n = self.ledger.fund(costs)
            out.claimed, out.unfunded = free[:n], free[n:]
            out.reserved = {g.request_hash: c for g, c in zip(out.claimed, costs, strict=False)}
            if lease:
                self.ws.take_leases(
                    self.owner,
                    self.rater,
                    self.rubric_hash,
                    [(c, g.request_hash) for g in out.claimed for c in g.case_ids],
                    now + self.lease_s,
                )
        return out


class Keeper:
    """Renews this run's leases, ledger row and batch polls while it works."""

    def __init__(self, ws: Workspace, owner: str, lease_s: float) -> None:
        self.ws = ws
        self.owner = owner
        self.lease_s = lease_s

    def renew(self) -> None:
        expires = time.time() + self.lease_s
        with self.ws.transaction():
            self.ws.renew_leases(self.owner, expires)
            self.ws.renew_polls(self.owner, expires)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            self.renew()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._loop())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def release(self) -> None:
        """Everything this run holds is free again (a clean exit, Ctrl-C, an error)."""
        with self.ws.transaction():
            self.ws.release_leases(self.owner)
            self.ws.release_polls(self.owner)
