"""The ``diagnostics`` section of ``report.md`` / ``report.html``: each judge's latest
probe and drift results, and a warning for a gated judge that drifted since the
gate (:mod:`tiap.agreement.diagnostics`). Every name and reason is data."""

from __future__ import annotations

from tiap.agreement.diagnostics_models import Diagnostics, JudgeDrift, ProbeKindResult
from tiap.report.blocks import (
    Badge,
    Block,
    Cell,
    Data,
    Fragment,
    bullets,
    data,
    heading,
    para,
    table,
)
from tiap.report.numbers import bounds, num

__all__ = ["blocks"]

TITLE = "Diagnostics: probes and drift"


def _ci(ci: list[float] | None) -> str:
    return "" if ci is None else " " + bounds(ci[0], ci[1])


def _rate(k: ProbeKindResult) -> str:
    text = f"{num(k.flip_rate)}{_ci(k.flip_ci)}"
    if k.kind == "injection" and k.planted_share is not None:
        text += f"; planted label {num(k.planted_share)}{_ci(k.planted_ci)}"
    return text


_PASS = ("stable", "noise floor", "steady")
_WORDS = (*_PASS, "sensitive", "inconclusive", "drifted")


def _status(status: str) -> tuple[Fragment, ...]:
    """A status or verdict as recorded: the known words as badges, the rest as data."""
    if status in _WORDS:
        return (Badge(status, "pass" if status in _PASS else "fail"),)
    head, _, rest = status.partition(" to ")
    if head == "sensitive" and rest:
        return (Badge(head, "fail"), " to ", data(rest))
    return (data(status),)


def _probe_rows(d: Diagnostics) -> list[tuple[Cell, ...]]:
    return [
        (
            data(p.judge),
            data(p.model),
            p.run,
            data(k.kind),
            k.n,
            data(_rate(k)),
            (*_status(k.status), *((" ", data(k.reason)) if k.reason else ())),
            _status(p.verdict),
        )
        for p in d.probes
        for k in p.kinds
    ]


def _after(j: JudgeDrift) -> str:
    return "n/a" if j.after_gate is None else ("yes" if j.after_gate else "no")


def _drift_rows(d: Diagnostics) -> list[tuple[Cell, ...]]:
    return [
        (
            data(j.judge),
            data(j.model),
            data(j.anchor),
            j.run,
            j.n,
            j.changed,
            num(j.mcnemar_p),
            "alarm" if j.alarm else "none",
            _status("drifted" if j.drifted else "steady"),
            _after(j),
        )
        for j in d.drift
    ]


def blocks(d: Diagnostics) -> list[Block]:
    """The section's blocks."""
    out: list[Block] = [heading(2, TITLE)]
    if not d.available:
        return [*out, para("None: ", Data(d.reason or "not computed"))]
    gate = (
        para("No passed gate is recorded under this rubric.")
        if d.gate is None
        else para(
            f"The gate: event {d.gate}, anchor set ",
            data(d.gate_anchor or "none frozen with it"),
            ". Probe and drift judgments never enter another figure of this report.",
        )
    )
    out.append(gate)
    if d.warnings:
        out.append(bullets([("WARNING: ", Data(w.message)) for w in d.warnings]))
    out.append(heading(3, "Probes (latest run per judge)"))
    if d.probes:
        header = ["judge", "model", "run", "kind", "n", "flip rate [95% CI]", "status", "verdict"]
        out.append(table(header, _probe_rows(d)))
    else:
        out.append(para("None run: ", Data(d.probes_reason or "")))
    out.append(heading(3, "Drift (latest run per judge)"))
    if d.drift:
        header = [
            "judge",
            "model",
            "anchor set",
            "run",
            "n",
            "changed",
            "McNemar p",
            "EWMA",
            "",
            "after the gate",
        ]
        out.append(table(header, _drift_rows(d)))
    else:
        out.append(para("None run: ", Data(d.drift_reason or "")))
    return out
