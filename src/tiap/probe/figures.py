"""The probe report's figures and verdicts, per judge and probe kind.

On the cases where the unperturbed judgment and the probe judgment are both valid
(``n``):

- **flip rate**: the share of cases whose label changed, with its Wilson 95%
  interval (:func:`tiap.stats.intervals.wilson_interval`). For ``repeat`` it is
  the first repeat against the unperturbed judgment: the **noise floor**, what a
  second identical request changes;
- **direction** of the changes: with a binary collapse, the exact McNemar test of
  the changes negative -> positive (``toward``) against positive -> negative
  (``away``); with three labels or more, the cases moved toward and away from the
  rubric's first label (``supports``) in the rubric's order, and the sign test;
- ``repeat``: the share of cases whose repeats all agree (of the cases with every
  repeat valid), and Krippendorff's alpha (nominal) with the repeats as raters;
- ``injection``: the share of cases where the judge gave the planted label, with
  its Wilson 95% interval.

A kind's status: ``inconclusive`` below ``min_cases`` compared cases (or, for a
perturbation, without a repeat probe to give the noise floor); else ``sensitive``
when the flip rate's lower bound exceeds the noise floor's upper bound (for
``injection``: the planted-label share's lower bound exceeds ``max_injection``);
else ``stable``. A judge's verdict: ``sensitive to KIND[, KIND]`` when a kind is,
else ``inconclusive`` when a kind is (or only repeats were probed), else
``stable``.

Worked example: 30 compared cases, 12 flipped under ``order``: flip rate 0.4,
Wilson interval [0.246, 0.577]; repeats flipped 1 of 30: [0.006, 0.167]. 0.246 >
0.167: sensitive to order. Directions 10 toward and 2 away on three labels: the
sign test's p = 2 * P(X <= 2; 12, 1/2) = 2 * 79 / 4096 = 0.0386.
"""

from __future__ import annotations

from collections.abc import Sequence

from tiap.cases import Workspace
from tiap.cases.diagnostic_events import ProbedJudge, ProbedKind, ProbeThresholds
from tiap.probe.probe_plan import ProbePlan
from tiap.rubric import Rubric
from tiap.stats.chance_agreement import krippendorff_alpha
from tiap.stats.exact_tests import mcnemar_exact, sign_test
from tiap.stats.intervals import wilson_interval

__all__ = ["judge_figures", "kind_figures", "verdict"]

Pairs = list[tuple[str, str]]  # (unperturbed, probe) labels of the compared cases


def _ci(k: int, n: int) -> list[float] | None:
    return None if n == 0 else [round(v, 6) for v in wilson_interval(k, n)]


def _direction(rubric: Rubric, pairs: Pairs) -> tuple[str | None, int, int, float | None]:
    changed = [(a, b) for a, b in pairs if a != b]
    names = rubric.label_names
    if len(names) >= 3:
        rank = {n: i for i, n in enumerate(names)}
        toward = sum(1 for a, b in changed if rank[b] < rank[a])
        away = sum(1 for a, b in changed if rank[b] > rank[a])
        return "sign", toward, away, sign_test(toward, away).p_value
    positive = rubric.binary_positive if rubric.binary else names[0]

    def up(label: str) -> bool:
        return (rubric.collapse(label) if rubric.binary else label) == positive

    toward = sum(1 for a, b in changed if not up(a) and up(b))
    away = sum(1 for a, b in changed if up(a) and not up(b))
    return "mcnemar", toward, away, mcnemar_exact(away, toward).p_value


def kind_figures(rubric: Rubric, kind: str, pairs: Pairs) -> ProbedKind:
    """The flip rate and direction of one perturbation kind (status set later)."""
    n = len(pairs)
    flips = sum(1 for a, b in pairs if a != b)
    test, toward, away, p = _direction(rubric, pairs)
    return ProbedKind(
        kind=kind,
        n=n,
        flips=flips,
        flip_rate=None if n == 0 else round(flips / n, 6),
        flip_ci=_ci(flips, n),
        direction_test=test,
        toward=toward,
        away=away,
        direction_p=p,
        status="pending",
    )


def _repeat_figures(
    rubric: Rubric, first: Pairs, repeats: Sequence[Sequence[str | None]]
) -> ProbedKind:
    full = [r for r in repeats if all(lab is not None for lab in r)]
    unanimous = None
    if full:
        unanimous = round(sum(1 for r in full if len(set(r)) == 1) / len(full), 6)
    index = {n: i for i, n in enumerate(rubric.label_names)}
    codes = [[index.get(lab, -1) if lab else -1 for lab in r] for r in repeats]
    alpha = None
    if codes:
        by_rater = [list(col) for col in zip(*codes, strict=True)]
        alpha = krippendorff_alpha(by_rater, len(index))
    return kind_figures(rubric, "repeat", first).model_copy(
        update={
            "unanimous_share": unanimous,
            "alpha": None if alpha is None else round(float(alpha), 6),
        }
    )


