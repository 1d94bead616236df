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
- the other groups are leased to this run until ``now + lease_s``.

**Right before each request is sent** (every attempt of it) the group is checked
again. With a budget, and before every retry, it is claimed again, alone, in one
transaction: the same sorting, so a lease that ran out (the run was stopped, or
its heartbeat held up) and was taken over, or a pair another run labelled
meanwhile, is never sent; a lease that ran out and was not taken is simply
claimed again; the first attempt's claim also checks the budget and reserves the
call's worst case. Without a budget the first attempt is checked against the
lease this run took (:meth:`Claimer.still_ours`): while it has at least one
attempt's deadline and a margin left, no other run can have taken the pair or its
request, nor labelled or answered it (a claim leaves them to the lease's owner),
so it is sent without asking the workspace; otherwise it is claimed again.
While the run works a heartbeat (:class:`Keeper`, a thread of its own, so a busy
event loop cannot hold it up) renews its unexpired leases, in flight or queued,
every third of ``lease_s``;
they are deleted as each group is stored and, whatever is left, when the run
ends (Ctrl-C too). A crashed run's leases expire and are taken over; those of a
run of this host whose process is gone are taken over at once. A lease lasts
longer than one attempt's deadline (:func:`lease_for`), so an attempt sent
right after its claim ends before its lease could run out, even if the
heartbeat were late.

The budget (``--max-cost``) is one ledger in the workspace (:class:`Ledger`):
each run of a panel, rubric and subset with a budget counts the spending of
every such run whose time overlaps its own and the reservations of those still
running (:meth:`Ledger.used`); a send reserves its worst case, a stored call
settles it with its actual cost.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import Workspace
from tiap.cases.probe_models import ProbeTag
from tiap.cases.run_models import LedgerEntry, PairLease
from tiap.errors import TiapError
from tiap.judge.panel import Panel
from tiap.judge.plan import Group

#: default seconds a lease (and a ledger reservation, and a batch poller) lasts
#: without renewal; renewed every third of it.
LEASE_S = 120.0
#: a lease lasts at least this much longer than one attempt's deadline.
LEASE_MARGIN_S = 1.0
#: groups claimed per transaction, at least.
CLAIM_MIN = 16


def _host() -> str:
    return socket.gethostname().split(".")[0] or "host"


def new_owner() -> str:
    """A name for this run in leases and the ledger: ``host:pid:random``."""
    return f"{_host()}:{os.getpid()}:{secrets.token_hex(4)}"


def _local_pid(owner: str) -> int | None:
    """The process id of an owner of this host (None: another host's, or not a run)."""
    parts = owner.split(":")
    if len(parts) != 3 or parts[0] != _host() or not parts[1].isdigit():
        return None
    return int(parts[1])


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this host exists and is not a zombie (a stopped
    process runs: it may go on)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    try:  # a killed process its parent has not reaped yet is a zombie
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def owner_gone(owner: str) -> bool:
    """Whether an owner is a process of this host that no longer runs (killed,
    crashed): what it holds is free at once, without waiting for its leases to
    expire. Owners on other hosts are only ever freed by expiry."""
    pid = _local_pid(owner)
    return pid is not None and not _running(pid)


def owner_runs_here(owner: str) -> bool:
    """Whether an owner is a process of this host that still exists (running or
    stopped): it may still settle what it reserved, whatever its row's expiry."""
    pid = _local_pid(owner)
    return pid is not None and _running(pid)


def reap_gone(ws: Workspace) -> list[str]:
    """Free what runs of this host that are gone held (see :func:`owner_gone`)."""
    now = time.time()
    gone = sorted(o for o in ws.live_owners(now) if owner_gone(o))
    for owner in gone:
        ws.reap_owner(owner, now)
    return gone


def lease_floor(panel: Panel) -> float:
    """The shortest lease a run of ``panel`` may take: one attempt's deadline (its
    ``timeout_s``) plus :data:`LEASE_MARGIN_S`."""
    return panel.timeout_s + LEASE_MARGIN_S


def lease_for(panel: Panel, lease_s: float | None) -> float:
    """The lease a run of ``panel`` takes: ``lease_s``, by default
    :data:`LEASE_S` (or the floor, if that is longer); one that is shorter than
    :func:`lease_floor` is refused (TiapError)."""
    floor = lease_floor(panel)
    if lease_s is None:
        return max(LEASE_S, floor)
    if not lease_s >= floor:
        raise TiapError(
            f"--lease must be at least {floor:g} s for panel '{panel.name}' (its timeout_s, "
            f"{panel.timeout_s:g} s, plus {LEASE_MARGIN_S:g} s: a request must end before its "
            f"lease can run out), got {lease_s:g}"
        )
    return lease_s


def lease_key(rubric_hash: str, probe: ProbeTag | None) -> str:
    """What a pair's lease is taken under: its rubric's hash, and a probe's variant
    after it (``HASH#probe:repeat:2``), so each probe variant of a case is a pair of
    its own and none holds up the audit's judging of that case."""
    return rubric_hash if probe is None else f"{rubric_hash}#probe:{probe.variant}"


def budget_scope(panel: str, rubric_hash: str, subset: str | None) -> str:
    """The runs that share a budget while they overlap: one panel, rubric and subset."""
    return f"{panel}|{rubric_hash}|{subset or ''}"


class Ledger:
    """This run's row of the workspace's budget ledger (see the module docstring),
    added when the run first claims something (a run with nothing to call adds none).

    Without ``max_cost`` nothing is limited, but what the run spends is recorded
    (and counts against no other run's budget).
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
        self._started = 0.0

    @property
    def budget(self) -> str:
        """The name of the budget this run joined (the oldest run of its scope with a
        budget that was live when it started, else its own); its ledger row is added
        now if need be."""
        return self.join(self.ws)

    def join(self, ws: Workspace) -> str:
        """:attr:`budget`, its row added on ``ws`` if need be (the run's handle, or
        its writer's inside the writer's transaction)."""
        if self._budget is None:
            now = time.time()
            self._started = now
            self._budget = ws.open_ledger(
                self.owner, self.scope, self.max_cost, now + self.lease_s, now
            )
        return self._budget

    @property
    def opened(self) -> bool:
        return self._budget is not None

    def _counts(self, row: LedgerEntry, now: float) -> tuple[bool, bool]:
        """Whether a row's spending, and its reservations, count for this run.

        Spending counts when the run overlapped this one: it is this run, or it was
        known to run after this one started (its ``expires_at``), or it has not
        finished and its process still exists on this host (a stopped run may go
        on). Reservations count while the run may still settle them: unfinished,
        and unexpired or its process still existing on this host; and, on this
        host, while a run that is gone has not been reaped (its reservations then
        count as spent: :meth:`~tiap.cases.leases.LeaseStore.reap_owner`). On
        another host expiry is the only sign: a run there that stops past its
        lease loses them.
        """
        if row.owner == self.owner:
            return True, True
        unfinished = row.finished_at is None
        here = unfinished and owner_runs_here(row.owner)
        shares = row.expires_at > self._started or here
        local = _local_pid(row.owner) is not None
        reserving = unfinished and (row.expires_at > now or local)
        return shares, shares and reserving

    def used(self, now: float | None = None) -> float | None:
        """What this run's budget holds now: the spending of every run that shares it
        and the reservations that still count (see :meth:`_counts`); without
        ``max_cost`` this run's own. None when this run never opened its row."""
        if not self.opened:
            return None
        now = time.time() if now is None else now
        total = 0.0
        for row in self.ws.sharing_ledger(self.scope, self.owner, self._started):
            if self.max_cost is None and row.owner != self.owner:
                continue
            spends, reserves = self._counts(row, now)
            total += (row.spent_usd if spends else 0.0) + (row.reserved_usd if reserves else 0.0)
        return total

    def fund(self, amounts: Sequence[float]) -> int:
        """How many of ``amounts`` (worst cases, in order) the budget takes now; they
        are reserved. Call inside the claiming transaction."""
        _ = self.budget  # the row is there before anything is reserved on it
        if self.max_cost is None:
            return len(amounts)
        used = self.used() or 0.0
        total, n = 0.0, 0
        for amount in amounts:
            if used + total + amount > self.max_cost + 1e-12:
                break
            total += amount
            n += 1
        if total:
            self.ws.reserve_budget(self.owner, total)
        return n

    def settle(self, reserved: float, actual: float | None, ws: Workspace | None = None) -> None:
        """A call is stored: release its reservation, record its cost (an unknown
        cost counts as its worst case). Call inside the storing transaction, on
        ``ws`` when it is another handle than the run's (the run's writer's); the
        run's row must be there (a call is claimed first)."""
        spent = reserved if actual is None else actual
        if not (reserved or spent):
            return
        if ws is None:
            _ = self.budget
        elif not self.opened:
            raise TiapError("a call was stored before its run joined the budget ledger")
        held = reserved if self.max_cost is not None else 0.0
        (self.ws if ws is None else ws).settle_budget(self.owner, held, spent)

    def settle_all(
        self, calls: Sequence[tuple[float, float | None]], ws: Workspace | None = None
    ) -> None:
        """:meth:`settle` of several stored calls, ``(reserved, actual)`` each, in one
        statement."""
        reserved = sum(r for r, _ in calls)
        spent = sum(r if actual is None else actual for r, actual in calls)
        self.settle(reserved, spent, ws)

    def release(self, reserved: float) -> None:
        """Give back a reservation whose call was never made."""
        if reserved and self.max_cost is not None and self.opened:
            self.ws.settle_budget(self.owner, reserved, 0.0)

    def close(self) -> None:
        if self.opened:
            self.ws.close_ledger(self.owner, time.time())


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
class _Seen:
    """What the workspace says, inside a claim, of the groups being claimed."""

    #: (case, request hash) pairs another run labelled since the plan
    done: set[tuple[str, str]]
    #: cases and request hashes leased by another live run
    held_cases: set[str]
    held_hashes: set[str]
    #: request hashes that are unanswered lines of an open provider batch
    in_batch: dict[str, int]
    #: request hashes answered (``model_calls``) since the plan
    answered: dict[str, dict[str, Any]]


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
    #: request hash -> until when this run's lease on the group's pairs lasts at
    #: least (as taken; the heartbeat renews them in the workspace)
    leased_until: dict[str, float] = field(default_factory=dict)
    #: a probe run's judge: its pairs are done by probe labels, leased apart
    probe: ProbeTag | None = None

    @property
    def lease_key(self) -> str:
        return lease_key(self.rubric_hash, self.probe)

    def claim(
        self,
        groups: Sequence[Group],
        worst: Callable[[Group], float],
        *,
        lease: bool = True,
        fund: bool = True,
        ws: Workspace | None = None,
    ) -> Claim:
        """Sort ``groups`` out, in one transaction, and lease (``lease``) and fund
        (``fund``: reserve each one's worst case, as many as the budget takes) the
        claimable ones; this run's leases on the others are dropped. With
        ``lease=False`` the caller records what owns them (a provider batch
        submission) in the same transaction. A group this run holds already is
        claimable: its lease is renewed. ``ws``: the handle to claim on (the run's
        writer's, in its thread; without funding), else the run's."""
        if ws is not None and fund:
            raise TiapError("a claim that funds is made on the run's own workspace handle")
        ws = self.ws if ws is None else ws
        out = Claim()
        with ws.transaction():
            now = time.time()
            free = self._sort(groups, self._look(ws, groups, now), out)
            self._fund(free, worst, fund, out)
            self._hold(ws, groups, out, lease, now)
        return out

    def still_ours(self, group: Group, min_left_s: float) -> bool:
        """Whether ``group`` may be sent now as it is, without asking the workspace:
        this run leased it, and that lease has at least ``min_left_s`` seconds
        left by the time it was taken (the heartbeat only lengthens it). While a
        lease of a live run is unexpired no other run takes the pair, nor its
        request (a claim leaves both to the lease's owner), so nobody else can have
        labelled or answered it meanwhile. False: claim it again (:meth:`claim`),
        which asks the workspace."""
        until = self.leased_until.get(group.request_hash)
        return until is not None and until >= time.time() + min_left_s

    def _foreign(
        self, ws: Workspace, cases: list[str], hashes: list[str], now: float
    ) -> list[PairLease]:
        """Other live runs' leases on the cases or request hashes (those of runs
        of this host that are gone are freed now)."""
        foreign = [
            lease
            for lease in ws.live_leases(
                self.rater, self.lease_key, case_ids=cases, request_hashes=hashes, now=now
            )
            if lease.owner != self.owner
        ]
        gone = {lease.owner for lease in foreign if owner_gone(lease.owner)}
        for owner in gone:
            ws.reap_owner(owner, now)
        return [lease for lease in foreign if lease.owner not in gone]

    def _look(self, ws: Workspace, groups: Sequence[Group], now: float) -> _Seen:
        hashes = [g.request_hash for g in groups]
        cases = [c for g in groups for c in g.case_ids]
        foreign = self._foreign(ws, cases, hashes, now)
        since = ws.labels_since if self.probe is None else ws.probe_labels_since
        return _Seen(
            done=since(self.rater, self.rubric_hash, cases, self.label_epoch),
            held_cases={lease.case_id for lease in foreign},
            held_hashes={lease.request_hash for lease in foreign},
            in_batch=ws.open_batch_requests(self.rater, self.rubric_hash, hashes),
            answered=ws.cached_responses(hashes),
        )

    def _sort(self, groups: Sequence[Group], seen: _Seen, out: Claim) -> list[Group]:
        """Each group's pairs not done since the plan, put where they belong; the
        claimable groups."""
        free: list[Group] = []
        for group in groups:
            left = [p for p in group.pairs if (p.case.case_id, group.request_hash) not in seen.done]
            out.done += len(group.pairs) - len(left)
            if not left:
                continue
            rest = Group(group.request_hash, left)
            h = group.request_hash
            if h in seen.held_hashes or seen.held_cases.intersection(rest.case_ids):
                out.held.append(rest)
            elif h in seen.in_batch:
                out.batched.append(rest)
            elif h in seen.answered:
                out.cached.append((rest, seen.answered[h]))
            else:
                free.append(rest)
        return free

    def _fund(
        self, free: list[Group], worst: Callable[[Group], float], fund: bool, out: Claim
    ) -> None:
        costs = [worst(g) for g in free]
        n = self.ledger.fund(costs) if fund else len(free)
        out.claimed, out.unfunded = free[:n], free[n:]
        if fund:
            out.reserved = {g.request_hash: c for g, c in zip(out.claimed, costs, strict=False)}

    def _hold(
        self, ws: Workspace, groups: Sequence[Group], out: Claim, lease: bool, now: float
    ) -> None:
        """Drop this run's leases on what it does not claim; lease what it does."""
        kept = {c for g in (*out.claimed, *out.unfunded) for c in g.case_ids}
        dropped = [c for g in groups for c in g.case_ids if c not in kept]
        if dropped:
            ws.release_leases(
                self.owner, rater=self.rater, rubric_hash=self.lease_key, case_ids=dropped
            )
        if out.claimed:
            self.ledger.join(ws)  # the run's ledger row is there before it holds anything
        for group in groups:
            self.leased_until.pop(group.request_hash, None)
        if lease:
            ws.take_leases(
                self.owner,
                self.rater,
                self.lease_key,
                [(c, g.request_hash) for g in out.claimed for c in g.case_ids],
                now + self.lease_s,
            )
            self.leased_until.update((g.request_hash, now + self.lease_s) for g in out.claimed)


class Keeper:
    """The heartbeat: renews this run's unexpired leases, its ledger row and its
    batch polls every third of ``lease_s`` while it works, from a thread of its own
    on a connection of its own, so that nothing the event loop does (a long
    synchronous step, a wait for the workspace's lock) holds it up."""

    def __init__(self, ws: Workspace, owner: str, lease_s: float) -> None:
        self.ws = ws
        self.owner = owner
        self.lease_s = lease_s
        self._stop = threading.Event()

    def renew(self, ws: Workspace | None = None) -> None:
        ws = self.ws if ws is None else ws
        now = time.time()
        expires = now + self.lease_s
        with ws.transaction():
            ws.renew_leases(self.owner, expires, now)
            ws.renew_polls(self.owner, expires)

    def _beat(self) -> None:
        # A renewal that fails (the workspace locked past SQLite's busy timeout) is
        # tried again at the next beat; a lease that runs out meanwhile is claimed
        # again, or given up, by the check before each send.
        try:
            own = Workspace(self.ws.path, create=False)
        except Exception:
            return
        with own:
            while not self._stop.wait(self.lease_s / 3):
                with contextlib.suppress(Exception):
                    self.renew(own)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self._stop.clear()
        thread = threading.Thread(target=self._beat, name="tiap-lease-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()

    def release(self) -> None:
        """Everything this run holds is free again (a clean exit, Ctrl-C, an error)."""
        with self.ws.transaction():
            self.ws.release_leases(self.owner)
            self.ws.release_polls(self.owner)
