"""Freeze an anchor set: a subset's cases, each judge's labels on them and the human
reference, recorded once in the workspace and never changed
(:meth:`~tiap.cases.probe_store.ProbeStore.freeze_anchor_set`).

- each case by id and the sha256 of the text every judge saw (its rendered
  messages under the rubric: canonical JSON), so a case whose text changed since
  is known;
- each judge's latest label under the rubric on it (``None``: invalid), with its
  model, request settings hash and request hash;
- the human reference where there is one: the label a strict majority of the
  people who labelled the case gave (no majority, or no person: none).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from tiap.cases import Workspace
from tiap.cases.probe_models import AnchorCase, AnchorLabel, AnchorSet
from tiap.cases.store import now_iso
from tiap.cases.vocab import HUMAN, JUDGE
from tiap.errors import TiapError
from tiap.judge.panel import Panel
from tiap.judge.request import canonical_json
from tiap.rubric import Rubric, render_messages

__all__ = ["REFERENCE", "freeze_anchor", "text_hash"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}")
#: how an anchor set's human reference is formed
REFERENCE = "human majority"


def text_hash(rubric: Rubric, fields: dict[str, str]) -> str:
    """sha256 of the messages a judge sees for a case (canonical JSON)."""
    messages = render_messages(rubric, fields)
    return hashlib.sha256(canonical_json(messages).encode("utf-8")).hexdigest()


def _majority(labels: list[str]) -> str | None:
    if not labels:
        return None
    top, n = Counter(labels).most_common(1)[0]
    return top if n * 2 > len(labels) else None


def freeze_anchor(
    ws: Workspace, name: str, panel: Panel, rubric: Rubric, *, subset: str
) -> AnchorSet:
    """Record anchor set ``name`` from ``subset`` and ``panel``'s judges (see the
    module docstring); a name taken already, an empty subset or a judge without a
    label there is an error."""
    if not _NAME.fullmatch(name):
        raise TiapError(
            f"anchor set name {name!r}: letters, digits and _.:- only, starting with a letter "
            "or digit, at most 80 characters"
        )
    cases = ws.cases(subset=subset)
    if not cases:
        raise TiapError(f"subset '{subset}' has no cases")
    ids = [c.case_id for c in cases]
    judges = [j.name for j in panel.judges]
    labels = [
        r
        for r in ws.latest_labels(case_ids=ids, raters=judges, rater_kind=JUDGE)
        if r.rubric_hash == rubric.content_hash
    ]
    missing = sorted(set(judges) - {r.rater for r in labels})
    if missing:
        raise TiapError(
            f"judge(s) {', '.join(missing)} have no label on subset '{subset}' under rubric "
            f"'{rubric.id}': run 'tiap judge run' first"
        )
    humans: dict[str, list[str]] = {}
    for r in ws.latest_labels(case_ids=ids, rater_kind=HUMAN):
        if r.label is not None and r.rubric_hash in (None, rubric.content_hash):
            humans.setdefault(r.case_id, []).append(r.label)
    reference = {c: _majority(v) for c, v in humans.items()}
    anchor = AnchorSet(
        name=name,
        subset=subset,
        rubric_id=rubric.id,
        rubric_hash=rubric.content_hash,
        panel=panel.name,
        reference=REFERENCE if any(reference.values()) else None,
        cases=len(cases),
        judges=judges,
        created_at=now_iso(),
    )
    rows = [
        AnchorCase(
            anchor=name,
            case_id=c.case_id,
            position=i,
            text_hash=text_hash(rubric, c.prompt_fields()),
            reference=reference.get(c.case_id),
        )
        for i, c in enumerate(cases)
    ]
    frozen = [
        AnchorLabel(
            anchor=name,
            case_id=r.case_id,
            rater=r.rater,
            label=r.label,
            reason=r.reason,
            model=r.model,
            settings_hash=r.settings_hash,
            request_hash=r.request_hash,
            label_id=int(r.id or 0),
        )
        for r in labels
    ]
    ws.freeze_anchor_set(anchor, rows, frozen)
    return anchor
