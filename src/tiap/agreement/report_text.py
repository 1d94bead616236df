"""The agreement report's figures as text (numbers as :mod:`tiap.report.numbers` writes
them), its source and rubric lines, and the terminal summary."""

from __future__ import annotations

from tiap.agreement.constant import MEANING
from tiap.agreement.models import AgreementReport, Figure, Gate
from tiap.report.numbers import MISSING, bounds, num, pct, unreliable, yes_no
from tiap.stats import RELIABLE_PERCENTILE_N
from tiap.text import inert

#: what a percentile interval on too few cases is shown with
UNRELIABLE = unreliable(RELIABLE_PERCENTILE_N)


def ci(interval: list[float] | None) -> str:
    """`` [0.781, 0.872]`` after a figure; empty without an interval."""
    return "" if not interval else f" {bounds(interval[0], interval[1])}"


def missing(reason: str | None) -> str:
    """An undefined figure: ``n/a (why)``."""
    return f"{MISSING} ({reason})" if reason else MISSING


def figure(f: Figure | None, *, with_n: bool = True) -> str:
    """``0.830 [0.781, 0.872] (n=115)``, or ``n/a (why)``; a percentile interval on
    too few cases is marked: ``1.000 [1.000, 1.000] (n=4, interval unreliable: ...)``."""
    if f is None:
        return ""
    if f.value is None:
        return missing(f.reason)
    extra = [f"n={f.n}"] if with_n else []
    if f.ci_unreliable:
        extra.append(UNRELIABLE)
    return f"{num(f.value)}{ci(f.ci)}" + (f" ({', '.join(extra)})" if extra else "")


def kappa_text(
    value: float | None,
    interval: list[float] | None,
    reason: str | None,
    ci_unreliable: bool = False,
) -> str:
    """A kappa with its interval (marked when drawn from too few cases), or why not."""
    if value is None:
        return missing(reason)
    return f"{num(value)}{ci(interval)}" + (f" ({UNRELIABLE})" if ci_unreliable else "")


def source_line(r: AgreementReport) -> str:
    s = r.source
    if s.kind == "workspace":
        scope = (
            f"subset {s.subset} (kind {s.subset_kind or 'unknown'})" if s.subset else "all cases"
        )
        version = (
            f"cases of bundle version {s.bundle_version[:12]}"
            if s.bundle_version
            else "cases of no single recorded bundle version"
        )
        return f"workspace {s.path}, {scope}; {version}"
    if s.kind == "file":
        return f"labels file {s.path}"
    return "labels given in memory"


def rubric_line(r: AgreementReport) -> str:
    if r.rubric is None:
        return "none (labels as found; no binary collapse)"
    return f"{r.rubric.id} v{r.rubric.version} ({r.rubric.hash[:12]})"


FIGURE_ROWS = (
    ("Fleiss' kappa", "fleiss_kappa"),
    ("Krippendorff's alpha (nominal)", "krippendorff_alpha"),
    ("Mean pairwise percent agreement", "percent_agreement"),
    ("Gwet's AC1", "gwet_ac1"),
)


def scales(r: AgreementReport) -> list[str]:
    """``labels``, and ``binary`` when the rubric collapses labels."""
    return ["labels", *(["binary"] if r.binary_labels else [])]


#: how each ``gate_on`` rule is said
GATE_ON_TEXT = {
    "point": "thresholds on the point estimates (--gate-on point)",
    "lower": "thresholds on the 95% interval lower bounds (--gate-on lower)",
}


#: whom the gate's Fleiss' kappa is over, as each ``gate_raters`` choice is said
GATE_RATERS_TEXT = {
    "judges": "Fleiss' kappa over the judges (--gate-raters judges)",
    "judges+reference": (
        "Fleiss' kappa over the judges and the human reference (--gate-raters judges+reference)"
    ),
}


def gate_rule(g: Gate) -> str:
    """``thresholds on the point estimates (--gate-on point); conclusive: no; Fleiss'
    kappa over the judges (--gate-raters judges)``."""
    return (
        f"{GATE_ON_TEXT[g.gate_on]}; conclusive: {yes_no(g.conclusive)}; "
        f"{GATE_RATERS_TEXT[g.gate_raters]}"
    )


def summary_lines(r: AgreementReport) -> list[str]:
    """A few lines for the terminal: headline figures, majority and the gate (names,
    labels and notes made :func:`~tiap.text.inert`)."""
    lines = [
        f"{r.n_cases} cases ({source_line(r)}), {r.n_complete} labelled validly by every "
        f"included rater; raters: {', '.join(r.included_raters)}"
    ]
    for name, key in FIGURE_ROWS:
        parts = [f"{s} {figure(getattr(r, key)[s])}" for s in scales(r)]
        lines.append(f"{name}: {'; '.join(parts)}")
    d = r.majority.labels
    shares = ", ".join(f"{lab} {pct(d.shares[lab])}" for lab in d.counts)
    lines.append(
        f"majority ({len(r.majority.voters)} voters, quorum {r.majority.quorum}): {shares} "
        f"of {d.decided} decided; {d.ties} ties, {d.no_majority} without majority, "
        f"{d.no_quorum} without quorum"
    )
    for x in r.raters:
        counts = ", ".join(f"{lab} {n}" for lab, n in x.counts.items())
        invalid = f", {x.n_invalid} invalid" if x.n_invalid else ""
        lines.append(f"labels of {x.name} ({x.kind or 'kind unknown'}): {counts}{invalid}")
    for x in r.raters:
        if x.constant:
            lines.append(
                f"constant rater: {x.name} gave '{x.constant_label}' to all {x.n_valid} cases "
                f"it labelled validly ({MEANING})"
            )
    g = r.gate
    lines.append(f"scale gate: {g.status} ({g.note}); {gate_rule(g)}")
    lines += [f"  failed: {f}" for f in g.failures]
    return [inert(line) for line in lines]
