"""How `tiap cases` shows what it did and what a workspace holds: reports of extract,
from-qrels and sample, case tables and one case with its labels (every text inert)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tiap.cli.output import echo, echo_json
from tiap.text import inert

if TYPE_CHECKING:
    from tiap.cases.extract import ExtractReport
    from tiap.cases.from_qrels import QrelsImportReport
    from tiap.cases.models import Case, LabelRecord
    from tiap.cases.sample import SampleResult
    from tiap.cases.versions import VersionChange


def json_out(obj: object) -> None:
    echo_json(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False))


def short(text: str, width: int) -> str:
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    """Plain aligned columns (never truncated, so ids can be copied); cells are made
    inert before they are measured."""
    header, rows = [inert(h) for h in header], [[inert(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def print_extract_report(report: ExtractReport, db: Path) -> None:
    buckets = list(report.buckets)
    header = ["run", "store", "queries", "empty target", "raw credited", "contested"]
    header += [f"rank {b}" for b in buckets]
    rows = [
        [
            run,
            rc.store,
            str(rc.queries),
            str(rc.empty_target),
            str(rc.raw_credited),
            str(rc.contested),
            *(str(rc.buckets.get(b, 0)) for b in buckets),
        ]
        for run, rc in report.runs.items()
    ]
    rows.append(
        ["all", "", "", "", "", str(report.contested), *(str(report.buckets[b]) for b in buckets)]
    )
    from tiap.cases.extract import EMPTY_TEXT, RULE_TEXT

    echo(f"contested credits at k={report.k} in {report.dataset}")
    if report.rule is not None:
        echo(f"rule {report.rule}: {RULE_TEXT[report.rule]}")
    echo(table(header, rows, right=set(range(2, len(header)))))
    missing = sum(rc.no_ranking for rc in report.runs.values())
    if missing:
        echo(f"{missing} (run, query) pairs had no ranking (counted as empty rankings)")
    if report.rule is not None:
        echo(f"empty target: {EMPTY_TEXT[report.rule]}, so it cannot be contested")
    echo(f"{report.added} new cases in {db} ({report.already_present} already there)")
    if report.version is not None:
        print_version(report.version)


def print_version(change: VersionChange) -> None:
    from tiap.cases.fingerprint import short

    fp = short(change.fingerprint)
    if change.status == "moved":
        echo(
            f"bundle version {short(change.previous)} -> {fp}: {change.retired} stale cases "
            f"retired with {change.retired_labels} labels (kept, out of every figure; "
            f"{change.replaced} stored again with their new content), {change.carried} "
            "unchanged"
        )
    elif change.status == "adopted":
        echo(f"bundle version {fp} (the cases an earlier tiap extracted are its own)")
    else:
        echo(f"bundle version {fp}")
    if change.stale_subsets:
        names = ", ".join(f"'{n}'" for n in change.stale_subsets)
        echo(f"stale subsets (draw them again with tiap cases sample --replace): {names}")


def print_sample_result(result: SampleResult) -> None:
    for note in result.notes:
        echo(f"note: {note}")
    alloc = ", ".join(f"{b}: {n}" for b, n in result.allocation.items())
    over = ", ".join(f"{b}: {n}" for b, n in result.overlap_allocation.items())
    echo(
        f"subset '{result.name}': {len(result.case_ids)} of {result.pool_size} cases ({alloc}); "
        f"overlap {len(result.overlap_ids)} ({over})"
    )


def print_case_table(cases: list[Case], overlap: set[str]) -> None:
    if any(c.kind != "contested" for c in cases):
        print_kinds_table(cases, overlap)
        return
    header = ["case_id", "run", "query_id", "rank", "bucket"]
    if overlap:
        header.append("overlap")
    header.append("memory")
    rows = []
    for c in cases:
        row = [c.case_id, c.run, c.query_id, str(c.rank), c.rank_bucket]
        if overlap:
            row.append("yes" if c.case_id in overlap else "")
        rows.append([*row, short(c.memory_text, 60)])
    if rows:
        echo(table(header, rows, right={3}))
    echo(f"{len(cases)} cases")


def print_kinds_table(cases: list[Case], overlap: set[str]) -> None:
    """Cases of several kinds: a qrels pair's run is ``qrels`` (annotated) or the run it
    was drawn from; its bucket is its grade stratum; an answer's bucket is its question
    type, its text the run's answer."""
    header = ["case_id", "kind", "dataset", "run", "query_id", "rank", "bucket"]
    if overlap:
        header.append("overlap")
    header.append("memory / document / answer")
    rows = []
    for c in cases:
        rank = "" if c.rank is None else str(c.rank)
        row = [c.case_id, c.kind, c.dataset, c.run, c.query_id, rank, c.rank_bucket]
        if overlap:
            row.append("yes" if c.case_id in overlap else "")
        rows.append([*row, short((c.hypothesis or "") if c.is_answer else c.memory_text, 50)])
    echo(table(header, rows, right={5}))
    counts = ", ".join(f"{n} {k}" for k, n in sorted(count_kinds(cases).items()))
    echo(f"{len(cases)} cases ({counts})")


