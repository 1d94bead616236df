"""Majority vote per case, and the prevalence of majority labels.

Policy (explicit, the paper's): on each case the voters' valid labels are
counted; invalid labels and missing labels are abstentions. With fewer valid
labels than the quorum the case is ``no_quorum``. Otherwise a label wins when
it has a strict majority of the valid labels (more than half); when the top
count is shared by two or more labels the case is a ``tie``; when one label
leads but with half or fewer of the valid labels (e.g. 2-1-1) it is
``no_majority``. By default the voters are the judges (raters of kind
``judge``) among the included raters, or every included rater when there is no
judge; the default quorum is a strict majority of the voters (3 of 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from tiap.agreement.formulas import collapse_codes, counts_matrix
from tiap.agreement.label_table import LabelTable
from tiap.agreement.models import Distribution
from tiap.agreement.scope import categories_for, default_included, resolve_raters
from tiap.cases.vocab import JUDGE
from tiap.errors import TiapError
from tiap.rubric import Rubric

Outcome = Literal["majority", "tie", "no_majority", "no_quorum"]
OUTCOMES: tuple[Outcome, ...] = ("majority", "tie", "no_majority", "no_quorum")
_MAJ, _TIE, _NOMAJ, _NOQ = range(4)


@dataclass(frozen=True)
class VoteArrays:
    """Per case: winning category (-1 without a majority), outcome index into
    :data:`OUTCOMES`, vote counts per category and the number of valid votes."""

    winner: np.ndarray
    outcome: np.ndarray
    counts: np.ndarray
    valid: np.ndarray


def default_voters(table: LabelTable, included: Sequence[str]) -> list[str]:
    judges = [r for r in included if table.rater(r).kind == JUDGE]
    return judges or list(included)


def default_quorum(n_voters: int) -> int:
    return n_voters // 2 + 1


def vote(codes: np.ndarray, k: int, quorum: int) -> VoteArrays:
    """Majority vote over the columns of a cases x voters codes matrix."""
    if quorum < 1:
        raise TiapError(f"quorum must be at least 1 (got {quorum})")
    counts = counts_matrix(codes, k)
    valid = counts.sum(axis=1)
    top = counts.max(axis=1) if k else np.zeros(len(codes))
    n_top = (counts == top[:, None]).sum(axis=1)
    strict = 2 * top > valid
    outcome = np.where(
        valid < quorum, _NOQ, np.where(strict, _MAJ, np.where(n_top > 1, _TIE, _NOMAJ))
    )
    winner = np.where(outcome == _MAJ, counts.argmax(axis=1) if k else -1, -1)
    return VoteArrays(winner=winner, outcome=outcome, counts=counts, valid=valid)


def _share(x: int, n: int) -> float | None:
    return x / n if n else None


def distribution(
    votes: VoteArrays, categories: Sequence[str], mask: np.ndarray | None = None
) -> Distribution:
    """Counts and shares of majority labels over the cases in ``mask`` (all by default)."""
    sel = np.ones(len(votes.winner), dtype=bool) if mask is None else mask
    outcome = votes.outcome[sel]
    winner = votes.winner[sel]
    n = int(sel.sum())
    decided = int((outcome == _MAJ).sum())
    counts = {c: int((winner == i).sum()) for i, c in enumerate(categories)}
    return Distribution(
        n=n,
        decided=decided,
        counts=counts,
        shares={c: _share(v, decided) for c, v in counts.items()},
        shares_of_all={c: _share(v, n) for c, v in counts.items()},
        ties=int((outcome == _TIE).sum()),
        no_majority=int((outcome == _NOMAJ).sum()),
        no_quorum=int((outcome == _NOQ).sum()),
    )


class MajorityVote(BaseModel):
    """The majority outcome on one case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    label: str | None
    outcome: Outcome
    votes: dict[str, int]
    n_valid: int


def majority_votes(
    table: LabelTable,
    rubric: Rubric | None = None,
    *,
    voters: Sequence[str] | None = None,
    quorum: int | None = None,
    binary: bool = False,
) -> list[MajorityVote]:
    """The majority vote on every case of ``table`` (see the module's policy).

    ``binary`` votes on the rubric's binary collapse of each voter's label.
    """
    cats, bin_cats, bin_map = categories_for(table, rubric)
    if voters is not None:
        chosen = resolve_raters(table, voters, "voters")
    else:
        chosen = default_voters(table, default_included(table))
    codes = table.codes(cats, chosen)
    if binary:
        if not bin_cats:
            raise TiapError("binary majority needs a rubric with a binary collapse")
        codes, cats = collapse_codes(codes, bin_map), bin_cats
    q = quorum if quorum is not None else default_quorum(len(chosen))
    res = vote(codes, len(cats), q)
    return [
        MajorityVote(
            case_id=cid,
            label=cats[int(res.winner[i])] if res.winner[i] >= 0 else None,
            outcome=OUTCOMES[int(res.outcome[i])],
            votes={c: int(res.counts[i, j]) for j, c in enumerate(cats)},
            n_valid=int(res.valid[i]),
        )
        for i, cid in enumerate(table.case_ids)
    ]