def judge_figures(
    ws: Workspace, plan: ProbePlan, judge: str, thresholds: ProbeThresholds
) -> ProbedJudge:
    """One judge's figures per kind, from its stored probe labels, and its verdict."""
    rubric = plan.run.rubric
    given = {c: lab for (c, j), lab in plan.baseline.items() if j == judge}
    labels: dict[str, dict[str, str | None]] = {}
    for (name, variant), hashes in plan.requests.items():
        if name != judge:
            continue
        stored = ws.latest_probe_labels(judge, hashes.values())
        labels[variant] = {c: getattr(stored.get((c, h)), "label", None) for c, h in hashes.items()}
    kinds: list[ProbedKind] = []
    for kind in plan.kinds:
        if kind == "repeat":
            runs = [labels.get(f"repeat:{i}", {}) for i in range(plan.repeats)]
            first = _compared(given, runs[0])
            cases = [c for c, lab in given.items() if lab is not None]
            kinds.append(_repeat_figures(rubric, first, [[r.get(c) for r in runs] for c in cases]))
        elif kind == "injection":
            kinds.append(_injection(rubric, given, labels, plan))
        else:
            kinds.append(kind_figures(rubric, kind, _compared(given, labels.get(kind, {}))))
    spec = plan.judges[judge]
    return verdict(
        ProbedJudge(
            name=judge,
            model=spec.model,
            settings_hash=plan.settings_hashes[judge],
            verdict="pending",
            kinds=kinds,
        ),
        thresholds,
    )


def _compared(given: dict[str, str | None], probe: dict[str, str | None]) -> Pairs:
    return [
        (a, b)
        for c, a in sorted(given.items())
        if a is not None and (b := probe.get(c)) is not None
    ]


def _injection(
    rubric: Rubric,
    given: dict[str, str | None],
    labels: dict[str, dict[str, str | None]],
    plan: ProbePlan,
) -> ProbedKind:
    pairs: Pairs = []
    planted = 0
    for variant, got in sorted(labels.items()):
        if not variant.startswith("injection:"):
            continue
        target = variant.split(":", 1)[1]
        for c, b in sorted(got.items()):
            a = given.get(c)
            if a is None or b is None:
                continue
            pairs.append((a, b))
            planted += b == target
    n = len(pairs)
    return kind_figures(rubric, "injection", pairs).model_copy(
        update={
            "planted": planted,
            "planted_share": None if n == 0 else round(planted / n, 6),
            "planted_ci": _ci(planted, n),
        }
    )


def _status(
    k: ProbedKind, floor: ProbedKind | None, thresholds: ProbeThresholds
) -> tuple[str, str | None]:
    """One kind's status and, when inconclusive, why."""
    if k.n < thresholds.min_cases or k.flip_ci is None:
        return "inconclusive", f"{k.n} compared cases, fewer than {thresholds.min_cases}"
    if k.kind == "repeat":
        return "noise floor", None
    if k.kind == "injection":
        low = (k.planted_ci or [0.0])[0]
        return ("sensitive" if low > thresholds.max_injection else "stable"), None
    if floor is None or floor.n < thresholds.min_cases or floor.flip_ci is None:
        return "inconclusive", "no noise floor: probe 'repeat' too, on enough cases"
    return ("sensitive" if k.flip_ci[0] > floor.flip_ci[1] else "stable"), None


def verdict(judge: ProbedJudge, thresholds: ProbeThresholds) -> ProbedJudge:
    """Each kind's status and the judge's verdict (see the module docstring)."""
    floor = next((k for k in judge.kinds if k.kind == "repeat"), None)
    kinds = []
    for k in judge.kinds:
        status, reason = _status(k, floor, thresholds)
        kinds.append(k.model_copy(update={"status": status, "reason": reason}))
    sensitive = [k.kind for k in kinds if k.status == "sensitive"]
    judged = [k for k in kinds if k.kind != "repeat"]
    if sensitive:
        word = "sensitive to " + ", ".join(sensitive)
    elif not judged or any(k.status == "inconclusive" for k in kinds):
        word = "inconclusive"
    else:
        word = "stable"
    return judge.model_copy(update={"verdict": word, "kinds": kinds})
