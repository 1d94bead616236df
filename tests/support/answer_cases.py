"""Hand-made answer cases (kind ``answer``) for tests that need a few of them."""

from __future__ import annotations

from tiap.cases.from_answers import answer_case_id
from tiap.cases.models import Case

#: (question, gold answer, a correct response, an incorrect response)
ANSWERS = (
    (
        "What degree did I graduate with?",
        "Business Administration",
        "You graduated with a degree in Business Administration.",
        "You studied computer science.",
    ),
    (
        "How many days did I spend in Japan?",
        "18 days",
        "You spent 19 days in Japan.",
        "You spent a week in Japan.",
    ),
)


def answer_case(
    i: int,
    *,
    question_type: str | None = "single-session-user",
    query_id: str | None = None,
    hypothesis: str | None = None,
    correct: bool = True,
    run: str = "run-a",
    abstention: bool = False,
) -> Case:
    """Answer case ``i``: its question unique (the loopback server keys on it)."""
    question, gold, right, wrong = ANSWERS[i % len(ANSWERS)]
    qid = query_id or f"q{i:03d}"
    return Case(
        case_id=answer_case_id("toy", run, qid),
        kind="answer",
        dataset="toy",
        run=run,
        store="store-a",
        query_id=qid,
        query_index=i,
        question=f"{question} (question {i})",
        answer=gold,
        category=question_type,
        evidence=[],
        memory_id="",
        memory_text="",
        memory_source_ids=[],
        rank_bucket=question_type or "unknown",
        metadata={"abstention": abstention},
        hypothesis=hypothesis if hypothesis is not None else (right if correct else wrong),
    )
