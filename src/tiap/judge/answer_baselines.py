"""The deterministic baselines on answer cases (the ``answer-correctness`` rubric):
is a run's generated answer (the ``<response>`` block) correct against the gold
answer (``<answer>``)? Fixed lexical rules, not language models.

Texts are compared as LoCoMo's evaluation compares them
(:mod:`tiap.traces.answer_scoring`: normalised, Porter-stemmed tokens). Each
baseline has its own rule and cut; a score at or above the cut is ``correct`` (the
rubric's first label), below it ``incorrect``:

- ``answer-containment``: the share of the gold answer's tokens found in the
  response (1 when the normalised gold answer occurs in it); cut 1 (all of them);
- ``evidence-overlap``: LoCoMo's token F1 of response and gold answer; cut 0.5;
- ``qa-overlap``: the share of the gold answer's tokens in the response; cut 0.5;
- ``key-facts``: the share of the gold answer's numbers, dates and names in the
  response (under the temporal-reasoning criteria a number off by one counts, as
  LongMemEval's check tolerates off-by-one counts of days); without any, the share
  of its tokens; cut 1;
- ``char-similarity``: the share of the normalised gold answer's character trigrams
  found in the response; cut 0.8.

The criteria variant is read from the prompt's ``<criteria>`` block, which tiap
fills from its own table (:mod:`tiap.rubric.answer_criteria`); no block: generic.
A preference question's gold answer is a rubric, not an answer: every baseline
declines it. An abstention question is correct when the response says it cannot
answer (one of :data:`CANNOT_ANSWER`, normalised): ``answer-containment``,
``qa-overlap`` and ``key-facts`` apply that cue rule, ``evidence-overlap`` and
``char-similarity`` decline (they only compare against a literal answer). A
baseline that lacks a block it reads, or meets criteria that are not tiap's,
declines too: an abstention, never a guessed label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tiap.judge.baselines import Decline, Verdict, blocks, judge_blocks, key_facts, stem
from tiap.rubric.answer_criteria import (
    ABSTENTION,
    GENERIC,
    PREFERENCE,
    TEMPORAL,
    AnswerVariant,
    variant_of_criteria,
)
from tiap.traces.answer_scoring import normalize_answer, stemmed_tokens, token_f1

#: what a response that recognises an unanswerable question says (normalised as
#: LoCoMo normalises answers: lower case, no punctuation, so "didn't" is "didnt")
CANNOT_ANSWER = (
    "not mentioned",
    "no information",
    "not enough information",
    "information is not available",
    "not available in",
    "information is incomplete",
    "did not mention",
    "didnt mention",
    "never mentioned",
    "not provided",
    "cannot answer",
    "cant answer",
    "cannot be answered",
    "unable to answer",
    "do not know",
    "dont know",
    "cannot determine",
    "cannot be determined",
)
_NUMBER = re.compile(r"^\d+$")


@dataclass(frozen=True)
class AnswerCase:
    """The blocks of an answer prompt a rule reads."""

    gold: str
    response: str
    variant: AnswerVariant


def _answer_case(b: Mapping[str, str]) -> AnswerCase:
    for name in ("answer", "response"):
        if not b.get(name, "").strip():
            raise Decline(f"the prompt has no <{name}> block")
    gold, response = b["answer"], b["response"]
    criteria = b.get("criteria")
    variant = GENERIC if criteria is None else variant_of_criteria(criteria)
    if variant is None:
        raise Decline("the <criteria> block is not one of tiap's answer criteria")
    return AnswerCase(gold, response, variant)


def _tokens(text: str, what: str) -> list[str]:
    tokens = stemmed_tokens(text)
    if not tokens:
        raise Decline(f"the {what} has no words after normalisation")
    return tokens


def gold_recall(case: AnswerCase) -> Verdict:
    """The share of the gold answer's (stemmed) tokens in the response; 1 when the
    normalised gold answer occurs in the normalised response."""
    gold = _tokens(case.gold, "gold answer")
    if f" {normalize_answer(case.gold)} " in f" {normalize_answer(case.response)} ":
        return Verdict(1.0, "the normalised gold answer occurs in the response")
    said = set(stemmed_tokens(case.response))
    hit = sum(1 for t in gold if t in said)
    return Verdict(hit / len(gold), f"{hit} of {len(gold)} gold-answer words in the response")


def f1(case: AnswerCase) -> Verdict:
    _tokens(case.gold, "gold answer")
    score = token_f1(case.response, case.gold)
    return Verdict(score, f"token F1 of response and gold answer {score:.2f}")


def _numbers_near(facts: set[str], said: set[str], slack: int) -> int:
    """How many of ``facts`` the response ``said``; a number within ``slack`` counts."""
    numbers = [int(w) for w in said if _NUMBER.match(w)]

    def near(fact: str) -> bool:
        return bool(_NUMBER.match(fact)) and any(abs(int(fact) - n) <= slack for n in numbers)

    return sum(1 for fact in facts if fact in said or (slack > 0 and near(fact)))


def facts(case: AnswerCase) -> Verdict:
    wanted = key_facts(case.gold)
    if not wanted:
        return gold_recall(case)
    said = {stem(w) for w in re.findall(r"[a-z0-9]+", case.response.lower())}
    slack = 1 if case.variant == TEMPORAL else 0
    hit = _numbers_near(wanted, said, slack)
    off = " (a number off by one counts)" if slack else ""
    return Verdict(
        hit / len(wanted),
        f"{hit} of {len(wanted)} gold-answer numbers/dates/names in the response{off}",
    )


def _trigrams(text: str) -> set[str]:
    norm = normalize_answer(text)
    return {norm[i : i + 3] for i in range(max(0, len(norm) - 2))}


def trigram_recall(case: AnswerCase) -> Verdict:
    gold = _trigrams(case.gold)
    if not gold:
        raise Decline("the gold answer is too short")
    share = len(gold & _trigrams(case.response)) / len(gold)
    return Verdict(share, f"share of gold-answer character trigrams in the response {share:.2f}")


def says_cannot_answer(case: AnswerCase) -> Verdict:
    said = f" {normalize_answer(case.response)} "
    cue = next((c for c in CANNOT_ANSWER if f" {c} " in said), None)
    if cue is None:
        return Verdict(0.0, "the response does not say the question cannot be answered")
    return Verdict(1.0, f"the response says the question cannot be answered ('{cue}')")


@dataclass(frozen=True)
class AnswerRule:
    """A baseline's rule on answer cases, its cut (correct at or above it), and
    whether it applies the cue rule to abstention questions (else it declines them)."""

    rule: Callable[[AnswerCase], Verdict]
    cut: float
    abstention: bool


ANSWER_RULES: dict[str, AnswerRule] = {
    "answer-containment": AnswerRule(gold_recall, 0.999, True),
    "evidence-overlap": AnswerRule(f1, 0.5, False),
    "qa-overlap": AnswerRule(gold_recall, 0.5, True),
    "key-facts": AnswerRule(facts, 0.999, True),
    "char-similarity": AnswerRule(trigram_recall, 0.8, False),
}


def _verdict(rule: AnswerRule, case: AnswerCase) -> tuple[Verdict, float]:
    if case.variant == PREFERENCE:
        raise Decline("a preference question's gold answer is a rubric, not an answer")
    if case.variant == ABSTENTION:
        if not rule.abstention:
            raise Decline("an abstention question has no literal answer to compare with")
        return says_cannot_answer(case), 0.5
    return rule.rule(case), rule.cut


def is_answer_prompt(b: Mapping[str, str]) -> bool:
    """An answer prompt: a ``<response>`` block and no ``<memory>`` or ``<document>``
    block (text inside a memory that looks like a response block leaves a contested
    prompt contested: its rubric does not fence ``response``)."""
    return "response" in b and not {"memory", "document"} & set(b)


def judge(name: str, prompt_text: str, labels: list[str]) -> tuple[str | None, str]:
    """(label, rationale) of baseline ``name`` on a rendered prompt; label ``None`` =
    declined. An answer prompt (:func:`is_answer_prompt`) is judged by the rules above,
    any other by :func:`tiap.judge.baselines.judge`, as before answer cases existed."""
    b = blocks(prompt_text)
    if not is_answer_prompt(b):
        return judge_blocks(name, b, labels)
    try:
        case = _answer_case(b)
        verdict, cut = _verdict(ANSWER_RULES[name], case)
    except Decline as exc:
        return None, str(exc)
    label = labels[0] if verdict.score >= cut else labels[-1]
    why = f"baseline {name} (not an LLM), {case.variant} criteria: {verdict.why}"
    return label, f"{why}; score {verdict.score:.2f}, correct at {cut:g} or more"
