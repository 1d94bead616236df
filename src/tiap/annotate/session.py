"""One rater working through a queue of cases: the logic behind ``tiap annotate tui``.

The session has no user interface; the terminal app only calls it. Rules:

- **Queue.** The cases of a subset in its order (or every case), optionally only
  the subset's reviewer overlap. In adjudication mode, only the cases where
  human raters' latest labels disagree (the subset's overlap, when it has one).
- **Commit first.** :meth:`AnnotationSession.label` appends a row to the
  workspace and returns after SQLite has committed it, so a label the rater
  has seen confirmed survives a killed terminal.
- **Never overwrite.** A changed label is a new row; the latest row wins.
- **Undo** walks back the rows this session wrote, newest first. Undoing a
  row restores what the rater had before it: the previous label is written
  again as a new row (origin ``tui-undo``) or, when the case had no label,
  the label is withdrawn with a ``retracted`` row
  (:meth:`~tiap.cases.workspace.Workspace.retract_label`).
- **Advance.** Labelling or skipping moves to the next case this rater has
  not labelled (after the current one, wrapping around); ``move`` steps one
  case at a time; a restart resumes at the first unlabelled case.
- **Blind.** Other raters' and judges' labels are only given out
  (:meth:`AnnotationSession.panel_labels`) for a case the rater has labelled;
  so is a qrels pair's annotation (its grade, and how it was drawn), which the
  terminal app shows only on reveal.
- **One kind.** The queue holds cases of the rubric's kind (contested credits
  or qrels pairs); a rubric for the other kind is refused, naming both.
- **Adjudication** stores labels as rater ``adjudicated``, with the
  adjudicator's name in the note.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass

from tiap.cases.models import Case, LabelRecord
from tiap.cases.vocab import ADJUDICATED, HUMAN, ORIGIN_TUI, ORIGIN_TUI_NOTE, ORIGIN_TUI_UNDO
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

__all__ = ["ADJUDICATED", "ORIGIN", "AnnotationSession", "Progress", "UndoStep"]

ORIGIN = ORIGIN_TUI
_CACHE_SIZE = 64


@dataclass(frozen=True)
class UndoStep:
    """A row this session wrote, and the rater's latest label on that case before it."""

    case_id: str
    written: LabelRecord
    previous: LabelRecord | None


@dataclass(frozen=True)
class Progress:
    position: int  # 1-based position of the current case in the queue
    total: int
    done: int
    counts: dict[str, int]


def _adjudicator_note(name: str, text: str | None) -> str:
    head = f"adjudicator: {name}"
    return f"{head} | {text}" if text else head


