"""What makes a generated answer correct, by question type: the ``criteria`` an
answer case shows its judge (the ``answer-correctness`` rubric's ``{{criteria}}``).

The variants follow LongMemEval's official answer check (Wu et al., ICLR 2025:
``get_anscheck_prompt`` in ``src/evaluation/evaluate_qa.py`` of
github.com/xiaowu0162/LongMemEval, commit b11ff72): one generic check, and
variants for temporal reasoning (an off-by-one count of days, weeks or months is
still correct), knowledge updates (a response that also repeats the outdated
information is correct when it gives the updated answer), single-session
preferences (the gold answer is a rubric of the desired personalised response)
and abstention questions (the model should say it cannot answer).

The variant is chosen by tiap, never from data text: from the case's question type
(LongMemEval's ``question_type``, a bundle query's ``category``) by the fixed table
:data:`VARIANT_FOR_TYPE`, and from whether the question is an abstention question
(its query is marked ``abstention``, or its id ends in ``_abs`` as LongMemEval's
question ids of unanswerable questions do). Every other type, or none, is
``generic``.
"""

from __future__ import annotations

from typing import Final, Literal

AnswerVariant = Literal[
    "generic", "temporal-reasoning", "knowledge-update", "preference", "abstention"
]

GENERIC: Final = "generic"
TEMPORAL: Final = "temporal-reasoning"
KNOWLEDGE_UPDATE: Final = "knowledge-update"
PREFERENCE: Final = "preference"
ABSTENTION: Final = "abstention"

#: question type (LongMemEval's ``question_type``) -> variant; any other type: generic
VARIANT_FOR_TYPE: Final[dict[str, AnswerVariant]] = {
    "single-session-user": GENERIC,
    "single-session-assistant": GENERIC,
    "multi-session": GENERIC,
    "temporal-reasoning": TEMPORAL,
    "knowledge-update": KNOWLEDGE_UPDATE,
    "single-session-preference": PREFERENCE,
}

#: LongMemEval's mark of an abstention (unanswerable) question: its id ends so
ABSTENTION_SUFFIX: Final = "_abs"

_GENERIC = (
    "Label the response correct if it contains the correct answer. If the response is "
    "equivalent to the correct answer, or contains all the intermediate steps to get the "
    "correct answer, it is also correct. If it contains only a subset of the information "
    "the correct answer requires, it is incorrect."
)

#: variant -> the criteria the judge is given (after LongMemEval's prompts, see the
#: module doc); the gold answer is "the correct answer" except where said
CRITERIA: Final[dict[AnswerVariant, str]] = {
    GENERIC: _GENERIC,
    TEMPORAL: _GENERIC
    + " Do not penalise off-by-one errors in a number of days, weeks, months or the like: "
    "if the question asks for such a number and the response is off by one (e.g. 19 days "
    "when the correct answer is 18), the response is still correct.",
    KNOWLEDGE_UPDATE: "Label the response correct if it contains the correct answer. If "
    "the response gives some earlier information along with an updated answer, it is "
    "correct as long as the updated answer is the correct answer.",
    PREFERENCE: "The gold answer is a rubric for the desired personalised response, not a "
    "literal answer. Label the response correct if it satisfies the desired response: it "
    "need not reflect every point of the rubric; it is correct as long as it recalls and "
    "uses the user's personal information correctly.",
    ABSTENTION: "The question cannot be answered from the conversation; the gold answer "
    "explains why. Label the response correct if the model identifies the question as "
    "unanswerable: it may say that the information is incomplete, or that some other "
    "information was given but not the information asked for. A response that answers "
    "the question instead is incorrect.",
}


def answer_variant(
    question_type: str | None, query_id: str, *, abstention: bool = False
) -> AnswerVariant:
    """The criteria variant of a question: ``abstention`` for an abstention question
    (``abstention``, or an id ending in ``_abs``), else by :data:`VARIANT_FOR_TYPE`
    (``generic`` for any other type)."""
    if abstention or query_id.endswith(ABSTENTION_SUFFIX):
        return ABSTENTION
    return VARIANT_FOR_TYPE.get(question_type or "", GENERIC)


def criteria_for(variant: AnswerVariant) -> str:
    """The criteria text of ``variant``."""
    return CRITERIA[variant]


def variant_of_criteria(text: str) -> AnswerVariant | None:
    """The variant whose criteria is exactly ``text`` (``None``: none is)."""
    stripped = text.strip()
    return next((v for v, t in CRITERIA.items() if t == stripped), None)
