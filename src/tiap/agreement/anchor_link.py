"""Which anchor set was frozen with a gate: the ``anchor`` of a recorded
:class:`~tiap.cases.events.GateEvent`.

When a gate verdict is recorded (:func:`tiap.agreement.gate.record_gate`), it names
the newest anchor set frozen from exactly the evidence it judged:

- on the gate's subset, holding the same cases as the subset does now;
- under the gate's rubric version (its content hash);
- of the gate's judges, every one and no other;
- its frozen labels are the judges' current labels on the subset under that rubric
  version (the same label rows: none changed or added since the freeze), each
  made with a model and request settings the gate saw for that judge (a label
  without a settings hash, or a gate that does not know its judges' settings,
  matches nothing).

So the order is: judge the validation subset, ``tiap judge anchor freeze NAME``,
then the agreement report on the subset records the gate with ``anchor = NAME``.
An anchor set frozen after a gate was recorded is named by the next gate recorded
on the same evidence (run the agreement report again); a gate with no such set
records ``anchor = None``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.cases.events import GateEvent
from tiap.cases.probe_models import AnchorLabel, AnchorSet
from tiap.cases.vocab import JUDGE

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

__all__ = ["frozen_with", "with_anchor"]


def _labels_seen(event: GateEvent, labels: list[AnchorLabel]) -> bool:
    """Was every frozen label made with a model and settings the gate saw?"""
    for label in labels:
        judge = event.judge(label.rater)
        if judge is None or judge.settings_hashes is None:
            return False
        if label.settings_hash is None or label.settings_hash not in judge.settings_hashes:
            return False
        if judge.models and label.model not in judge.models:
            return False
    return True


def _matches(
    ws: Workspace,
    event: GateEvent,
    anchor: AnchorSet,
    current: dict[tuple[str, str], int],
    cases: set[str],
) -> bool:
    if (anchor.subset, anchor.rubric_hash) != (event.subset, event.rubric_hash):
        return False
    if sorted(anchor.judges) != sorted(event.judge_names):
        return False
    if {c.case_id for c in ws.anchor_cases(anchor.name)} != cases:
        return False
    labels = ws.anchor_labels(anchor.name)
    if {(lab.case_id, lab.rater): lab.label_id for lab in labels} != current:
        return False
    return _labels_seen(event, labels)


def frozen_with(ws: Workspace, event: GateEvent) -> str | None:
    """The newest anchor set frozen from the gate's evidence (see the module doc), or
    ``None``."""
    anchors = ws.anchor_sets()
    if not anchors:
        return None
    ids = ws.case_ids(subset=event.subset, include_stale=True)
    current = {
        (r.case_id, r.rater): int(r.id or 0)
        for r in ws.latest_labels(case_ids=ids, raters=event.judge_names, rater_kind=JUDGE)
        if r.rubric_hash == event.rubric_hash
    }
    for anchor in reversed(anchors):
        if _matches(ws, event, anchor, current, set(ids)):
            return anchor.name
    return None


def with_anchor(ws: Workspace, event: GateEvent) -> GateEvent:
    """``event`` naming the anchor set frozen with it (unchanged when it names one)."""
    if event.anchor is not None:
        return event
    return event.model_copy(update={"anchor": frozen_with(ws, event)})
