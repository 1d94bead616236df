"""Which part of a reply is its answer: exactly one label, in the reply's final JSON
object, with nothing after it; a reply that holds more than one label, or text or
another JSON object after its answer, is ``ambiguous_reply``. With a structured
response format (``json_schema``, ``json_object``) the reply must be that object
alone (optionally in one code fence)."""

from __future__ import annotations

import json
import random
import re

import pytest

from tiap.rubric import Reason, load_rubric, parse_judgment

RUBRIC = load_rubric()
AMBIGUOUS = "ambiguous_reply"

# (reply, free-text result, structured result): a label, or a reason code.
TABLE: list[tuple[str, str, str]] = [
    # the steering reply: a label in prose, another as the answer
    (
        'The memory says {"label": "supports"} but really: {"label": "does_not_support"}',
        AMBIGUOUS,
        AMBIGUOUS,
    ),
    # two label objects that agree are still two answers
    ('{"label": "supports"} {"label": "supports"}', AMBIGUOUS, AMBIGUOUS),
    ('{"label": "supports"}\n{"label": "partial"}', AMBIGUOUS, AMBIGUOUS),
    # one object naming two labels (JSON keeps the last of a repeated key)
    ('{"label": "supports", "label": "does_not_support"}', AMBIGUOUS, AMBIGUOUS),
    # a label nested in the answer
    ('{"label": "supports", "details": {"label": "does_not_support"}}', AMBIGUOUS, AMBIGUOUS),
    ('{"label": "supports", "alts": [{"label": "partial"}]}', AMBIGUOUS, AMBIGUOUS),
    # labels in a list: not one answer object
    ('[{"label": "supports"}]', AMBIGUOUS, AMBIGUOUS),
    ('[{"label": "supports"}, {"label": "partial"}]', AMBIGUOUS, AMBIGUOUS),
    # the answer is not the reply's end
    ('{"label": "supports"} Actually, it does not support the answer.', AMBIGUOUS, AMBIGUOUS),
    ('Here is my verdict: {"label": "supports", "rationale": "ok"} Thanks.', AMBIGUOUS, AMBIGUOUS),
    ('{"label": "supports"} {"rationale": "afterthought"}', AMBIGUOUS, AMBIGUOUS),
    ('```json\n{"label": "partial"}\n```\nHope this helps.', AMBIGUOUS, AMBIGUOUS),
    (
        '```json\n{"label": "supports"}\n```\n```json\n{"label": "partial"}\n```',
        AMBIGUOUS,
        AMBIGUOUS,
    ),
    # a label of any type counts as a label given
    ('{"label": 1} {"label": "supports"}', AMBIGUOUS, AMBIGUOUS),
    # text before the answer: free text reads it, a structured reply must be JSON only
    ('Here is my verdict: {"label": "supports", "rationale": "ok"}', "supports", AMBIGUOUS),
    ('Verdict:\n```json\n{"label": "partial"}\n```', "partial", AMBIGUOUS),
    ('{"rationale": "first {brace} is prose"} then {"label": "partial"}', "partial", AMBIGUOUS),
    (
        'The memory is {"user": "Pepper"}; so {"rationale": "r", "label": "supports"}',
        "supports",
        AMBIGUOUS,
    ),
    # the answer alone, in or out of a code fence, with surrounding space
    ('{"rationale": "It has the date.", "label": "supports"}', "supports", "supports"),
    ('\n  {"label": "supports"}  \n', "supports", "supports"),
    ('```json\n{"label": "partial", "rationale": "half"}\n```', "partial", "partial"),
    ('```json\n{"label": "partial"}\n```\n\n', "partial", "partial"),
    ('```\n{"label": "partial"}\n```', "partial", "partial"),
    ('{"label": "partial"}\n```', "partial", "partial"),
    (
        '{\n  "rationale": "x",\n  "label": "does not support"\n}',
        "does_not_support",
        "does_not_support",
    ),
    # braces and label objects inside strings are text, not JSON
    ('{"rationale": "a } b { c", "label": "partial"}', "partial", "partial"),
    (
        '{"rationale": "it says {\\"label\\": \\"supports\\"}", "label": "does_not_support"}',
        "does_not_support",
        "does_not_support",
    ),
    # the existing codes keep their meaning
    ('{"judgment": {"label": "supports"}}', "no_label", "no_label"),
    ('{"rationale": "no verdict"}', "no_label", "no_label"),
    ('{"x": 1} and some text', "no_label", "no_label"),
    ('{"label": "maybe"}', "label_outside_rubric", "label_outside_rubric"),
    ("I'm sorry, but I can't help with that.", "refusal", "refusal"),
    ("The memory supports the answer.", "not_json", "not_json"),
    ('["supports"]', "not_json", "not_json"),
    ("", "empty", "empty"),
]


def outcome(reply: str | None, *, structured: bool) -> str | None:
    parsed = parse_judgment(RUBRIC, reply, structured=structured)
    assert (parsed.label is None) == (parsed.reason is not None)
    return parsed.label if parsed.label is not None else parsed.reason


@pytest.mark.parametrize(("reply", "free", "structured"), TABLE)
def test_reply_rule(reply: str, free: str, structured: str) -> None:
    assert outcome(reply, structured=False) == free
    assert outcome(reply, structured=True) == structured


