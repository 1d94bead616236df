"""Compute an agreement report from a label table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from tiap.agreement import constant
from tiap.agreement import library as lib
from tiap.agreement import stats as st
from tiap.agreement.bootstrap import CONFIDENCE, Estimate, bootstrap_weights, evaluate
from tiap.agreement.gate import GateInputs, evaluate_gate
from tiap.agreement.limits import check_kappa_threshold, check_quorum, check_resamples, check_seed
from tiap.agreement.models import (
    AgreementReport,
    BootstrapInfo,
    Comparison,
    Figure,
    Majority,
    PairBinary,
    PairKappa,
    Prevalence,
    PrevalenceGroup,
    RaterSummary,
    ReferenceInfo,
    RubricInfo,
    SourceInfo,
    VsRater,
    VsReference,
)
from tiap.agreement.qrels import (
    DEFAULT_MAX_MISSED,
    DEFAULT_MIN_CONFIRMED,
    check_share_threshold,
    qrels_figures,
)
from tiap.agreement.reference import Reference, resolve_reference
from tiap.agreement.scope import categories_for, of_rubric_kind, resolve_raters
from tiap.agreement.table import ABSENT, INVALID, LabelTable
from tiap.agreement.votes import VoteArrays, default_quorum, default_voters, distribution, vote
from tiap.cases.vocab import JUDGE
from tiap.rubric import Rubric

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 1337
DEFAULT_MIN_FLEISS = 0.80
DEFAULT_MIN_JUDGE_KAPPA = 0.60
NO_VALUE = "(none)"
MAJORITY_KEY = "\0majority"
_STRATA = ("dataset", "run", "category")


def _figure(e: Estimate) -> Figure:
    return Figure(value=e.value, ci=list(e.ci) if e.ci else None, n=e.n, reason=e.reason)


class _Scale:
    """Codes of the included raters, the reference and the majority on one scale
    (the rubric's labels, or its binary collapse)."""

    def __init__(
        self,
        name: str,
        cats: list[str],
        names: list[str],
        codes_all: np.ndarray,
        included_idx: list[int],
        ref: Reference | None,
        votes: VoteArrays,
    ) -> None:
        self.name, self.cats, self.k = name, cats, len(cats)
        self.names = names
        self.codes_all = codes_all
        self.codes = codes_all[:, included_idx]
        self.ref = ref.codes if ref is not None else None
        self.votes = votes

    def column(self, rater: str) -> np.ndarray:
        return self.codes_all[:, self.names.index(rater)]


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
    min_confirmed: float = DEFAULT_MIN_CONFIRMED,
    max_missed: float = DEFAULT_MAX_MISSED,
) -> AgreementReport:
    """Every agreement figure over ``raters`` (default: the judges; without
    judges, every rater but ``adjudicated``).

    ``reference``: see :mod:`tiap.agreement.reference`; ``voters`` and
    ``quorum``: see :mod:`tiap.agreement.votes`. Bootstrap intervals resample
    cases ``resamples`` times from ``seed`` (0 resamples: no intervals).

    A report covers cases of the rubric's kind (the others in scope are left out,
    with a note). On ``qrels`` cases it adds the relevance-label figures and a
    verdict per dataset (:mod:`tiap.agreement.qrels`; ``min_confirmed`` and
    ``max_missed`` are its thresholds).
    """
    check_kappa_threshold("min_fleiss", min_fleiss)
    check_kappa_threshold("min_judge_kappa", min_judge_kappa)
    check_share_threshold("min_confirmed", min_confirmed)
    check_share_threshold("max_missed", max_missed)
    table, kind_notes = of_rubric_kind(table, rubric)
    check_resamples("resamples", resamples)
    check_seed("seed", seed)
    if quorum is not None:
        check_quorum("quorum", quorum)
    cats, bin_cats, bin_map = categories_for(table, rubric)
    left_out = _other_rubric_raters(table, rubric, cats, raters, voters, reference)
    if left_out:
        table = table.without(left_out)
    included = resolve_raters(table, raters, "raters")
    names = table.rater_names
    idx = [names.index(r) for r in included]
    codes_all = table.codes(cats, names)
    ref, ref_reason = resolve_reference(table, codes_all, reference, len(cats))
    vote_raters = (
        resolve_raters(table, voters, "voters")
        if voters is not None
        else default_voters(table, included)
    )
    q = (
        check_quorum("quorum", quorum, len(vote_raters))
        if quorum is not None
        else default_quorum(len(vote_raters))
    )
    vote_idx = [names.index(r) for r in vote_raters]

    scales = [
        _Scale(
            "labels", cats, names, codes_all, idx, ref, vote(codes_all[:, vote_idx], len(cats), q)
        )
    ]
    if bin_cats:
        bcodes = st.collapse_codes(codes_all, bin_map)
        bref = (
            Reference(ref.policy, ref.raters, st.collapse_codes(ref.codes, bin_map), ref.unresolved)
            if ref is not None
            else None
        )
        bvotes = vote(bcodes[:, vote_idx], len(bin_cats), q)
        scales.append(_Scale("binary", bin_cats, names, bcodes, idx, bref, bvotes))

    judges = [r for r in included if table.rater(r).kind == JUDGE]
    compared = [r for r in included if ref is None or r not in ref.raters]
    stats = _stats(scales, included, judges, compared, names)
    weights = bootstrap_weights(len(table.cases), resamples, seed) if resamples else None
    est = evaluate(stats, weights)

    fleiss = {s.name: _figure(est[f"fleiss.{s.name}"]) for s in scales}
    vs_ref = _vs_reference(scales, est, ref, ref_reason, compared)
    gate = evaluate_gate(
        _gate_inputs(table, rubric, scales[-1], judges, est, vs_ref, min_fleiss, min_judge_kappa)
    )
    qrels = None
    if bin_cats:  # relevance-label figures on qrels pairs (positive: binary index 0)
        b, limits = scales[1], {"min_confirmed": min_confirmed, "max_missed": max_missed}
        qrels = qrels_figures(table, b.votes.winner, b.ref, 0, bin_cats[0], weights, **limits)
    return AgreementReport(
        source=SourceInfo(
            kind=table.source,
            path=table.path,
            subset=table.subset,
            subset_kind=table.subset_kind,
            bundle_version=_bundle_version(table),
        ),
        rubric=_rubric_info(rubric),
        labels=cats,
        binary_labels=bin_cats,
        n_cases=len(table.cases),
        n_complete=fleiss["labels"].n,
        included_raters=included,
        raters=_rater_summaries(table, scales, included, ref),
        fleiss_kappa=fleiss,
        krippendorff_alpha={s.name: _figure(est[f"alpha.{s.name}"]) for s in scales},
        cohen_kappa=_pairs(scales, est, included),
        percent_agreement={s.name: _figure(est[f"pa.{s.name}"]) for s in scales},
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
        prevalence=_prevalence(table, scales),
        vs_reference=vs_ref,
        gate=gate,
        bootstrap=BootstrapInfo(resamples=resamples, seed=seed, confidence=CONFIDENCE),
        notes=[*kind_notes, *_notes(table, rubric, included, scales, ref, left_out)],
        qrels=qrels,
    )