class AnnotationSession:
    """A rater's pass over a queue of cases. See the module docstring for the rules."""

    def __init__(
        self,
        ws: Workspace,
        rubric: Rubric,
        rater: str,
        *,
        subset: str | None = None,
        overlap_only: bool = False,
        adjudicate: bool = False,
    ) -> None:
        rater = rater.strip()
        if not rater:
            raise TiapError("--rater: give a non-empty rater name")
        if rater == ADJUDICATED:
            raise TiapError(
                f"the rater name '{ADJUDICATED}' is reserved for adjudicated labels; "
                "use --adjudicate with your own name"
            )
        ws.require_rater_kind(rater, HUMAN, hint="give it with --rater")
        if overlap_only and subset is None:
            raise TiapError("--overlap needs --subset (the overlap belongs to a subset)")
        self.ws = ws
        self.rubric = rubric
        self.rater = rater
        self.adjudicate = adjudicate
        self.store_rater = ADJUDICATED if adjudicate else rater
        self.subset = subset
        self._disputes: dict[str, list[LabelRecord]] = {}
        if adjudicate:
            ids = self._dispute_queue(subset)
        elif overlap_only:
            ids = ws.overlap_ids(subset)  # type: ignore[arg-type]
        else:
            ids = ws.case_ids(subset=subset)
        kinds = ws.case_kinds(case_ids=ids) if ids else {}
        for kind in kinds:
            rubric.require_case_kind(kind)
        self.case_ids: list[str] = ids
        self._index = {cid: i for i, cid in enumerate(ids)}
        self._mine: dict[str, LabelRecord] = {
            r.case_id: r
            for r in ws.latest_labels(raters=[self.store_rater])
            if r.case_id in self._index
        }
        self._cache: OrderedDict[str, Case] = OrderedDict()
        self._undo: list[UndoStep] = []
        self._pending_notes: dict[str, str] = {}
        self.position = self.first_todo() if ids else 0

    # ------------------------------------------------------------------ queue

    def _dispute_queue(self, subset: str | None) -> list[str]:
        if subset is not None:
            candidates = self.ws.overlap_ids(subset) or self.ws.case_ids(subset=subset)
        else:
            candidates = self.ws.case_ids()
        wanted = set(candidates)
        by_case: dict[str, list[LabelRecord]] = {}
        for rec in self.ws.latest_labels(case_ids=wanted, rater_kind=HUMAN):
            if rec.rater != ADJUDICATED and rec.label is not None:
                by_case.setdefault(rec.case_id, []).append(rec)
        self._disputes = {
            cid: recs for cid, recs in by_case.items() if len({r.label for r in recs}) >= 2
        }
        return [cid for cid in candidates if cid in self._disputes]

    def __len__(self) -> int:
        return len(self.case_ids)

    @property
    def case_id(self) -> str:
        return self.case_ids[self.position]

    def case_at(self, index: int) -> Case:
        """The case at a queue position, loaded by id (a small cache keeps recent ones)."""
        cid = self.case_ids[index]
        case = self._cache.get(cid)
        if case is None:
            case = self.ws.case(cid)
            self._cache[cid] = case
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(cid)
        return case

    @property
    def current(self) -> Case:
        return self.case_at(self.position)

    def is_done(self, case_id: str) -> bool:
        return case_id in self._mine

    def first_todo(self) -> int:
        """The first position this rater has not labelled (0 when all are labelled)."""
        return next((i for i, cid in enumerate(self.case_ids) if cid not in self._mine), 0)

    def next_todo(self) -> int | None:
        """The next unlabelled position after the current one, wrapping; None if none."""
        n = len(self.case_ids)
        for step in range(1, n):
            i = (self.position + step) % n
            if self.case_ids[i] not in self._mine:
                return i
        return None

    def advance(self) -> bool:
        """Go to the next case to do; False (and stay) when every case is labelled."""
        nxt = self.next_todo()
        if nxt is None:
            return False
        self.position = nxt
        return True

    def move(self, delta: int) -> None:
        self.position = min(max(self.position + delta, 0), len(self.case_ids) - 1)

    def jump(self, target: str) -> int:
        """Go to a 1-based position or a case id; returns the new position."""
        target = target.strip()
        if target.isdigit():
            pos = int(target)
            if not 1 <= pos <= len(self.case_ids):
                raise TiapError(f"no position {pos}: the queue has {len(self.case_ids)} cases")
            self.position = pos - 1
        elif target in self._index:
            self.position = self._index[target]
        else:
            raise TiapError(f"no case '{target}' in this queue")
        return self.position

    # ----------------------------------------------------------------- labels

    def my_label(self, case_id: str | None = None) -> LabelRecord | None:
        return self._mine.get(case_id or self.case_id)

    def pending_note(self, case_id: str | None = None) -> str | None:
        return self._pending_notes.get(case_id or self.case_id)

    def _write(self, case_id: str, label: str, note: str | None, origin: str) -> LabelRecord:
        if self.adjudicate:
            note = _adjudicator_note(self.rater, note)
        record = LabelRecord(
            case_id=case_id,
            rater=self.store_rater,
            rater_kind=HUMAN,
            label=label,
            note=note,
            rubric_id=self.rubric.id,
            rubric_hash=self.rubric.content_hash,
            origin=origin,
        )
        row_id = self.ws.add_label(record)  # committed when this returns
        stored = record.model_copy(update={"id": row_id})
        self._undo.append(UndoStep(case_id, stored, self._mine.get(case_id)))
        self._mine[case_id] = stored
        return stored

    def label(self, name: str) -> LabelRecord:
        """Label the current case (committed on return); a pending note goes with it."""
        if name not in self.rubric.label_names:
            raise TiapError(f"'{name}' is not a label of rubric '{self.rubric.id}'")
        cid = self.case_id
        note = self._pending_notes.pop(cid, None)
        return self._write(cid, name, note, ORIGIN)

    def note(self, text: str) -> LabelRecord | None:
        """Attach a note to the current case. On a labelled case it is stored at once
        (a new row with the same label); otherwise it goes with the next label."""
        text = text.strip()
        cid = self.case_id
        mine = self._mine.get(cid)
        if mine is None or mine.label is None:
            if text:
                self._pending_notes[cid] = text
            else:
                self._pending_notes.pop(cid, None)
            return None
        return self._write(cid, mine.label, text or None, ORIGIN_TUI_NOTE)

    def undo(self) -> UndoStep | None:
        """Take back the newest row this session wrote; the cursor goes to its case."""
        if not self._undo:
            return None
        step = self._undo.pop()
        prev = step.previous
        if prev is None or prev.label is None:
            self.ws.retract_label(step.case_id, self.store_rater, note="undo")
            self._mine.pop(step.case_id, None)
        else:
            restored = prev.model_copy(
                update={
                    "id": None,
                    "created_at": None,
                    "external_id": None,
                    "origin": ORIGIN_TUI_UNDO,
                }
            )
            row_id = self.ws.add_label(restored)
            self._mine[step.case_id] = restored.model_copy(update={"id": row_id})
        self.position = self._index[step.case_id]
        return step

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    # ------------------------------------------------------------ what is seen

    def panel_labels(self, case_id: str | None = None) -> list[LabelRecord]:
        """Judges' and other raters' latest labels on a case the rater has labelled."""
        cid = case_id or self.case_id
        if cid not in self._mine:
            raise TiapError("label this case first: the panel's labels stay hidden until then")
        return [
            r
            for r in self.ws.latest_labels(case_ids=[cid])
            if r.rater != self.store_rater and r.case_id == cid
        ]

    def disputed_labels(self, case_id: str | None = None) -> list[LabelRecord]:
        """In adjudication mode: the disagreeing human labels of a case."""
        return list(self._disputes.get(case_id or self.case_id, []))

    def progress(self) -> Progress:
        counts = Counter(r.label for r in self._mine.values() if r.label is not None)
        return Progress(
            position=self.position + 1,
            total=len(self.case_ids),
            done=len(self._mine),
            counts={name: counts.get(name, 0) for name in self.rubric.label_names},
        )
