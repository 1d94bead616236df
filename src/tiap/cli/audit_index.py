"""``index.md`` and ``index.html`` of an audit: the headline figures of every
step and links to each report. Both are rendered from one list of blocks, so
they always say the same thing; every text is HTML-escaped in the HTML."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.cli.pipeline import FINAL_DIR, RESCORE_DIR, VALIDATION_DIR, StepRecord

PAIR = "canonical-raw"


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]


@dataclass(frozen=True)
class Links:
    items: Sequence[tuple[str, str]]


Block = Heading | Para | Table | Links


def _num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _rescore_blocks(rep: dict[str, Any]) -> list[Block]:
    head = rep["headline"]
    measure = head["measure"]
    blocks: list[Block] = [Heading("1. Target sensitivity (rescore)")]
    inst = head["instability"].get(PAIR)
    if inst:
        blocks.append(
            Para(
                f"Raw vs Canonical: {measure} changes for {_pct(inst['share_changed'])} of "
                f"{inst['n']} shared (query, run) pairs; by at least 0.1 for "
                f"{_pct(inst['share_large'])}."
            )
        )
    rows = []
    for run, pairs in sorted(head["differences"].items()):
        for pair, iv in sorted(pairs.items()):
            if not iv["n"]:
                continue
            rows.append(
                [run, pair, str(iv["n"]), _num(iv["mean"]), _ci([iv["ci_low"], iv["ci_high"]])]
            )
    if rows:
        blocks.append(Table(["run", "targets", "n shared", f"mean Δ {measure}", "95% CI"], rows))
    flips = head["winner_flips"]
    blocks.append(
        Para(
            f"Winner flips on {measure}: {len(flips)} run pair(s) "
            f"({head['n_winner_flips_all_measures']} over all measures)."
        )
    )
    for d in head["design"]:
        winners = "; ".join(f"{t}: {', '.join(map(str, w))}" for t, w in d["winner"].items())
        flip = " (the winner flips across targets)" if d["winner_flip"] else ""
        blocks.append(Para(f"Best {d['key']} on {measure}: {winners}{flip}."))
    return blocks


def _cases_blocks(cases: dict[str, Any]) -> list[Block]:
    rows = [
        [run, str(rc["contested"]), ", ".join(f"{b}: {n}" for b, n in rc["buckets"].items())]
        for run, rc in sorted(cases["runs"].items())
    ]
    return [
        Heading("2. Contested credits"),
        Para(
            f"{cases['contested']} cases where Raw misses in the top {cases['k']} while Source "
            "and Canonical give credit."
        ),
        Table(["run", "cases", "rank buckets"], rows),
    ]


def _agreement_para(rep: dict[str, Any]) -> str:
    fk = rep["fleiss_kappa"].get("binary") or rep["fleiss_kappa"]["labels"]
    scale = "binary" if "binary" in rep["fleiss_kappa"] else "labels"
    return (
        f"{rep['n_cases']} cases, {rep['n_complete']} labelled validly by every judge; "
        f"Fleiss' kappa ({scale}) {_num(fk['value'])} {_ci(fk.get('ci'))}".rstrip()
        + "."
    )


def _majority_table(dist: dict[str, Any]) -> Table:
    rows = [
        [label, str(dist["counts"][label]), _pct(share)] for label, share in dist["shares"].items()
    ]
    rows.append(
        [
            "ties / no majority / no quorum",
            f"{dist['ties']} / {dist['no_majority']} / {dist['no_quorum']}",
            "",
        ]
    )
    return Table(["majority label", "cases", "share of decided"], rows)


def _validation_blocks(rep: dict[str, Any], facts: dict[str, Any]) -> list[Block]:
    gate = rep["gate"]
    blocks: list[Block] = [
        Heading("3. Validation subset: agreement and scale gate"),
        Para(_agreement_para(rep)),
        Para(
            f"Scale gate: {gate['status']}"
            + ("" if gate["passed"] else " — " + "; ".join(gate["failures"]))
            + "."
        ),
    ]
    vs = rep["vs_reference"]
    if vs.get("available"):
        rows = []
        for r in [*vs["raters"], *([vs["majority"]] if vs.get("majority") else [])]:
            cmp = r.get("binary") or r["labels"]
            rows.append(
                [
                    r["rater"],
                    str(cmp["n"]),
                    f"{_num(cmp['kappa']['value'])} {_ci(cmp['kappa'].get('ci'))}".rstrip(),
                    _pct(cmp["accuracy"]["value"]),
                ]
            )
        blocks.append(Table(["rater", "n", "kappa vs humans (binary)", "accuracy"], rows))
    elif facts.get("humans") == "skip":
        blocks.append(
            Para("No human labels were required (--no-humans): the gate used judge agreement only.")
        )
    if facts.get("forced"):
        blocks.append(
            Para(
                "The gate did not pass; every case was judged anyway because of --force "
                "(recorded in the workspace as a gate_force event)."
            )
        )
    return blocks


def _final_blocks(rep: dict[str, Any], facts: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [
        Heading("4. Every contested credit: majority vote"),
        Para(_agreement_para(rep)),
        _majority_table(rep["majority"]["labels"]),
        Para(
            "Share of relaxed credit that is fully supported (majority "
            f"'{rep['labels'][0]}' among decided cases): {_pct(facts.get('supported_share'))}."
        ),
    ]
    rows = []
    for ds, group in sorted(rep["prevalence"]["by_dataset"].items()):
        d = group["labels"]
        rows.append([ds, str(d["n"]), *(_pct(d["shares"].get(lab)) for lab in rep["labels"])])
    blocks.append(Table(["dataset", "cases", *rep["labels"]], rows))
    return blocks


def _blocks(
    facts: dict[str, Any],
    steps: Sequence[StepRecord],
    status: str,
    message: str,
    next_command: str | None,
    out: Path,
) -> list[Block]:
    judges = ", ".join(facts.get("judges", []))
    blocks: list[Block] = [
        Para(
            f"Bundle {facts.get('bundle')} (dataset {facts.get('dataset')}); panel "
            f"{facts.get('panel')} ({judges}); rubric {facts.get('rubric')} "
            f"({str(facts.get('rubric_hash', ''))[:12]}); workspace {facts.get('workspace')}."
        ),
        Para(f"Status: {status} — {message}."),
    ]
    if next_command:
        blocks.append(Para(f"Next: {next_command}"))
    blocks.append(
        Table(["step", "status", "detail"], [[s.name, s.status, s.detail] for s in steps])
    )
    links = [
        ("rescore report", f"{RESCORE_DIR}/report.md"),
        ("per-query scores", f"{RESCORE_DIR}/per_query.csv"),
    ]
    for name, sub in (("validation agreement", VALIDATION_DIR), ("final report", FINAL_DIR)):
        if (out / sub / "report.html").exists():
            links.append((name, f"{sub}/report.html"))
            links.append((f"{name} (markdown)", f"{sub}/report.md"))
    blocks.append(Links(links))
    if "rescore" in facts:
        blocks += _rescore_blocks(facts["rescore"])
    if "cases" in facts:
        blocks += _cases_blocks(facts["cases"])
    if "validation" in facts:
        blocks += _validation_blocks(facts["validation"], facts)
    if "final" in facts:
        blocks += _final_blocks(facts["final"], facts)
    return blocks


def _md(blocks: Sequence[Block]) -> str:
    out = ["# tiap audit", ""]
    for b in blocks:
        if isinstance(b, Heading):
            out += [f"## {b.text}", ""]
        elif isinstance(b, Para):
            out += [b.text, ""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(b.header) + " |")
            out.append("|" + "|".join("---" for _ in b.header) + "|")
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in b.rows]
            out.append("")
        else:
            out += [f"- [{name}]({href})" for name, href in b.items] + [""]
    return "\n".join(out)


def _html(blocks: Sequence[Block]) -> str:
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>tiap audit</title>',
        "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;"
        "padding:0 1rem;color:#222}table{border-collapse:collapse;margin:.5rem 0 1rem}"
        "td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}"
        "th{background:#f3f3f3}</style></head><body>",
        "<h1>tiap audit</h1>",
    ]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h2>{e(b.text)}</h2>")
        elif isinstance(b, Para):
            out.append(f"<p>{e(b.text)}</p>")
        elif isinstance(b, Table):
            out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in b.header) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in b.rows]
            out.append("</table>")
        else:
            out.append(
                "<ul>"
                + "".join(f'<li><a href="{e(href)}">{e(name)}</a></li>' for name, href in b.items)
                + "</ul>"
            )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_index(
    out: Path,
    facts: dict[str, Any],
    steps: Sequence[StepRecord],
    status: str,
    message: str,
    next_command: str | None,
) -> tuple[Path, Path]:
    """Write ``index.md`` and ``index.html`` in ``out``; returns their paths."""
    blocks = _blocks(facts, steps, status, message, next_command, out)
    md, page = out / "index.md", out / "index.html"
    md.write_text(_md(blocks), encoding="utf-8", newline="\n")
    page.write_text(_html(blocks), encoding="utf-8", newline="\n")
    return md, page
