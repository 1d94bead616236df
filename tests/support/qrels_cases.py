"""Hand-made qrels cases (kind ``qrels``) for tests that need a few of them."""

from __future__ import annotations

from tiap.cases.from_qrels import qrels_case_id
from tiap.cases.models import Case

PAIRS = (
    (
        "When did Caroline go to the LGBTQ support group?",
        "Caroline · 1:56 pm on 8 May, 2023",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
    ),
    (
        "What did Melanie paint recently?",
        "Melanie · 1:14 pm on 25 May, 2023",
        "Thanks! My kids and I went camping at the beach last weekend.",
    ),
)


def qrels_case(
    i: int,
    *,
    dataset: str = "Dialogue/LoCoMo/single_hop",
    grade: int | None = 1,
    negative: bool = False,
) -> Case:
    query, title, text = PAIRS[i % len(PAIRS)]
    doc = f"conv-26:D{i}:1"
    return Case(
        case_id=qrels_case_id(dataset, f"conv_26_q{i}", doc),
        kind="qrels",
        dataset=dataset,
        run="bm25" if negative else "qrels",
        store="",
        query_id=f"conv_26_q{i}",
        query_index=i,
        question=query,
        answer="",
        evidence=[],
        memory_id=doc,
        memory_text=text,
        memory_source_ids=[],
        rank=2 if negative else None,
        rank_bucket="negative" if negative else f"grade {grade}",
        title=title,
        grade=grade,
        pair="negative" if negative else "annotated",
        memory_type="Dialogue",
        conversation_id="conv_26",
    )
