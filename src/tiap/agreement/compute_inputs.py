"""The parts of :func:`tiap.agreement.compute.compute_report` before and around its
figures: the settings checked where they enter, the labels in scope (the rubric's case
kind, one rubric version, without people under ``--no-humans``), the majority vote's
voters and quorum, the binary scale, the human reference, and the qrels figures."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement import formulas as st
from tiap.agreement.estimates import Estimate
from tiap.agreement.label_table import LabelTable
from tiap.agreement.qrels import qrels_figures
from tiap.agreement.qrels_models import QrelsFigures
from tiap.agreement.reference import Reference
from tiap.agreement.rubric_versions import VersionScope, one_rubric_version, version_notes
from tiap.agreement.scale import Scale
from tiap.agreement.scope import of_rubric_kind, resolve_raters
from tiap.agreement.votes import default_quorum, default_voters, vote
from tiap.cases.events import (
    GateOn,
    GateRaters,
    check_gate_on,
    check_gate_raters,
    check_kappa_threshold,
)
from tiap.cases.vocab import HUMAN
from tiap.limits import (
    check_cases,
    check_quorum,
    check_resamples,
    check_seed,
    check_share_threshold,
)
from tiap.rubric import Rubric


def named_raters(
    raters: Sequence[str] | None, voters: Sequence[str] | None, reference: str | None
) -> set[str]:
    """Every rater the caller named (as a rater, a voter or the reference)."""
    return set(raters or ()) | set(voters or ()) | set(filter(None, (reference or "").split("+")))


def without_humans(table: LabelTable) -> tuple[LabelTable, list[str]]:
    """``--no-humans``: the table without human raters, and a note naming them."""
    humans = table.raters_of_kind(HUMAN)
    if not humans:
        return table, []
    note = (
        f"--no-humans: the labels of human rater(s) {', '.join(humans)} are left out of "
        "every figure; the gate is on the judges alone"
    )
    return table.without(humans), [note]


def check_settings(
    *,
    min_fleiss: float,
    gate_on: GateOn,
    gate_raters: GateRaters,
    min_judge_kappa: float,
    min_cases: int,
    shares: dict[str, float],
    resamples: int,
    seed: int,
    quorum: int | None,
) -> None:
    """Every number and choice of :func:`compute_report` checked where it enters (a
    one-line :class:`TiapError` naming the setting)."""
    check_kappa_threshold("min_fleiss", min_fleiss)
    check_gate_on("gate_on", gate_on)
    check_gate_raters("gate_raters", gate_raters)
    check_kappa_threshold("min_judge_kappa", min_judge_kappa)
    check_cases("min_cases", min_cases)
    for name, share in shares.items():
        check_share_threshold(name, share)
    check_resamples("resamples", resamples)
    check_seed("seed", seed)
    if quorum is not None:
        check_quorum("quorum", quorum)


def in_scope(
    table: LabelTable,
    rubric: Rubric | None,
    raters: Sequence[str] | None,
    named: set[str],
    *,
    no_humans: bool,
) -> tuple[LabelTable, VersionScope, list[str]]:
    """The labels a report covers: cases of the rubric's kind, without human labels
    with ``no_humans``, of one rubric version; with the notes saying what was left out."""
    table, notes = of_rubric_kind(table, rubric)
    if no_humans:
        table, human_notes = without_humans(table)
        notes += human_notes
    table, version = one_rubric_version(table, rubric, raters=raters, named=named)
    return table, version, notes + version_notes(version)


def voting(
    table: LabelTable, voters: Sequence[str] | None, included: list[str], quorum: int | None
) -> tuple[list[str], int]:
    """The majority vote's voters (named, else :func:`default_voters`) and quorum
    (given and checked against them, else :func:`default_quorum`)."""
    chosen = (
        resolve_raters(table, voters, "voters")
        if voters is not None
        else default_voters(table, included)
    )
    if quorum is not None:
        return chosen, check_quorum("quorum", quorum, len(chosen))
    return chosen, default_quorum(len(chosen))


def binary_scale(
    labels: Scale,
    ref: Reference | None,
    idx: list[int],
    cats: list[str],
    mapping: list[int],
    vote_idx: list[int],
    quorum: int,
) -> Scale:
    """The rubric's binary collapse of the labels' scale: codes, reference and votes."""
    codes = st.collapse_codes(labels.codes_all, mapping)
    bref = (
        Reference(ref.policy, ref.raters, st.collapse_codes(ref.codes, mapping), ref.unresolved)
        if ref is not None
        else None
    )
    votes = vote(codes[:, vote_idx], len(cats), quorum)
    return Scale("binary", cats, labels.names, codes, idx, bref, votes)


def human_reference(table: LabelTable, ref: Reference | None) -> list[str]:
    """The people among the reference's raters (the paper's five-rater kappa adds them)."""
    if ref is None:
        return []
    names = set(table.rater_names)
    return [r for r in ref.raters if r in names and table.rater(r).kind == HUMAN]


def qrels_report(
    table: LabelTable,
    scales: list[Scale],
    est: dict[str, Estimate],
    *,
    min_confirmed: float,
    max_missed: float,
    min_decided: float,
) -> QrelsFigures | None:
    """The relevance-label figures on qrels pairs (a rubric with a binary collapse:
    positive at binary index 0); None on other cases."""
    if len(scales) < 2:
        return None
    b = scales[1]
    return qrels_figures(
        table, b.votes.winner, b.ref, 0, b.cats[0], est,
        min_confirmed=min_confirmed, max_missed=max_missed, min_decided=min_decided,
    )  # fmt: skip
