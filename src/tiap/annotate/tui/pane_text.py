"""What each pane of the terminal app shows, as rich text (no Textual here).

Every string from data (case text, names, labels, notes, the rubric) is made
:func:`~tiap.text.inert` and put in :class:`rich.text.Text` objects, never in
markup: control characters and escape sequences show as placeholders, and
``[...]`` in data is literal text."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from tiap.annotate.highlight import ANSWER_STYLE, EVIDENCE_STYLE, Cues, highlighted
from tiap.annotate.session import AnnotationSession
from tiap.cases.models import Case, LabelRecord
from tiap.rubric.answer_criteria import ABSTENTION, criteria_for
from tiap.text import inert

MUTED = "dim"


def cues_for(case: Case) -> Cues:
    """The words to look for: the answer's and evidence's; for a qrels pair, the
    query's (shown in the answer's style); for an answer case, the gold answer's."""
    if case.is_qrels:
        return Cues.from_texts(case.question, "")
    if case.is_answer:
        return Cues.from_texts(case.answer, "")
    return Cues.from_texts(case.answer, "\n".join(e.text for e in case.evidence))


def status_line(session: AnnotationSession) -> Text:
    p = session.progress()
    who = inert(f"{session.rater} (adjudicating)" if session.adjudicate else session.rater)
    scope = inert(session.subset or "all cases")
    return Text.assemble(
        (who, "bold"),
        f" · {scope} · ",
        (f"case {p.position}/{p.total}", "bold"),
        f" · done {p.done}/{p.total}",
    )


def case_head(case: Case, cues: Cues) -> Text:
    if case.is_qrels:
        return _qrels_head(case)
    out = Text()
    out.append("Q ", style="bold")
    out.append(inert(case.question))
    out.append("\nA ", style="bold")
    out.append(inert(case.answer), style=ANSWER_STYLE)
    meta = [
        f"{'question type' if case.is_answer else 'category'} {case.category or 'unknown'}",
        f"run {case.run}",
        f"query {case.query_id}",
        f"case {case.case_id}",
    ]
    out.append("\n  " + inert(" · ".join(meta)), style=MUTED)
    return out


def _qrels_head(case: Case) -> Text:
    out = Text()
    out.append("Q ", style="bold")
    out.append(inert(case.question))
    meta = [f"query {case.query_id}", f"case {case.case_id}"]  # the dataset: in the Pair pane
    out.append("\n  " + inert(" · ".join(meta)), style=MUTED)
    return out


def evidence_text(case: Case, cues: Cues) -> Text:
    if case.is_qrels:
        return pair_text(case)
    if case.is_answer:
        return criteria_text(case)
    parts: list[Text] = []
    for item in case.evidence:
        head = " | ".join(x for x in (item.source_id, item.speaker, item.time) if x)
        line = Text(f"[{inert(head)}] ", style=MUTED)
        line.append_text(highlighted(item.text, cues, evidence=False))
        parts.append(line)
    return Text("\n").join(parts) if parts else Text("(no evidence text)", style=MUTED)


#: legend under the memory pane (Textual content markup)
MEMORY_LEGEND = f"[{ANSWER_STYLE}]answer[/] [{EVIDENCE_STYLE}]evidence[/] words"
#: the same, for qrels pairs (the document pane)
DOCUMENT_LEGEND = f"[{ANSWER_STYLE}]query[/] words"
#: the same, for answer cases (the response pane)
RESPONSE_LEGEND = f"[{ANSWER_STYLE}]gold answer[/] words"
#: the legend under the right pane, per case kind
LEGENDS = {"contested": MEMORY_LEGEND, "qrels": DOCUMENT_LEGEND, "answer": RESPONSE_LEGEND}

#: pane titles per case kind: (left pane, right pane)
PANE_TITLES = {
    "contested": ("Gold source evidence", "Credited memory"),
    "qrels": ("Pair", "Document"),
    "answer": ("Criteria", "Model response"),
}


def criteria_text(case: Case) -> Text:
    """What an answer case is judged by: its question type and the criteria tiap gives
    for it (:mod:`tiap.rubric.answer_criteria`)."""
    out = Text()
    out.append("question type: ", style=MUTED)
    out.append(inert(case.category or "unknown"))
    variant = case.criteria_variant
    if variant == ABSTENTION:
        out.append(" (abstention question)", style="bold")
    out.append(f"\ncriteria ({variant}): ", style=MUTED)
    out.append(inert(criteria_for(variant)))
    return out


