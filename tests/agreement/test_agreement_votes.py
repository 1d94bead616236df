"""Majority vote policy: strict majority of valid labels, ties, quorum."""

from __future__ import annotations

import numpy as np
import pytest
from agreement_support import add_labels

from tiap.agreement import labels_from_workspace, majority_votes
from tiap.agreement.votes import OUTCOMES, default_quorum, distribution, vote
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric

S, P, D = 0, 1, 2
X, M = -1, -2


def test_policy_by_hand() -> None:
    codes = np.array(
        [
            [S, S, S, P, D],  # 3 of 5: supports wins
            [S, S, P, P, D],  # 2-2-1: tie
            [S, S, P, D, X],  # 4 valid, 2-1-1: leader without a strict majority
            [S, X, X, M, P],  # 2 valid < quorum 3
            [S, S, X, M, P],  # 3 valid, 2 of 3 is a strict majority
            [X, X, X, X, X],  # nothing valid
            [D, D, P, P, X],  # 2-2: tie
        ]
    )
    res = vote(codes, 3, quorum=3)
    assert [OUTCOMES[o] for o in res.outcome] == [
        "majority",
        "tie",
        "no_majority",
        "no_quorum",
        "majority",
        "no_quorum",
        "tie",
    ]
    assert res.winner.tolist() == [S, -1, -1, -1, S, -1, -1]
    assert res.valid.tolist() == [5, 5, 4, 2, 3, 0, 4]
    # a quorum of 1 lets the two valid votes of case 4 tie instead
    assert OUTCOMES[vote(codes, 3, quorum=1).outcome[3]] == "tie"


def test_distribution_shares() -> None:
    codes = np.array([[S, S, P], [P, P, P], [S, P, D], [D, D, S]])
    d = distribution(vote(codes, 3, quorum=2), ["supports", "partial", "does_not_support"])
    # decided: S, P, D (case 3 is a 1-1-1 tie)
    assert d.counts == {"supports": 1, "partial": 1, "does_not_support": 1}
    assert d.shares == {"supports": 1 / 3, "partial": 1 / 3, "does_not_support": 1 / 3}
    assert d.shares_of_all["supports"] == 0.25
    assert (d.n, d.decided, d.ties, d.no_majority, d.no_quorum) == (4, 3, 1, 0, 0)


def test_quorum_must_be_positive() -> None:
    with pytest.raises(TiapError, match="quorum"):
        vote(np.zeros((1, 1), dtype=int), 2, quorum=0)
    assert default_quorum(5) == 3
    assert default_quorum(4) == 3
    assert default_quorum(1) == 1


def test_majority_votes_from_a_workspace(workspace: Workspace, rubric: Rubric) -> None:
    ids = workspace.case_ids()[:4]
    add_labels(workspace, "j1", ["supports", "partial", "supports", None], case_ids=ids)
    add_labels(
        workspace, "j2", ["supports", "does_not_support", "partial", "partial"], case_ids=ids
    )
    add_labels(workspace, "j3", ["partial", "partial", "does_not_support", "-"], case_ids=ids)
    # a human disagreeing everywhere does not vote by default
    add_labels(workspace, "alice", ["partial"] * 4, kind="human", case_ids=ids)
    table = labels_from_workspace(workspace, subset="validation")
    votes = {v.case_id: v for v in majority_votes(table, rubric)}
    assert votes[ids[0]].label == "supports"
    assert votes[ids[0]].votes == {"supports": 2, "partial": 1, "does_not_support": 0}
    assert votes[ids[1]].label == "partial"
    assert votes[ids[2]].outcome == "tie"
    assert votes[ids[3]].outcome == "no_quorum"  # one valid vote of three judges
    assert votes[ids[3]].n_valid == 1
    assert votes[workspace.case_ids()[5]].outcome == "no_quorum"  # unlabelled case
    # binary: supports/partial are relevant -> case 2 has 2 relevant of 3
    binary = {v.case_id: v for v in majority_votes(table, rubric, binary=True)}
    assert binary[ids[2]].label == "relevant"
    # with alice voting too, case 0 becomes 2 supports vs 2 partial: a tie
    everyone = {
        v.case_id: v
        for v in majority_votes(table, rubric, voters=["j1", "j2", "j3", "alice"], quorum=2)
    }
    assert everyone[ids[0]].outcome == "tie"
    assert everyone[ids[3]].label == "partial"  # j2 and alice
    with pytest.raises(TiapError, match="unknown rater 'bob'"):
        majority_votes(table, rubric, voters=["bob"])
