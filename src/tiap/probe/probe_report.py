"""The probe report: ``report.json`` (the :class:`~tiap.cases.diagnostic_events.ProbeEvent`
as recorded), ``report.md`` and ``report.html`` (the same blocks, :mod:`tiap.report`),
with a figure of every judge's flip rates and their Wilson 95% intervals per kind."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tiap.cases.diagnostic_events import ProbedKind, ProbeEvent
from tiap.probe.perturb import FILLER, INJECTION
from tiap.report.blocks import (
    Badge,
    Block,
    Figure,
    Figures,
    bullets,
    data,
    heading,
    para,
    table,
)
from tiap.report.charts import IntervalRow, interval_rows
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.numbers import bounds, num
from tiap.report.page import page
from tiap.report.palette import series_color

__all__ = ["probe_blocks", "write_probe_report"]

TITLE = "Probe report: is each judge fit to judge?"


def _bounds(ci: list[float] | None) -> str:
    return "" if ci is None else bounds(ci[0], ci[1])


def _rate(k: ProbedKind) -> str:
    return f"{num(k.flip_rate)} {_bounds(k.flip_ci)}".strip()


def _direction(k: ProbedKind) -> str:
    if k.direction_test is None:
        return "n/a"
    what = "McNemar" if k.direction_test == "mcnemar" else "sign test"
    return f"{k.toward} toward, {k.away} away ({what} p = {num(k.direction_p)})"


def _extra(k: ProbedKind) -> str:
    if k.kind == "repeat":
        return f"unanimous {num(k.unanimous_share)}, alpha {num(k.alpha)}"
    if k.kind == "injection":
        share = f"{num(k.planted_share)} {_bounds(k.planted_ci)}".strip()
        return f"planted label {k.planted} of {k.n}: {share}"
    return ""


def _badge(status: str) -> Badge:
    return Badge(status, "pass" if status in ("stable", "noise floor") else "fail")


def flip_figure(event: ProbeEvent) -> Figure | None:
    """Each judge's flip rate per kind with its Wilson 95% interval."""
    rows = [
        IntervalRow(
            label=f"{j.name} · {k.kind}",
            mean=k.flip_rate,
            low=k.flip_ci[0],
            high=k.flip_ci[1],
            color=series_color(event.kinds.index(k.kind)),
            tip=f"{j.name} {k.kind}: {k.flips} of {k.n} flipped",
        )
        for j in event.judges
        for k in j.kinds
        if k.flip_rate is not None and k.flip_ci is not None
    ]
    if not rows:
        return None
    legend = [(kind, series_color(i)) for i, kind in enumerate(event.kinds)]
    svg = interval_rows(rows, "flip rate, Wilson 95% CI", "Flip rates", legend, sign=False)
    return Figure(svg, "Share of compared cases whose label changed under each probe")


def probe_blocks(event: ProbeEvent) -> list[Block]:
    """The report's blocks (Markdown and HTML are written from them)."""
    t = event.thresholds
    out: list[Block] = [
        heading(1, TITLE),
        para(
            "Panel ",
            data(event.panel),
            ", subset ",
            data(event.subset),
            ", rubric ",
            data(event.rubric_id),
            f"; probes {', '.join(event.kinds)}"
            + (f" ({event.repeats} repeats)" if event.repeats else "")
            + f", seed {event.seed}. A kind needs {t.min_cases} compared cases for a verdict;"
            f" injection is tolerated while the planted-label share's lower bound is at most"
            f" {num(t.max_injection)}. Probe labels never enter an agreement figure.",
        ),
        heading(2, "Verdicts"),
        table(
            ["judge", "model", "verdict"],
            [(data(j.name), data(j.model), _badge(j.verdict)) for j in event.judges],
        ),
    ]
    figure = flip_figure(event)
    if figure is not None:
        out.append(Figures([figure]))
    out.append(heading(2, "Figures per judge and kind"))
    out.append(
        table(
            ["judge", "kind", "n", "flips", "flip rate [95% CI]", "direction", "more", "status"],
            [
                (
                    data(j.name),
                    k.kind,
                    k.n,
                    k.flips,
                    _rate(k),
                    _direction(k),
                    _extra(k),
                    (_badge(k.status), *((" ", data(k.reason)) if k.reason else ())),
                )
                for j in event.judges
                for k in j.kinds
            ],
        )
    )
    out.append(heading(2, "What each probe changes"))
    out.append(
        bullets(
            [
                "order: the rubric's labels listed in reverse order, and the evidence items "
                "in reverse order.",
                "verbosity: the memory text padded to three times its length with neutral "
                "sentences: " + " ".join(FILLER),
                "repeat: the same request again; the first repeat against the unperturbed "
                "judgment is the noise floor.",
                f"injection: “{INJECTION}” at the end of the memory text, for a label the "
                "unperturbed judgment did not give.",
            ]
        )
    )
    return out


def write_probe_report(event: ProbeEvent, out_dir: Path) -> str:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out_dir``;
    the sha256 of ``report.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = event.model_dump_json(indent=2, exclude={"created_at"}) + "\n"
    (out_dir / "report.json").write_text(text, encoding="utf-8")
    blocks = probe_blocks(event)
    (out_dir / "report.md").write_text(to_markdown(blocks), encoding="utf-8")
    (out_dir / "report.html").write_text(page(TITLE, to_html(blocks)), encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
