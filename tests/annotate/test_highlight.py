from __future__ import annotations

from tiap.annotate.highlight import (
    ANSWER_STYLE,
    EVIDENCE_STYLE,
    Cues,
    content_words,
    highlighted,
    normalise,
    spans,
)


def test_normalise_drops_possessive_and_plural_only() -> None:
    assert normalise("Dogs") == "dog"
    assert normalise("Caroline's") == "caroline"
    assert normalise("Caroline’s") == "caroline"
    assert normalise("glass") == "glass"  # double s is not a plural
    assert normalise("is") == "is"  # too short to strip


def test_content_words_skip_function_words_keep_numbers() -> None:
    words = content_words("She went to the LGBTQ support group on 7 May 2023.")
    assert words == {"went", "lgbtq", "support", "group", "7", "may", "2023"}


def test_spans_by_hand() -> None:
    # answer "7 May 2023" -> {7, may, 2023}; evidence adds {went, lgbtq, support, group}
    cues = Cues.from_texts("7 May 2023", "I went to a LGBTQ support group")
    assert cues.answer == {"7", "may", "2023"}
    assert "may" not in cues.evidence  # answer words are not counted twice
    text = "Caroline attended an LGBTQ support group on 7 May 2023."
    got = [(text[s:e], kind) for s, e, kind in spans(text, cues)]
    assert got == [
        ("LGBTQ", "evidence"),
        ("support", "evidence"),
        ("group", "evidence"),
        ("7", "answer"),
        ("May", "answer"),
        ("2023", "answer"),
    ]


def test_highlighted_styles_and_optional_evidence() -> None:
    cues = Cues.from_texts("sunrise", "painting a lake")
    text = highlighted("A sunrise over the lake", cues)
    styled = {text.plain[s.start : s.end]: str(s.style) for s in text.spans}
    assert styled == {"sunrise": ANSWER_STYLE, "lake": EVIDENCE_STYLE}
    only_answer = highlighted("A sunrise over the lake", cues, evidence=False)
    assert [only_answer.plain[s.start : s.end] for s in only_answer.spans] == ["sunrise"]
