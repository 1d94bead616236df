"""Helpers for the agreement tests: cases, labels in a real workspace, random
label matrices."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace
from tiap.rubric import Rubric, load_rubric

INVALID, MISSING = -1, -2

#: The request-settings hash judge labels carry by default (an opaque sha256).
SETTINGS = "5e" * 32


def random_codes(seed: int, n: int, m: int, k: int, missing: float) -> np.ndarray:
    """Raters who copy a latent label 70% of the time, with invalid and missing holes."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    codes = np.where(rng.random((n, m)) < 0.7, truth[:, None], rng.integers(0, k, (n, m)))
    holes = rng.random((n, m)) < missing
    return np.where(holes, np.where(rng.random((n, m)) < 0.5, INVALID, MISSING), codes)


def make_case(i: int, *, dataset: str = "locomo", run: str = "run-a", category: str = "1") -> Case:
    rank = 1 + (i * 7) % 60
    return Case(
        case_id=f"case-{i:04d}",
        dataset=dataset,
        run=run,
        store="store",
        query_id=f"q{i}",
        query_index=i,
        question=f"question {i}?",
        answer=f"answer {i}",
        category=category,
        evidence=[EvidenceItem(source_id=f"D1:{i}", text=f"turn {i}", speaker="A")],
        memory_id=f"m{i}",
        memory_text=f"memory {i}",
        memory_source_ids=[f"D1:{i}"],
        rank=rank,
        rank_bucket=rank_bucket(rank),
        k=60,
    )


def add_labels(
    ws: Workspace,
    rater: str,
    labels: Sequence[str | None],
    *,
    kind: str = "judge",
    rubric: Rubric | None = None,
    panel: str | None = "panel-a",
    case_ids: Iterable[str] | None = None,
    settings_hash: str | None = SETTINGS,
) -> None:
    """One label per case (``None``: invalid output); skip a case by passing ``"-"``.
    Judge labels carry ``settings_hash`` (``None``: none, as before tiap kept it)."""
    rub = rubric or load_rubric("contested-credit")
    ids = list(case_ids) if case_ids is not None else ws.case_ids()
    records = [
        LabelRecord(
            case_id=cid,
            rater=rater,
            rater_kind=kind,  # type: ignore[arg-type]
            label=lab,
            reason=None if lab is not None else "not_json",
            rubric_id=rub.id,
            rubric_hash=rub.content_hash,
            panel=panel if kind == "judge" else None,
            model=f"provider/{rater}" if kind == "judge" else None,
            settings_hash=settings_hash if kind == "judge" else None,
        )
        for cid, lab in zip(ids, labels, strict=True)
        if lab != "-"
    ]
    ws.add_labels(records)


def validation_workspace(path: object, n: int, *, beyond: int = 0) -> Workspace:
    """A workspace with ``n`` cases in a subset ``validation`` of kind validation and
    ``beyond`` more outside it (the caller closes it)."""
    ws = Workspace(path)  # type: ignore[arg-type]
    cases = [make_case(i) for i in range(n + beyond)]
    ws.add_cases(cases)
    ws.save_subset("validation", [c.case_id for c in cases[:n]], params={"kind": "validation"})
    return ws
