"""The calibrated prevalence in ``report.md`` and ``report.html``: its lines, its tables
as plain (header, rows) pairs, and the forest plot (panel, PPI and humans per dataset),
for :mod:`tiap.agreement.sections`. Numbers as :mod:`tiap.report.numbers` writes them."""

from __future__ import annotations

from collections.abc import Iterator

from tiap.agreement.calibrated_models import (
    Calibrated,
    CalibratedGroup,
    CorrectedFigure,
    PpiFigure,
    ScaleShares,
    ShareFigure,
)
from tiap.agreement.report_text import ci, missing
from tiap.report.blocks import Figure
from tiap.report.charts import IntervalRow, interval_rows
from tiap.report.numbers import MISSING, level, num
from tiap.report.palette import series_color
from tiap.stats.ppi import RELIABLE_PPI_N

Table = tuple[list[str], list[list[object]]]

#: what a PPI interval on too few labelled cases is shown with
UNRELIABLE_PPI = (
    f"interval unreliable: fewer than {RELIABLE_PPI_N} labelled cases, or the label on "
    "none or all of them"
)
#: the three ways a share is shown in the forest plot, in order
WAYS = ("panel", "ppi", "humans")


def groups(c: Calibrated) -> Iterator[tuple[str, CalibratedGroup]]:
    """Every set of cases with its name: ``all cases``, then ``dataset X``, ``run X``,
    ``category X``."""
    if c.overall is not None:
        yield "all cases", c.overall
    for by in ("dataset", "run", "category"):
        for value, g in getattr(c, f"by_{by}").items():
            yield f"{by} {value}", g


def scales(g: CalibratedGroup) -> Iterator[tuple[str, ScaleShares]]:
    yield "labels", g.labels
    if g.binary is not None:
        yield "binary", g.binary


def share(f: ShareFigure) -> str:
    """``0.325 [0.304, 0.346] (40/123)``, or ``n/a (why)``."""
    if f.value is None:
        return missing(f.reason)
    return f"{num(f.value)}{ci(f.ci)} ({f.count}/{f.n})"


def ppi(f: PpiFigure) -> str:
    """``0.320 [0.299, 0.341] (n=123+1844)``, marked when on too few labels."""
    if f.value is None:
        return missing(f.reason)
    extra = [f"n={f.n}+{f.n_unlabelled}"] + ([UNRELIABLE_PPI] if f.ci_unreliable else [])
    return f"{num(f.value)}{ci(f.ci)} ({', '.join(extra)})"


def corrected(f: CorrectedFigure) -> str:
    """``0.143 [0.053, 0.233] (Se 0.900, Sp 0.800)``, or ``n/a (why)``."""
    if f.value is None:
        return missing(f.reason)
    return f"{num(f.value)}{ci(f.ci)} (Se {num(f.sensitivity)}, Sp {num(f.specificity)})"


def lines(c: Calibrated) -> list[str]:
    """What the figures rest on, and what each set of cases left out or pooled."""
    out = [
        f"Assumption: {c.assumption}",
        f"Policy: {c.policy}",
        f"Strata: {c.design}",
        f"Intervals: {level(c.confidence or 0.95)}; panel and humans: Wilson score; PPI: "
        "normal (stratified variance); Rogan-Gladen: delta method",
    ]
    for name, g in groups(c):
        for scale, s in scales(g):
            if s.no_majority or s.unresolved:
                out.append(
                    f"{name} ({scale}): left out {s.no_majority} case(s) with no decided "
                    f"majority and {s.unresolved} with an unresolved reference"
                )
            for pool in s.pooled:
                out.append(
                    f"{name} ({scale}): strata {' + '.join(pool)} pooled (fewer than 2 "
                    "labelled cases in one of them)"
                )
    return out


def shares(c: Calibrated) -> Table:
    """One row per set of cases, scale and label: the share three ways, the effective n
    and the majority's Rogan-Gladen correction."""
    header = ["cases", "scale", "label", "panel", "humans", "ppi", "effective n"]
    header.append("Rogan-Gladen (majority)")
    rows: list[list[object]] = []
    for name, g in groups(c):
        for scale, s in scales(g):
            for label, x in s.shares.items():
                eff = str(round(x.effective_n)) if x.effective_n is not None else MISSING
                rows.append(
                    [
                        name,
                        scale,
                        label,
                        share(x.panel),
                        share(x.humans),
                        ppi(x.ppi),
                        eff,
                        corrected(x.rogan_gladen.majority),
                    ]
                )
    return header, rows


def raters(c: Calibrated) -> Table | None:
    """Each compared rater's Rogan-Gladen share of each label over all cases (``None``
    without compared raters)."""
    g = c.overall
    if g is None:
        return None
    names = next((list(x.rogan_gladen.raters) for x in g.labels.shares.values()), [])
    if not names:
        return None
    header = ["rater", "scale", *(f"{label}" for label in g.labels.shares)]
    rows: list[list[object]] = []
    for scale, s in scales(g):
        labels = list(s.shares)
        for r in names:
            cells = [corrected(s.shares[label].rogan_gladen.raters[r]) for label in labels]
            cells += [""] * (len(header) - 2 - len(cells))
            rows.append([r, scale, *cells])
    return header, rows


def forest(c: Calibrated, scale: str) -> Figure | None:
    """The first label's share (the positive one on the binary collapse) per dataset
    and over all cases: panel, PPI and humans, each with its interval."""
    rows: list[IntervalRow] = []
    label = None
    sets = [("all cases", c.overall), *c.by_dataset.items()]
    for name, g in sets:
        if g is None:
            continue
        s = g.labels if scale == "labels" else g.binary
        if s is None or not s.shares:
            continue
        label = next(iter(s.shares))
        x = s.shares[label]
        ways: list[tuple[float | None, list[float] | None]] = [
            (x.panel.value, x.panel.ci),
            (x.ppi.value, x.ppi.ci),
            (x.humans.value, x.humans.ci),
        ]
        for i, (way, (value, interval)) in enumerate(zip(WAYS, ways, strict=True)):
            if value is None:
                continue
            lo, hi = (interval[0], interval[1]) if interval else (None, None)
            tip = f"{name}, {way}: {num(value)}{ci(interval)}"
            rows.append(IntervalRow(f"{name} · {way}", value, lo, hi, series_color(i), tip))
    if not rows or label is None:
        return None
    title = f"Share of {label} ({scale}): panel, PPI and humans"
    legend = [(way, series_color(i)) for i, way in enumerate(WAYS)]
    svg = interval_rows(rows, f"share of {label}", title, legend, sign=False)
    return Figure(svg, f"{title}, per dataset, with {level(c.confidence or 0.95)} intervals")
