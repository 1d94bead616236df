"""Deterministic contested cases and a screen-text helper for the annotate tests."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from rich.console import Console

from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace

_TOPICS = (
    (
        "When did Caroline go to the LGBTQ support group?",
        "7 May 2023",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        "Caroline attended an LGBTQ support group on 7 May 2023.",
    ),
    (
        "What did Melanie paint recently?",
        "a sunrise over a lake",
        "I just finished painting a sunrise over the lake last week!",
        "Melanie enjoys painting landscapes in her free time.",
    ),
    (
        "What is Caroline's identity?",
        "transgender woman",
        "Being a transgender woman, I found the community really welcoming.",
        "Caroline talked about a welcoming community she found.",
    ),
    (
        "Where did Melanie camp with her kids?",
        "the beach",
        "We camped at the beach with the kids, they loved the waves.",
        "Melanie went camping with her kids at the beach.",
    ),
)


def make_case(i: int, *, run: str = "mem0-like", long: bool = False) -> Case:
    question, answer, evidence, memory = _TOPICS[i % len(_TOPICS)]
    if long:
        memory = " ".join([memory] * 12)
        evidence = " ".join([evidence] * 8)
    rank = 1 + (i * 7) % 60
    return Case(
        case_id=f"c{i:04d}",
        dataset="locomo-sample",
        run=run,
        store="native",
        query_id=f"conv-26/q{i:04d}",
        query_index=i,
        question=question,
        answer=answer,
        category="single-hop" if i % 2 else "temporal",
        conversation_id="conv-26",
        evidence=[
            EvidenceItem(
                source_id=f"D1:{i + 1}", text=evidence, speaker="Caroline", time="8 May 2023"
            )
        ],
        memory_id=f"fact-{i:04d}",
        memory_text=memory,
        memory_source_ids=[f"D1:{i + 1}"],
        rank=rank,
        rank_bucket=rank_bucket(rank),
        k=60,
    )


def make_workspace(
    path: Path, n: int, *, subset: str | None = "val", overlap: int = 0, long: bool = False
) -> Path:
    """A workspace with ``n`` cases, optionally a subset of all of them whose first
    ``overlap`` cases are the reviewer overlap."""
    cases = [make_case(i, long=long) for i in range(n)]
    with Workspace(path) as ws:
        ws.add_cases(cases)
        if subset is not None:
            ids = [c.case_id for c in cases]
            ws.save_subset(subset, ids, overlap=ids[:overlap])
    return path


def judge_label(case_id: str, judge: str, label: str | None, reason: str | None = None):
    return LabelRecord(
        case_id=case_id,
        rater=judge,
        rater_kind="judge",
        label=label,
        reason=reason,
        model=f"openai/{judge}",
        origin="judge",
    )


def human_label(case_id: str, rater: str, label: str) -> LabelRecord:
    return LabelRecord(case_id=case_id, rater=rater, rater_kind="human", label=label, origin="test")


def screen_text(app) -> str:
    """The text on the app's screen, one line per row, trailing blanks removed.

    Mirrors ``App.export_screenshot`` (which renders the same compositor output
    to SVG) but records plain text, so a snapshot is a readable file.
    """
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        force_terminal=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    lines = console.export_text(styles=False).splitlines()
    return "\n".join(line.rstrip() for line in lines).rstrip("\n") + "\n"


def count_label_rows(path: Path) -> int:
    """Every row of the labels table, read through a separate connection."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0])
    finally:
        conn.close()


#: escape sequences a terminal obeys: window title, colour, clipboard, cursor moves
#: and line erase, a bidi override; and Rich/Textual markup
HOSTILE_MEMORY = (
    "Caroline \x1b]0;PWNED\x07went to a \x1b[31mred\x1b[0m group "
    "\x1b]52;c;UFdORUQ=\x1b\\on \x1b[3;2H\x1b[2Kthe 7th [bold]x[/bold] \u202eevil\u202c."
)
HOSTILE = {
    "memory_text": HOSTILE_MEMORY,
    "question": "What did \x1b]2;TITLE\x1b\\Caroline \x1b[1;32mdo\x1b[0m [/oops]?",
    "category": "temporal\x1b[7m",
    "memory_id": "fact-\x1b]0;ID\x07",
}
HOSTILE_SPEAKER = "Caro\x1b[5mline"


def hostile_case(i: int, *, shown: bool = False) -> Case:
    """A case whose memory text, question, category, memory id and speaker carry
    escape sequences and markup; ``shown``: its twin with each of those texts as
    :func:`tiap.text.inert` shows it (plain text, the same on screen)."""
    from tiap.text import inert

    def f(text: str) -> str:
        return inert(text) if shown else text

    case = make_case(i)
    evidence = case.evidence[0].model_copy(update={"speaker": f(HOSTILE_SPEAKER)})
    fields = {name: f(text) for name, text in HOSTILE.items()}
    return case.model_copy(update={**fields, "evidence": [evidence]})


def hostile_workspace(path: Path, n: int = 2, *, shown: bool = False) -> Path:
    """``n`` hostile cases (or their ``shown`` twins) in subset 'val'."""
    cases = [hostile_case(i, shown=shown) for i in range(n)]
    with Workspace(path) as ws:
        ws.add_cases(cases)
        ws.save_subset("val", [c.case_id for c in cases])
    return path
