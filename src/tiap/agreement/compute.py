"""Compute an agreement report from a label table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from tiap.agreement import beyond, case_plan, constant, paper_counts, reference_baselines
from tiap.agreement import compute_inputs as inputs
from tiap.agreement import formulas as st
from tiap.agreement import library as lib
from tiap.agreement.answer_correctness import answer_correctness
from tiap.agreement.calibrated import calibrated_prevalence
from tiap.agreement.comparisons import MAJORITY_KEY, pairs, vs_reference
from tiap.agreement.estimates import CONFIDENCE, Estimate, evaluate
from tiap.agreement.figure_model import Figure, figure_of
from tiap.agreement.gate import (
    DEFAULT_MIN_CASES,
    DEFAULT_MIN_VALID,
    GateInputs,
    JudgeCounts,
    evaluate_gate,
)
from tiap.agreement.label_table import ABSENT, INVALID, LabelTable
from tiap.agreement.models import (
    AgreementReport,
    BootstrapInfo,
    Majority,
    SourceInfo,
    VsReference,
)
from tiap.agreement.qrels import (
    DEFAULT_MAX_MISSED,
    DEFAULT_MIN_CONFIRMED,
    DEFAULT_MIN_DECIDED,
    qrels_stats,
)
from tiap.agreement.reference import resolve_reference
from tiap.agreement.rubric_versions import VersionScope
from tiap.agreement.scale import Scale
from tiap.agreement.scope import categories_for, resolve_raters
from tiap.agreement.summaries import (
    other_rubric_raters,
    prevalence,
    rater_summaries,
    report_notes,
    rubric_info,
)
from tiap.agreement.votes import distribution, vote
from tiap.cases.events import (
    DEFAULT_GATE_ON,
    DEFAULT_GATE_RATERS,
    GateOn,
    GateRaters,
)
from tiap.cases.vocab import JUDGE
from tiap.errors import TiapError
from tiap.rubric import Rubric
from tiap.stats.bootstrap import Draws, Progress

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 1337
DEFAULT_MIN_FLEISS = 0.80
DEFAULT_MIN_JUDGE_KAPPA = 0.60
#: the one-line error when both ask for opposite things
NO_HUMANS_AND_REFERENCE = (
    "--reference names the human reference, and --no-humans leaves human labels out: "
    "use one of them"
)
NO_HUMANS_AND_REFERENCE_RATERS = (
    "--gate-raters judges+reference puts the human reference into the gate's Fleiss' "
    "kappa, and --no-humans leaves human labels out: use one of them"
)


_figure = figure_of


def check_humans(no_humans: bool, reference: str | None, gate_raters: GateRaters) -> None:
    """``--no-humans`` leaves human labels out: not with a reference named, nor with a
    gate over the judges and the human reference (one-line :class:`TiapError`)."""
    if no_humans and reference is not None:
        raise TiapError(NO_HUMANS_AND_REFERENCE)
    if no_humans and gate_raters == "judges+reference":
        raise TiapError(NO_HUMANS_AND_REFERENCE_RATERS)


def compute_report(
    table: LabelTable,
    rubric: Rubric | None = None,
    *,
    raters: Sequence[str] | None = None,
    reference: str | None = None,
    voters: Sequence[str] | None = None,
    quorum: int | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    min_fleiss: float = DEFAULT_MIN_FLEISS,
    min_judge_kappa: float = DEFAULT_MIN_JUDGE_KAPPA,
    min_cases: int = DEFAULT_MIN_CASES,
    min_valid: float = DEFAULT_MIN_VALID,
    min_confirmed: float = DEFAULT_MIN_CONFIRMED,
    max_missed: float = DEFAULT_MAX_MISSED,
    min_decided: float = DEFAULT_MIN_DECIDED,
    no_humans: bool = False,
    gate_on: GateOn = DEFAULT_GATE_ON,
    gate_raters: GateRaters = DEFAULT_GATE_RATERS,
    progress: Progress | None = None,
) -> AgreementReport:
    """Every agreement figure over ``raters`` (default: the judges; without
    judges, every rater but ``adjudicated``).

    ``reference``: see :mod:`tiap.agreement.reference`; ``voters`` and
    ``quorum``: see :mod:`tiap.agreement.votes`. Bootstrap intervals resample
    cases ``resamples`` times from ``seed`` (0 resamples: none), every figure from
    one pass over the same draws in chunks of bounded memory (``progress(done,
    resamples)`` after each chunk); shares (accuracy, the qrels shares) carry Wilson
    intervals whatever the resamples.

    A report covers cases of the rubric's kind (the others in scope are left out,
    with a note) and labels of one rubric version, the judges'
    (:mod:`tiap.agreement.rubric_versions`); ``no_humans`` leaves every human label out
    (the gate is then on the judges alone, and says so). The gate's thresholds:
    ``min_fleiss``, ``min_judge_kappa``, ``min_cases`` and ``min_valid``
    (:mod:`tiap.agreement.gate`), compared with the point estimates or, ``gate_on``
    ``lower``, the intervals' lower bounds; the gate's Fleiss' kappa is over the judges
    or, ``gate_raters`` ``judges+reference``, over the judges and the human reference
    (the paper's five-rater validation kappa). On ``qrels`` cases it adds the relevance-label
    figures and a verdict per dataset (:mod:`tiap.agreement.qrels`;
    ``min_confirmed``, ``max_missed`` and ``min_decided`` are its thresholds); on
    ``answer`` cases, the share of each run's answers judged correct
    (:mod:`tiap.agreement.answer_correctness`).
    """
    inputs.check_settings(
        min_fleiss=min_fleiss,
        gate_on=gate_on,
        gate_raters=gate_raters,
        min_judge_kappa=min_judge_kappa,
        min_cases=min_cases,
        shares={
            "min_valid": min_valid,
            "min_confirmed": min_confirmed,
            "max_missed": max_missed,
            "min_decided": min_decided,
        },
        resamples=resamples,
        seed=seed,
        quorum=quorum,
    )
    check_humans(no_humans, reference, gate_raters)
    named = inputs.named_raters(raters, voters, reference)
    table, version, scope_notes = inputs.in_scope(table, rubric, raters, named, no_humans=no_humans)
    cats, bin_cats, bin_map = categories_for(table, rubric)
    left_out = other_rubric_raters(table, rubric, cats, named)
    if left_out:
        table = table.without(left_out)
    included = resolve_raters(table, raters, "raters")
    names = table.rater_names
    idx = [names.index(r) for r in included]
    codes_all = table.codes(cats, names)
    ref, ref_reason = resolve_reference(table, codes_all, reference, len(cats))
    vote_raters, q = inputs.voting(table, voters, included, quorum)
    vote_idx = [names.index(r) for r in vote_raters]
    scales = [
        Scale(
            "labels", cats, names, codes_all, idx, ref, vote(codes_all[:, vote_idx], len(cats), q)
        )
    ]
    if bin_cats:
        scales.append(inputs.binary_scale(scales[0], ref, idx, bin_cats, bin_map, vote_idx, q))

    judges = [r for r in included if table.rater(r).kind == JUDGE]
    compared = [r for r in included if ref is None or r not in ref.raters]
    stats = _stats(scales, included, judges, compared, names)
    ordinal = rubric is not None and rubric.ordinal
    compared_codes = _compared_codes(scales, compared)
    stats.update(beyond.stats(scales, compared_codes, ordinal=ordinal))
    stats.update(reference_baselines.stats(scales, compared_codes, judges))
    if bin_cats:  # the qrels kappas, on the binary scale (see below)
        stats.update(qrels_stats(table, scales[1].votes.winner, scales[1].ref))
    human_ref = inputs.human_reference(table, ref)
    stats.update(paper_counts.stats(scales, judges, human_ref))
    draws = Draws(len(table.cases), resamples, seed) if resamples and table.cases else None
    est = evaluate(stats, draws, progress=progress)

    fleiss = {s.name: _figure(est[f"fleiss.{s.name}"]) for s in scales}
    vs_ref = vs_reference(scales, est, ref, ref_reason, compared)
    gate = evaluate_gate(
        _gate_inputs(
            table,
            rubric,
            scales[-1],
            judges,
            est,
            vs_ref,
            version,
            human_ref,
            min_fleiss=min_fleiss,
            min_judge_kappa=min_judge_kappa,
            min_cases=min_cases,
            min_valid=min_valid,
            no_humans=no_humans,
            gate_on=gate_on,
            gate_raters=gate_raters,
        )
    )
    qrels = inputs.qrels_report(
        table, scales, est, min_confirmed=min_confirmed, max_missed=max_missed,
        min_decided=min_decided,
    )  # fmt: skip
    return AgreementReport(
        source=SourceInfo(
            kind=table.source,
            path=table.path,
            subset=table.subset,
            subset_kind=table.subset_kind,
            bundle_version=_bundle_version(table),
        ),
        rubric=rubric_info(rubric),
        labels=cats,
        binary_labels=bin_cats,
        n_cases=len(table.cases),
        n_complete=fleiss["labels"].n,
        included_raters=included,
        raters=rater_summaries(table, scales, included, ref),
        fleiss_kappa=fleiss,
        krippendorff_alpha={s.name: _figure(est[f"alpha.{s.name}"]) for s in scales},
        cohen_kappa=pairs(scales, est, included),
        percent_agreement={s.name: _figure(est[f"pa.{s.name}"]) for s in scales},
        gwet_ac1=beyond.gwet_ac1(scales, est),
        base_rates={s.name: beyond.scale_base_rates(s) for s in scales},
        ordinal=(
            beyond.ordinal_figures(scales[0], est, included, _shown_names(compared))
            if ordinal
            else None
        ),
        judge_errors=reference_baselines.judge_errors(
            scales, est, compared_codes, judges, resamples=resamples, seed=seed
        ),
        majority=Majority(
            policy=(
                "a label wins with a strict majority of the voters' valid labels; invalid "
                "labels are abstentions; fewer valid labels than the quorum: no_quorum"
            ),
            voters=vote_raters,
            quorum=q,
            labels=distribution(scales[0].votes, cats),
            binary=distribution(scales[1].votes, bin_cats) if bin_cats else None,
        ),
        prevalence=prevalence(table, scales),
        vs_reference=vs_ref,
        gate=gate,
        bootstrap=BootstrapInfo(resamples=resamples, seed=seed, confidence=CONFIDENCE),
        plan=case_plan.plan_of(gate, est, vs_ref),
        notes=[*scope_notes, *report_notes(table, rubric, included, scales, ref, left_out)],
        qrels=qrels,
        answer_correctness=answer_correctness(table, scales),
        paper=paper_counts.counts(scales, est, judges, human_ref),
        calibrated=calibrated_prevalence(table, scales, ref, ref_reason, compared),
    )


def _reference_hash(table: LabelTable, vs_ref: VsReference) -> str | None:
    """The rubric hash of the reference's labels (one, after the version filter), or
    ``None`` without a reference or when its labels do not say."""
    if not vs_ref.available or vs_ref.reference is None:
        return None
    present = [r for r in vs_ref.reference.raters if r in set(table.rater_names)]
    hashes = {h for r in present for h in table.rater(r).rubric_hashes}
    return next(iter(hashes)) if len(hashes) == 1 else None


def _judge_counts(scale: Scale, judges: list[str]) -> dict[str, JudgeCounts]:
    out = {}
    for j in judges:
        col = scale.column(j)
        out[j] = JudgeCounts(
            valid=int((col >= 0).sum()),
            invalid=int((col == INVALID).sum()),
            missing=int((col == ABSENT).sum()),
        )
    return out


def _gate_inputs(
    table: LabelTable,
    rubric: Rubric | None,
    scale: Scale,
    judges: list[str],
    est: dict[str, Estimate],
    vs_ref: VsReference,
    version: VersionScope,
    human_ref: list[str],
    *,
    min_fleiss: float,
    min_judge_kappa: float,
    min_cases: int,
    min_valid: float,
    no_humans: bool,
    gate_on: GateOn,
    gate_raters: GateRaters,
) -> GateInputs:
    """What the verdict is reached from, on ``scale`` (the binary collapse when the
    rubric has one): Fleiss' kappa over the judges (and the human reference's raters
    ``human_ref``, with ``gate_raters`` ``judges+reference``), each judge's kappa against
    the human reference, each judge's valid labels, and the rubric versions."""
    judge_kappa = None
    if vs_ref.available:
        judge_kappa = {
            v.rater: (v.binary if v.binary is not None else v.labels).kappa
            for v in vs_ref.raters
            if v.rater in judges
        }
    constant_judges = {
        j: label for j in judges if (label := constant.constant_label(scale.column(j), scale.cats))
    }
    return GateInputs(
        table=table,
        rubric=rubric,
        judges=judges,
        constant=constant_judges,
        scale="binary" if scale.name == "binary" else "labels",
        fleiss=_gate_fleiss(est, scale.name, judges, gate_raters),
        fleiss_raters=paper_counts.reference_raters(judges, human_ref)
        if gate_raters == "judges+reference" and human_ref
        else list(judges),
        gate_raters=gate_raters,
        judge_kappa=judge_kappa,
        min_fleiss=min_fleiss,
        min_judge_kappa=min_judge_kappa,
        min_cases=min_cases,
        min_valid=min_valid,
        judge_counts=_judge_counts(scale, judges),
        version=version,
        reference_rubric_hash=_reference_hash(table, vs_ref),
        no_humans=no_humans,
        gate_on=gate_on,
    )