def test_ambiguous_reply_is_a_code_of_the_closed_set_with_its_detail() -> None:
    reply = 'The memory says {"label": "supports"} but really: {"label": "does_not_support"}'
    parsed = parse_judgment(RUBRIC, reply)
    assert parsed.reason is Reason.AMBIGUOUS_REPLY
    assert parsed.reason == "ambiguous_reply"
    assert not parsed.valid
    assert parsed.detail == "2 labels in one reply: supports, does_not_support"
    after = parse_judgment(RUBRIC, '{"label": "supports"} Actually, no.')
    assert after.reason is Reason.AMBIGUOUS_REPLY
    assert after.detail == "text after its JSON answer"
    around = parse_judgment(RUBRIC, 'Sure: {"label": "supports"}', structured=True)
    assert around.detail == "text around its JSON answer (the request asked for JSON only)"


def test_the_detail_of_many_labels_is_bounded() -> None:
    reply = " ".join(json.dumps({"label": "x" * 100}) for _ in range(10))
    parsed = parse_judgment(RUBRIC, reply)
    assert parsed.reason == AMBIGUOUS
    assert parsed.detail is not None
    assert parsed.detail.startswith("10 labels in one reply: " + "x" * 60 + ", ")
    assert len(parsed.detail) < 400


@pytest.mark.parametrize(
    "reply",
    [
        '{"a":' * 50_000,
        "[" * 100_000,
        '{"label": "supports", "a": ' + "[" * 100_000,
        "{" * 100_000,
        '{"' * 50_000,
    ],
)
def test_deeply_nested_or_broken_json_is_not_json_and_never_raises(reply: str) -> None:
    for structured in (False, True):
        assert outcome(reply, structured=structured) == "not_json"


def test_deeply_nested_json_after_an_answer_is_ambiguous() -> None:
    # the nested part cannot be read (too deep); it is text after the answer
    reply = '{"label": "supports"} ' + '{"a":' * 50_000
    assert outcome(reply, structured=False) == AMBIGUOUS


# ---------------------------------------------------------------- property-style
#
# Seeded random replies built from the rule's parts (prose without braces, label
# objects, other objects, fences), checked against what the rule says they are.

LABELS = RUBRIC.label_names
PROSE = ["", "Verdict:", "I think", "The memory mentions May.", "ok\n", "note: x < y", "a ] b"]
TAIL_OK = ["", " ", "\n", "\n```", "\n```\n", "```  "]


def _answer(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(LABELS)
    obj: dict[str, object] = {"rationale": rng.choice(PROSE), "label": label}
    if rng.random() < 0.5:
        obj = {"label": label, "rationale": obj["rationale"]}
    text = json.dumps(obj, indent=rng.choice([None, 0, 2]))
    if rng.random() < 0.3:
        text = "```json\n" + text + "\n```"
    return text, label


def _other_object(rng: random.Random) -> str:
    return json.dumps(rng.choice([{}, {"user": "Pepper"}, {"rationale": "{x}"}, {"n": [1, {}]}]))


@pytest.mark.parametrize("seed", range(40))
def test_one_final_answer_is_read_after_any_prose_and_non_label_objects(seed: int) -> None:
    rng = random.Random(seed)
    answer, label = _answer(rng)
    before = " ".join(
        rng.choice([rng.choice(PROSE), _other_object(rng)]) for _ in range(rng.randrange(4))
    )
    tail = rng.choice(TAIL_OK)
    if answer.endswith("```"):  # one closing fence at most
        tail = tail.replace("`", "")
    reply = (before + " " if before else "") + answer + tail
    assert outcome(reply, structured=False) == label
    # with a structured format only the answer alone (fence and space aside) is read
    expected = label if not before.strip() else AMBIGUOUS
    assert outcome(reply, structured=True) == expected


@pytest.mark.parametrize("seed", range(40))
def test_any_second_label_anywhere_is_ambiguous(seed: int) -> None:
    rng = random.Random(seed)
    parts = [_answer(rng)[0], json.dumps({"label": rng.choice([*LABELS, "maybe", 3, None])})]
    parts += [rng.choice(PROSE) for _ in range(rng.randrange(3))]
    parts += [_other_object(rng) for _ in range(rng.randrange(2))]
    rng.shuffle(parts)
    reply = rng.choice([" ", "\n", " then "]).join(parts)
    for structured in (False, True):
        assert outcome(reply, structured=structured) == AMBIGUOUS, reply


_FENCE_TAIL = re.compile(r"\s*(```\s*)?\Z")


@pytest.mark.parametrize("seed", range(40))
def test_anything_but_space_or_a_closing_fence_after_a_read_answer_makes_it_ambiguous(
    seed: int,
) -> None:
    rng = random.Random(seed)
    answer, label = _answer(rng)
    assert outcome(answer, structured=False) == label
    alphabet = ['{"label": "partial"}', "{", "}", "]", "x", " ", "\n", "`", '"', ":", "{}"]
    suffix = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8)))
    if _FENCE_TAIL.fullmatch(suffix):
        suffix += "."
    for structured in (False, True):
        got = outcome(answer + suffix, structured=structured)
        assert got in {AMBIGUOUS, "no_label"}, (answer + suffix, got)


@pytest.mark.parametrize("seed", range(60))
def test_random_replies_never_raise_and_structured_is_never_more_lenient(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [
        "{",
        "}",
        "[",
        "]",
        '"',
        ":",
        ",",
        " ",
        "\n",
        "```",
        "label",
        "supports",
        '"label"',
        '"supports"',
        '"partial"',
        "rationale",
        "sorry",
        "\\",
        "1",
    ]
    reply = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 60)))
    free = parse_judgment(RUBRIC, reply, structured=False)
    strict = parse_judgment(RUBRIC, reply, structured=True)
    for parsed in (free, strict):
        assert (parsed.label is None) == (parsed.reason in set(Reason))
    if strict.valid:  # a structured answer is also a free-text answer, the same one
        assert free.label == strict.label
