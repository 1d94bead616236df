"""The extractive parser: splitting, speaker resolution, dating, density cut."""

from __future__ import annotations

from datetime import date

from tiap.traces.adapter_output import Turn
from tiap.traces.parser import (
    extract_facts,
    parse_session_date,
    parse_turns,
    select_facts,
)


def _turn(
    text: str, caption: str | None = None, when: str | None = "1:56 pm on 8 May, 2023"
) -> Turn:
    return Turn(
        unit_id="c:D1:3",
        source_id="c:D1:3",
        conversation_id="c",
        speaker="Caroline",
        listener="Melanie",
        text=text,
        date=when,
        caption=caption,
    )


def test_session_dates_of_both_benchmarks() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == date(2023, 5, 8)
    assert parse_session_date("2023/05/30 (Tue) 23:40") == date(2023, 5, 30)
    assert parse_session_date("sometime") is None
    assert parse_session_date(None) is None


def test_speaker_resolved_dated_and_relative_days() -> None:
    facts = extract_facts(
        _turn("I went to a LGBTQ support group yesterday and it was so powerful.")
    )
    assert [f.text for f in facts] == [
        "On 8 May 2023, Caroline went to a LGBTQ support group yesterday (7 May 2023) "
        "and it was so powerful."
    ]
    facts = extract_facts(_turn("Your painting of the lake looks amazing to me."))
    assert [f.text for f in facts] == [
        "On 8 May 2023, Caroline said: Melanie's painting of the lake looks amazing to Caroline."
    ]
    facts = extract_facts(_turn("I'm running a charity race next month.", when=None))
    assert [f.text for f in facts] == ["Caroline is running a charity race next month."]


def test_split_at_sentences_and_clauses_questions_and_fillers_dropped() -> None:
    text = (
        "Hey Mel! How are you doing? I started painting landscapes last year; "
        "my brother joined a climbing club, but he hurt his ankle in March."
    )
    facts = [f.text for f in extract_facts(_turn(text))]
    assert facts == [
        "On 8 May 2023, Caroline started painting landscapes last year (2022).",
        "On 8 May 2023, Caroline's brother joined a climbing club.",
        "On 8 May 2023, Caroline said: he hurt his ankle in March.",
    ]


def test_image_caption_is_a_fact() -> None:
    facts = extract_facts(_turn("Look at this.", caption="a photo of a red bicycle"))
    assert [f.text for f in facts] == [
        "On 8 May 2023, Caroline shared an image: a photo of a red bicycle."
    ]


def test_density_cut_keeps_the_most_informative_facts_in_order() -> None:
    text = (
        "I bought a blue kayak. The weather was nice. "
        "My sister Anna visited Lisbon, Porto and Faro in 2021. I adopted two cats."
    )
    facts = extract_facts(_turn(text))
    assert len(facts) == 4
    one = [f.text for f in select_facts(facts, 1)]
    # content words: kayak 3 (bought blue kayak), weather 2, Lisbon fact 6 (+digit), cats 2
    assert one == ["On 8 May 2023, Caroline's sister Anna visited Lisbon, Porto and Faro in 2021."]
    two = [f.text for f in select_facts(facts, 2)]
    assert two == ["On 8 May 2023, Caroline bought a blue kayak.", one[0]]
    assert select_facts(facts, 8) == facts


def test_parse_turns_ids_lineage_and_subsets() -> None:
    turns = [
        _turn("I bought a blue kayak. My sister Anna visited Lisbon in 2021. I adopted two cats."),
        _turn("Hi! How are you?"),
    ]
    result = parse_turns(turns, [1, 5])
    d1, d5 = result.memories[1], result.memories[5]
    assert [m.memory_id for m in d5] == ["c:D1:3#p5.1", "c:D1:3#p5.2", "c:D1:3#p5.3"]
    assert [m.memory_id for m in d1] == ["c:D1:3#p1.1"]
    assert {m.text for m in d1} <= {m.text for m in d5}
    assert all(m.source_ids == ["c:D1:3"] and m.canonical and not m.raw for m in d1 + d5)
    assert result.turns_without_facts == ["c:D1:3"]  # the second turn (same id here) gave none
    again = parse_turns(turns, [1, 5])
    assert [m.model_dump() for m in again.memories[5]] == [m.model_dump() for m in d5]