def _gate_fleiss(
    est: dict[str, Estimate], scale: str, judges: list[str], gate_raters: GateRaters
) -> Figure | None:
    """The gate's Fleiss' kappa: over the judges, or over the judges and the human
    reference (``None`` without judges, or without a human reference for it)."""
    over = "paper.fleiss_ref" if gate_raters == "judges+reference" else "gate.fleiss"
    key = f"{over}.{scale}"
    return _figure(est[key]) if judges and key in est else None


def _stats(
    scales: list[Scale],
    included: list[str],
    judges: list[str],
    compared: list[str],
    names: list[str],
) -> dict[str, st.Stat]:
    out: dict[str, st.Stat] = {}
    pairs = [(i, j) for i in range(len(included)) for j in range(i + 1, len(included))]
    judge_idx = [names.index(r) for r in judges]
    for s in scales:
        out[f"fleiss.{s.name}"] = _fleiss(s.codes, s.k)
        out[f"alpha.{s.name}"] = _alpha(s.codes, s.k)
        out[f"pa.{s.name}"] = st.mean_pairwise_agreement_stat(s.codes, s.k)
        for i, j in pairs:
            out[f"cohen.{s.name}.{i}.{j}"] = _cohen(s.codes[:, i], s.codes[:, j], s.k)
        if judges:
            out[f"gate.fleiss.{s.name}"] = _fleiss(s.codes_all[:, judge_idx], s.k)
        if s.ref is None:
            continue
        others = [(r, s.column(r)) for r in compared]
        others.append((MAJORITY_KEY, s.votes.winner))
        for r, codes in others:
            out[f"ref.kappa.{s.name}.{r}"] = _cohen(s.ref, codes, s.k)
            out[f"ref.acc.{s.name}.{r}"] = _accuracy(s.ref, codes, s.k)
    return out