def count_kinds(cases: list[Case]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in cases:
        out[c.kind] = out.get(c.kind, 0) + 1
    return out


def labels_lines(labels: list[LabelRecord]) -> list[str]:
    if not labels:
        return ["labels: none yet"]
    lines = ["labels (latest per rater):"]
    for lab in labels:
        value = lab.label if lab.label is not None else f"(none: {lab.reason})"
        lines.append(f"  {lab.rater} [{lab.rater_kind}]: {value}")
    return lines


def print_case(case: Case, labels: list[LabelRecord]) -> None:
    if case.is_qrels:
        print_qrels_case(case, labels)
        return
    if case.is_answer:
        print_answer_case(case, labels)
        return
    lines = [
        f"case {case.case_id}  run {case.run} (store {case.store})  dataset {case.dataset}",
        f"query {case.query_id}  category {case.category or 'unknown'}",
        f"question: {case.question}",
        f"gold answer: {case.answer}",
        "evidence:",
        *(f"  {e.render()}" for e in case.evidence),
        f"credited memory {case.memory_id} at rank {case.rank} (bucket {case.rank_bucket}, "
        f"k={case.k}):",
        f"  {case.memory_text}",
    ]
    echo("\n".join(lines + labels_lines(labels)))


def print_qrels_case(case: Case, labels: list[LabelRecord]) -> None:
    if case.pair == "negative":
        origin = f"a top-ranked document of run {case.run} (rank {case.rank}) without a "
        origin += "positive qrels grade"
    else:
        origin = "an annotated pair of the qrels file"
        if case.rank is not None:
            origin += f" (rank {case.rank} in run {case.metadata.get('ranked_by', '?')})"
    lines = [
        f"case {case.case_id}  kind qrels  dataset {case.dataset}  "
        f"memory type {case.memory_type or 'unknown'}",
        f"query {case.query_id}" + (f"  category {case.category}" if case.category else ""),
        f"query: {case.question}",
        *([f"gold answer: {case.answer}"] if case.answer else []),
        f"document {case.memory_id}" + (f" ({case.title})" if case.title else "") + ":",
        f"  {case.memory_text}",
        f"qrels: {case.grade_text}; {origin} (stratum {case.rank_bucket})",
    ]
    echo("\n".join(lines + labels_lines(labels)))


def print_answer_case(case: Case, labels: list[LabelRecord]) -> None:
    lines = [
        f"case {case.case_id}  kind answer  run {case.run}  dataset {case.dataset}",
        f"query {case.query_id}  question type {case.category or 'unknown'}"
        + ("  (abstention question)" if case.criteria_variant == "abstention" else ""),
        f"question: {case.question}",
        f"gold answer: {case.answer}",
        f"run's answer: {case.hypothesis}",
        f"criteria ({case.criteria_variant}): {case.prompt_fields()['criteria']}",
    ]
    echo("\n".join(lines + labels_lines(labels)))


def print_qrels_report(report: QrelsImportReport, db: Path) -> None:
    header = ["dataset", "type", "queries", "qrels", "strata", "sampled", "negatives"]
    rows = []
    for name, c in report.datasets.items():
        strata = ", ".join(f"{s}: {c.allocation[s]}/{n}" for s, n in c.strata.items())
        negs = f"{c.negatives}/{c.negatives_pool}" if c.run else ""
        rows.append(
            [
                name,
                c.memory_type or "",
                str(c.queries),
                str(c.qrels_lines),
                strata,
                f"{c.sampled} ({c.queries_sampled} queries)",
                negs,
            ]
        )
    echo(
        f"qrels pairs from {report.source} ({report.source_kind}), per dataset "
        f"(--group-by {report.group_by})"
    )
    echo(table(header, rows, right={2, 3}))
    for name, c in report.datasets.items():
        if len(c.tasks) > 1:
            echo(f"dataset {name}: tasks {', '.join(c.tasks)}")
    for note in report.notes:
        echo(f"note: {note}")
    if report.run:
        echo(
            f"negatives: top-ranked documents of run {report.run} without a positive grade "
            "(drawn/pool)"
        )
    echo(
        f"subset '{report.subset}' ({report.subset_status}): {report.cases} pairs; "
        f"{report.added} new cases in {db} ({report.already_present} already there)"
    )
    if report.version is not None:
        print_version(report.version)