def pair_text(case: Case) -> Text:
    """What a qrels pair is about, without its annotation (blind until revealed)."""
    out = Text()
    out.append(inert(case.memory_id), style="bold")
    rows = [
        ("dataset", case.dataset),
        ("memory type", case.memory_type or "unknown"),
        ("scene", case.conversation_id or ""),
        ("category", case.category or ""),
    ]
    for name, value in rows:
        if value:
            out.append(f"\n{name}: ", style=MUTED)
            out.append(inert(value))
    out.append(
        "\nJudge the document on its own text. Its qrels annotation is shown under "
        "Labels once you have labelled the case (press r).",
        style=MUTED,
    )
    return out


def document_text(case: Case, cues: Cues) -> Text:
    """A qrels pair's document: its title, then its text, query words highlighted."""
    out = Text()
    if case.title:
        out.append_text(highlighted(case.title, cues))
        out.stylize("bold")
        out.append("\n")
    out.append_text(highlighted(case.memory_text, cues))
    return out


def annotation_text(case: Case) -> str:
    """A qrels pair's annotation: its grade and how it was drawn."""
    if case.pair == "negative":
        return (
            f"{case.grade_text}: a top-ranked document of run {case.run} (rank {case.rank}) "
            "the qrels give no positive grade"
        )
    return f"{case.grade_text} (an annotated pair of the qrels file)"


def memory_text(case: Case, cues: Cues) -> Text:
    """The credited memory with its rank (and rank bucket) on the first line; for a
    qrels pair, the document; for an answer case, the run's answer."""
    if case.is_qrels:
        return document_text(case, cues)
    if case.is_answer:
        out = Text(inert(f"run {case.run}") + "\n", style=MUTED)
        out.append_text(highlighted(case.hypothesis or "", cues))
        return out
    out = Text.assemble(
        (f"rank {case.rank}", "bold"),
        (inert(f" ({case.rank_bucket}) · {case.memory_id}") + "\n", MUTED),
    )
    out.append_text(highlighted(case.memory_text, cues))
    return out


def _describe(rec: LabelRecord) -> str:
    if rec.label is not None:
        return inert(rec.label)
    return inert(f"abstained ({rec.reason})") if rec.reason else "no label"


def mine_text(
    session: AnnotationSession, *, revealed: bool, panel: list[LabelRecord] | None = None
) -> Text:
    """The rater's label and note, the disputed labels when adjudicating, how often
    the rater gave each label, and the panel's labels (only once revealed)."""
    out = Text()
    mine = session.my_label()
    out.append("Your label: ", style="bold")
    if mine is not None and mine.label is not None:
        out.append(inert(mine.label), style="bold green")
    else:
        out.append("none yet", style=MUTED)
    note = mine.note if mine is not None and mine.note else session.pending_note()
    if note:
        out.append(f"   note: {inert(note)}", style="italic")
    if session.adjudicate:
        disputed = " · ".join(f"{r.rater}: {r.label}" for r in session.disputed_labels())
        out.append("\nRaters disagree: ", style="bold red")
        out.append(inert(disputed))
    case = session.current
    if case.is_qrels:
        out.append("\nqrels: ", style="bold")
        if mine is None or mine.label is None:
            out.append("hidden until you label this case", style=MUTED)
        elif not revealed:
            out.append("hidden (press r to reveal)", style=MUTED)
        else:
            out.append(inert(annotation_text(case)))
    counts = session.progress().counts
    out.append("\nYour counts: ", style="bold")
    out.append(inert(" · ".join(f"{name} {n}" for name, n in counts.items())))
    out.append("\nPanel: ", style="bold")
    if mine is None or mine.label is None:
        out.append("hidden until you label this case", style=MUTED)
    elif not revealed:
        out.append("hidden (press r to reveal)", style=MUTED)
    elif not panel:
        out.append("no other labels on this case", style=MUTED)
    else:
        for r in panel:
            out.append(f"\n  {inert(r.rater)} ({inert(r.rater_kind)}): {_describe(r)}")
    return out


def rubric_table(session: AnnotationSession) -> Table:
    """The rubric's labels: key, name and definition (drawn once; every cell a
    :class:`~rich.text.Text`, so a definition's ``[...]`` is never markup)."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    for lab in session.rubric.labels:
        table.add_row(
            Text(f" {inert(lab.key)} ", style="bold reverse"),
            Text(inert(lab.name), style="bold"),
            Text(" ".join(inert(lab.definition).split())),
        )
    return table