# The bootstrap replicates come from tiap's formulas (``formulas``); the point
# estimates from the reference libraries (``library``).


def _fleiss(codes: np.ndarray, k: int) -> st.Stat:
    return replace(st.fleiss_stat(codes, k), point=partial(lib.fleiss_kappa, codes, k))


def _alpha(codes: np.ndarray, k: int) -> st.Stat:
    return replace(st.krippendorff_stat(codes, k), point=partial(lib.krippendorff_alpha, codes, k))


def _cohen(a: np.ndarray, b: np.ndarray, k: int) -> st.Stat:
    return replace(st.cohen_stat(a, b, k), point=partial(lib.cohen_kappa, a, b, k))


def _accuracy(a: np.ndarray, b: np.ndarray, k: int) -> st.Stat:
    return replace(st.agreement_stat(a, b, k), point=partial(lib.accuracy, a, b))


def _compared_codes(scales: list[Scale], compared: list[str]) -> list[tuple[str, list[np.ndarray]]]:
    """Each rater compared with the reference, and the majority: its codes per scale."""
    out = [(r, [s.column(r) for s in scales]) for r in compared]
    return [*out, (MAJORITY_KEY, [s.votes.winner for s in scales])]


def _shown_names(compared: list[str]) -> list[tuple[str, str]]:
    """The compared raters' keys and their names in the report (the majority's)."""
    return [(r, r) for r in compared] + [(MAJORITY_KEY, "majority")]


def _bundle_version(table: LabelTable) -> str | None:
    """The one bundle version of the cases in scope, if they are of one."""
    versions = table.bundle_versions()
    return versions[0] if len(versions) == 1 else None