def _gate_inputs(
    table: LabelTable,
    rubric: Rubric | None,
    scale: _Scale,
    judges: list[str],
    est: dict[str, Estimate],
    vs_ref: VsReference,
    min_fleiss: float,
    min_judge_kappa: float,
) -> GateInputs:
    """What the verdict is reached from, on ``scale`` (the binary collapse when the
    rubric has one): Fleiss' kappa over the judges and each judge's kappa against the
    human reference."""
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
        fleiss=_figure(est[f"gate.fleiss.{scale.name}"]) if judges else None,
        judge_kappa=judge_kappa,
        min_fleiss=min_fleiss,
        min_judge_kappa=min_judge_kappa,
    )


def _stats(
    scales: list[_Scale],
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


# The bootstrap replicates come from the formulas in ``stats``; the point
# estimates from the reference libraries (``library``).


def _fleiss(codes: np.ndarray, k: int) -> st.Stat:
    return replace(st.fleiss_stat(codes, k), point=partial(lib.fleiss_kappa, codes, k))


def _alpha(codes: np.ndarray, k: int) -> st.Stat:
    return replace(st.krippendorff_stat(codes, k), point=partial(lib.krippendorff_alpha, codes, k))


def _cohen(a: np.ndarray, b: np.ndarray, k: int) -> st.Stat:
    return replace(st.cohen_stat(a, b, k), point=partial(lib.cohen_kappa, a, b, k))


def _accuracy(a: np.ndarray, b: np.ndarray, k: int) -> st.Stat:
    return replace(st.agreement_stat(a, b, k), point=partial(lib.accuracy, a, b))


def _pairs(scales: list[_Scale], est: dict[str, Estimate], included: list[str]) -> list[PairKappa]:
    out = []
    lab = scales[0]
    for i in range(len(included)):
        for j in range(i + 1, len(included)):
            e = est[f"cohen.labels.{i}.{j}"]
            conf = st.confusion_matrix(lab.codes[:, i], lab.codes[:, j], lab.k)
            binary = None
            if len(scales) > 1:
                b, eb = scales[1], est[f"cohen.binary.{i}.{j}"]
                bconf = st.confusion_matrix(b.codes[:, i], b.codes[:, j], b.k)
                binary = PairBinary(
                    kappa=eb.value,
                    ci=list(eb.ci) if eb.ci else None,
                    reason=eb.reason,
                    agreement=_trace_share(bconf),
                )
            out.append(
                PairKappa(
                    a=included[i],
                    b=included[j],
                    n=e.n,
                    kappa=e.value,
                    ci=list(e.ci) if e.ci else None,
                    reason=e.reason,
                    agreement=_trace_share(conf),
                    binary=binary,
                )
            )
    return out


def _trace_share(conf: np.ndarray) -> float | None:
    """Percent agreement of a pair (no library computes it: tiap's formula)."""
    n = conf.sum()
    return float(np.trace(conf) / n) if n else None


def _comparison(s: _Scale, est: dict[str, Estimate], rater: str, codes: np.ndarray) -> Comparison:
    ref = s.ref if s.ref is not None else np.full(len(codes), -1)
    kappa = _figure(est[f"ref.kappa.{s.name}.{rater}"])
    return Comparison(
        n=kappa.n,
        kappa=kappa,
        accuracy=_figure(est[f"ref.acc.{s.name}.{rater}"]),
        confusion=lib.confusion_matrix(ref, codes, s.k).tolist(),
    )


def _vs_rater(scales: list[_Scale], est: dict[str, Estimate], rater: str) -> VsRater:
    def codes(s: _Scale) -> np.ndarray:
        return s.votes.winner if rater == MAJORITY_KEY else s.column(rater)

    return VsRater(
        rater="majority" if rater == MAJORITY_KEY else rater,
        labels=_comparison(scales[0], est, rater, codes(scales[0])),
        binary=_comparison(scales[1], est, rater, codes(scales[1])) if len(scales) > 1 else None,
    )


def _vs_reference(
    scales: list[_Scale],
    est: dict[str, Estimate],
    ref: Reference | None,
    reason: str | None,
    compared: list[str],
) -> VsReference:
    if ref is None:
        return VsReference(available=False, reason=reason)
    info = ReferenceInfo(
        policy=ref.policy, raters=ref.raters, n_cases=ref.n_cases, unresolved=ref.unresolved
    )
    if ref.n_cases == 0:
        return VsReference(
            available=False,
            reason=f"the reference ({ref.policy}) has no valid label on any case in scope",
            reference=info,
        )
    return VsReference(
        available=True,
        reference=info,
        raters=[_vs_rater(scales, est, r) for r in compared],
        majority=_vs_rater(scales, est, MAJORITY_KEY),
    )


def _rubric_info(rubric: Rubric | None) -> RubricInfo | None:
    if rubric is None:
        return None
    return RubricInfo(
        id=rubric.id,
        version=rubric.version,
        hash=rubric.content_hash,
        labels=rubric.label_names,
        binary=dict(sorted(rubric.binary.items())),
        binary_positive=rubric.binary_positive,
    )


def _rater_summaries(
    table: LabelTable, scales: list[_Scale], included: list[str], ref: Reference | None
) -> list[RaterSummary]:
    out = []
    lab = scales[0]
    for info in table.raters:
        col = lab.column(info.name)
        valid = int((col >= 0).sum())
        counts = {c: int((col == i).sum()) for i, c in enumerate(lab.cats)}
        binary_counts = None
        constant_binary = None
        if len(scales) > 1:
            bcol = scales[1].column(info.name)
            binary_counts = {c: int((bcol == i).sum()) for i, c in enumerate(scales[1].cats)}
            constant_binary = constant.constant_label(bcol, scales[1].cats)
        label = constant.constant_label(col, lab.cats)
        out.append(
            RaterSummary(
                name=info.name,
                kind=info.kind,
                panels=info.panels,
                included=info.name in included,
                reference=ref is not None and info.name in ref.raters,
                n_valid=valid,
                n_invalid=int((col == INVALID).sum()),
                n_missing=int((col == ABSENT).sum()),
                counts=counts,
                shares={c: (v / valid if valid else None) for c, v in counts.items()},
                binary_counts=binary_counts,
                constant=label is not None,
                constant_label=label,
                constant_binary=constant_binary is not None,
            )
        )
    return out


def _prevalence(table: LabelTable, scales: list[_Scale]) -> Prevalence:
    groups: dict[str, dict[str, PrevalenceGroup]] = {}
    for field in _STRATA:
        values = np.array([getattr(c, field) or NO_VALUE for c in table.cases], dtype=object)
        groups[field] = {}
        for value in sorted(set(values.tolist())):
            mask = values == value
            groups[field][value] = PrevalenceGroup(
                labels=distribution(scales[0].votes, scales[0].cats, mask),
                binary=distribution(scales[1].votes, scales[1].cats, mask)
                if len(scales) > 1
                else None,
            )
    return Prevalence(
        by_dataset=groups["dataset"], by_run=groups["run"], by_category=groups["category"]
    )


def _other_rubric_raters(
    table: LabelTable,
    rubric: Rubric | None,
    cats: Sequence[str],
    raters: Sequence[str] | None,
    voters: Sequence[str] | None,
    reference: str | None,
) -> list[str]:
    """Raters nobody named whose labels were all made under another rubric and are not
    labels of this one: they cannot be compared, so the report leaves them out (a
    rater named in ``raters``, ``voters`` or ``reference`` is kept, and its foreign
    labels are an error)."""
    if rubric is None:
        return []
    named = set(raters or ()) | set(voters or ()) | set((reference or "").split("+"))
    out = []
    for name in table.uncodable(cats):
        hashes = table.rater(name).rubric_hashes
        if name not in named and hashes and rubric.content_hash not in hashes:
            out.append(name)
    return out


def _bundle_version(table: LabelTable) -> str | None:
    """The one bundle version of the cases in scope, if they are of one."""
    versions = table.bundle_versions()
    return versions[0] if len(versions) == 1 else None


def _notes(
    table: LabelTable,
    rubric: Rubric | None,
    included: list[str],
    scales: list[_Scale],
    ref: Reference | None,
    left_out: list[str],
) -> list[str]:
    notes = []
    versions = table.bundle_versions()
    if len(versions) > 1:
        shown = ", ".join(v[:12] if v else "not recorded" for v in versions)
        notes.append(f"the cases in scope are of {len(versions)} bundle versions: {shown}")
    if left_out and rubric is not None:
        notes.append(
            f"left out rater(s) {', '.join(left_out)}: their labels are not labels of rubric "
            f"{rubric.id} (made under another rubric)"
        )
    lab = scales[0]
    for r in included:
        if not (lab.column(r) >= 0).any():
            notes.append(f"rater {r} has no valid label on the cases in scope")
    notes += _constant_notes(table, scales)
    if rubric is not None:
        for info in table.raters:
            other = [h for h in info.rubric_hashes if h != rubric.content_hash]
            if other:
                notes.append(
                    f"rater {info.name} has labels made under rubric hash "
                    f"{', '.join(h[:12] for h in other)}, not this report's rubric "
                    f"{rubric.id} ({rubric.content_hash[:12]})"
                )
    complete = int((lab.codes >= 0).all(axis=1).sum())
    if complete < len(table.cases):
        notes.append(
            f"Fleiss' kappa uses the {complete} of {len(table.cases)} cases that every "
            "included rater labelled validly; Krippendorff's alpha and the pairwise "
            "figures use every valid label"
        )
    if ref is not None and ref.unresolved:
        notes.append(
            f"{ref.unresolved} case(s) have disagreeing human labels and no adjudicated "
            "label: they are left out of the comparison with the reference"
        )
    return notes


def _constant_notes(table: LabelTable, scales: list[_Scale]) -> list[str]:
    """A note per constant rater (:mod:`tiap.agreement.constant`), on its labels or,
    when only those vary, on the binary collapse."""
    notes = []
    for info in table.raters:
        col = scales[0].column(info.name)
        label = constant.constant_label(col, scales[0].cats)
        if label is not None:
            notes.append(constant.rater_note(info.name, int((col >= 0).sum()), label))
        elif len(scales) > 1:
            bcol = scales[1].column(info.name)
            blabel = constant.constant_label(bcol, scales[1].cats)
            if blabel is not None:
                n = int((bcol >= 0).sum())
                notes.append(constant.rater_note(info.name, n, blabel, binary=True))
    return notes
