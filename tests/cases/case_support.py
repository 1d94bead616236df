"""Small builders for case-store tests."""

from __future__ import annotations

from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket


def make_case(case_id: str, *, run: str = "r", query_index: int = 0, rank: int = 1) -> Case:
    return Case(
        case_id=case_id,
        dataset="d",
        run=run,
        store="s",
        query_id=f"q{query_index}",
        query_index=query_index,
        question="Where?",
        answer="Here",
        category="single-hop",
        evidence=[EvidenceItem(source_id="s1", text="It is here.", speaker="A", time="t")],
        memory_id=f"m-{case_id}",
        memory_text="A fact.",
        memory_source_ids=["s1"],
        rank=rank,
        rank_bucket=rank_bucket(rank),
        k=60,
    )


def make_label(case_id: str, rater: str, label: str | None, **extra: object) -> LabelRecord:
    kind = extra.pop("rater_kind", "human")
    return LabelRecord(case_id=case_id, rater=rater, rater_kind=kind, label=label, **extra)
