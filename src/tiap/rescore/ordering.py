"""Target ordering (the paper's Table 7): per run and measure, the targets from best to
worst, whether that ordering is *monotone* (the paper's definition), and whether it is
*containment consistent* (tiap's own check).

The ordering compares the targets' means on the run's shared subset (the queries
where every analysed target is non-empty: ``shared_all``), so every target is scored
on the same queries. It is written best first, ``>`` between targets whose means
differ and ``=`` between ties (means within the change tolerance, 1e-9), e.g.
``source > canonical > raw`` or ``source = raw > canonical``; tied targets are listed
in the report's target order.

**Monotone** (the paper, Table 7). The targets are ordered Raw, Canonical, Source, and
an ordering is monotone when the scores follow that order: Source >= Canonical >= Raw
(a tie, within the tolerance, follows it). So ``source > canonical > raw`` is monotone
and ``source > raw > canonical`` (Source above Raw, Raw above Canonical) and
``canonical > source > raw`` are not. Of the three, the analysed ones are checked in
that order (with Raw and Source only: Source >= Raw); with fewer than two analysed,
``monotone`` is ``null``.

**Containment consistent** (tiap). Per query, Raw ⊆ Source and Canonical ⊆ Source
(Source is every linked memory; Raw and Canonical are disjoint parts of it), and
nothing orders Raw and Canonical. An ordering is containment consistent when no
target scores below a target it contains: Source >= max(Raw, Canonical), Raw and
Canonical in either order. Hit, precision and MRR can only rise when relevant
memories are added, so on the same queries they are always containment consistent;
nDCG, recall and MAP can fall (the ideal ranking and the denominator grow with the
target). With no contained pair analysed, ``containment_consistent`` is ``null``.
"""

from __future__ import annotations

from collections import Counter

from tiap.rescore.common import Settings
from tiap.rescore.report_models import RunReport, TargetOrder, TargetOrdering
from tiap.rescore.targets import CANONICAL, RAW, SOURCE

#: The paper's order of the targets: an ordering is monotone when scores follow it.
PAPER_ORDER: tuple[str, ...] = (RAW, CANONICAL, SOURCE)
#: target -> the targets it contains (per query, as sets of memories).
CONTAINS: dict[str, tuple[str, ...]] = {SOURCE: (RAW, CANONICAL)}

METHOD = (
    "targets best first by their means on the run's shared subset (every target non-empty), "
    "'=' between ties; monotone (the paper, Table 7): the scores follow the order Raw, "
    "Canonical, Source, i.e. Source >= Canonical >= Raw (ties follow it); containment "
    "consistent (tiap): no target below one it contains (Raw and Canonical are subsets of "
    "Source per query): Source >= max(Raw, Canonical), Raw and Canonical in either order"
)


def order_text(means: dict[str, float], targets: list[str], tol: float) -> str:
    """``means`` (target -> value) best first: ``>`` between different values, ``=`` in ties."""
    position = {t: i for i, t in enumerate(targets)}
    ranked = sorted(means, key=lambda t: (-means[t], position[t]))
    groups: list[list[str]] = []
    for t in ranked:
        if groups and abs(means[groups[-1][0]] - means[t]) <= tol:
            groups[-1].append(t)
        else:
            groups.append([t])
    for g in groups:
        g.sort(key=position.__getitem__)
    return " > ".join(" = ".join(g) for g in groups)


def is_monotone(means: dict[str, float], tol: float) -> bool | None:
    """The paper's rule: the analysed targets' scores follow the order Raw, Canonical,
    Source (each at least the one before, within ``tol``); ``None`` with fewer than two
    of them analysed."""
    present = [t for t in PAPER_ORDER if t in means]
    if len(present) < 2:
        return None
    return all(
        means[later] >= means[earlier] - tol
        for i, earlier in enumerate(present)
        for later in present[i + 1 :]
    )


def is_containment_consistent(means: dict[str, float], tol: float) -> bool | None:
    """tiap's rule: no target below a target it contains; ``None`` when no such pair is
    analysed."""
    pairs = [(b, a) for b, inner in CONTAINS.items() if b in means for a in inner if a in means]
    if not pairs:
        return None
    return all(means[b] >= means[a] - tol for b, a in pairs)


def ordering_report(runs: dict[str, RunReport], settings: Settings) -> TargetOrdering:
    targets = list(settings.targets)
    out: dict[str, dict[str, TargetOrder]] = {}
    counts: dict[str, Counter[str]] = {m: Counter() for m in settings.names}
    not_monotone = dict.fromkeys(settings.names, 0)
    not_consistent = dict.fromkeys(settings.names, 0)
    for run, rr in runs.items():
        shared = rr.shared_all
        out[run] = {}
        for m in settings.names:
            means = {t: shared.means[t][m] for t in targets}
            defined = {t: v for t, v in means.items() if v is not None}
            if shared.n == 0 or len(defined) < len(targets) or len(targets) < 2:
                out[run][m] = TargetOrder(n=shared.n, order=None, monotone=None)
                continue
            order = order_text(defined, targets, settings.change_tolerance)
            mono = is_monotone(defined, settings.change_tolerance)
            consistent = is_containment_consistent(defined, settings.change_tolerance)
            out[run][m] = TargetOrder(
                n=shared.n, order=order, monotone=mono, containment_consistent=consistent
            )
            counts[m][order] += 1
            not_monotone[m] += mono is False
            not_consistent[m] += consistent is False
    return TargetOrdering(
        basis="shared_all",
        method=METHOD,
        runs=out,
        counts={
            m: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for m, c in counts.items()
        },
        n_not_monotone=not_monotone,
        n_not_containment_consistent=not_consistent,
    )
