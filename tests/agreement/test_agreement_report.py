"""compute_report on real workspaces: every figure cross-checked against
statsmodels, krippendorff and scikit-learn, or plain Python."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import krippendorff
import numpy as np
import pytest
from agreement_support import add_labels, make_case
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from support.markdown_render import md_tags
from tiap.agreement import compute_report, labels_from_file, labels_from_workspace, write_report
from tiap.agreement import formulas as st
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric

LABELS = ["supports", "partial", "does_not_support"]
BINARY = {"supports": "relevant", "partial": "relevant", "does_not_support": "not_relevant"}
JUDGES = ["j-a", "j-b", "j-c", "j-d", "j-e"]

TOP_KEYS = {
    "source",
    "rubric",
    "labels",
    "binary_labels",
    "n_cases",
    "n_complete",
    "included_raters",
    "raters",
    "fleiss_kappa",
    "krippendorff_alpha",
    "cohen_kappa",
    "percent_agreement",
    "gwet_ac1",
    "base_rates",
    "ordinal",
    "judge_errors",
    "plan",
    "majority",
    "prevalence",
    "vs_reference",
    "gate",
    "bootstrap",
    "notes",
    "paper",
    "calibrated",
    "diagnostics",
}


def random_workspace(path: Path, n: int = 40, seed: int = 5) -> tuple[Workspace, dict]:
    """Five judges and a human around a latent label; some invalid judge outputs,
    some unlabelled cases, and one retracted human label. Returns the labels as
    inserted: {rater: {case_id: label or None}} (absent: no label)."""
    rng = np.random.default_rng(seed)
    ws = Workspace(path)
    ws.add_cases(
        make_case(i, dataset=("locomo", "longmemeval")[i % 2], run=f"r{i % 3}", category=str(i % 2))
        for i in range(n)
    )
    ids = ws.case_ids()
    ws.save_subset("validation", ids, params={"kind": "validation"})
    truth = rng.choice(3, size=n, p=[0.3, 0.4, 0.3])
    expected: dict[str, dict[str, str | None]] = {}
    for rater in [*JUDGES, "alice"]:
        given = np.where(rng.random(n) < 0.75, truth, rng.integers(0, 3, n))
        row: list[str | None] = []
        for i in range(n):
            u = rng.random()
            row.append("-" if u < 0.04 else None if u < 0.08 else LABELS[given[i]])
        kind = "human" if rater == "alice" else "judge"
        add_labels(ws, rater, row, kind=kind)
        expected[rater] = {cid: lab for cid, lab in zip(ids, row, strict=True) if lab != "-"}
    # alice changes her mind on case 0, then retracts her label on case 1
    ws.add_label(LabelRecord(case_id=ids[0], rater="alice", rater_kind="human", label="partial"))
    expected["alice"][ids[0]] = "partial"
    ws.retract_label(ids[1], "alice")
    expected["alice"].pop(ids[1], None)
    return ws, expected


def codes_of(expected: dict, raters: list[str], ids: list[str], cats: list[str]) -> np.ndarray:
    return np.array(
        [[cats.index(expected[r][c]) if expected[r].get(c) else -1 for r in raters] for c in ids]
    )


def _fleiss_lib(codes: np.ndarray, k: int) -> float:
    complete = codes[(codes >= 0).all(axis=1)]
    return sm_fleiss(np.stack([(complete == c).sum(axis=1) for c in range(k)], axis=1))


def _alpha_lib(codes: np.ndarray, k: int) -> float:
    rel = np.where(codes >= 0, codes, np.nan).T.astype(float)
    return krippendorff.alpha(
        reliability_data=rel, level_of_measurement="nominal", value_domain=list(range(k))
    )


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Workspace, dict]:
    ws, expected = random_workspace(tmp_path / "w.sqlite")
    yield ws, expected
    ws.close()


def test_figures_match_the_libraries(filled: tuple[Workspace, dict], rubric: Rubric) -> None:
    ws, exp = filled
    ids = ws.case_ids(subset="validation")
    table = labels_from_workspace(ws, subset="validation")
    assert compute_report(table, rubric, resamples=0).included_raters == JUDGES  # the default
    raters = [*JUDGES, "alice"]
    rep = compute_report(table, rubric, raters=raters, resamples=0)
    assert rep.included_raters == raters
    assert rep.n_cases == len(ids)
    bins = ["relevant", "not_relevant"]
    lab = codes_of(exp, raters, ids, LABELS)
    binary_exp = {r: {c: BINARY[v] if v else None for c, v in d.items()} for r, d in exp.items()}
    bn = codes_of(binary_exp, raters, ids, bins)
    assert rep.n_complete == int((lab >= 0).all(axis=1).sum())
    assert rep.fleiss_kappa["labels"].n == rep.n_complete
    assert rep.fleiss_kappa["labels"].value == pytest.approx(_fleiss_lib(lab, 3), abs=1e-9)
    assert rep.fleiss_kappa["binary"].value == pytest.approx(_fleiss_lib(bn, 2), abs=1e-9)
    assert rep.krippendorff_alpha["labels"].value == pytest.approx(_alpha_lib(lab, 3), abs=1e-9)
    assert rep.krippendorff_alpha["binary"].value == pytest.approx(_alpha_lib(bn, 2), abs=1e-9)
    # the report's values come from those libraries: tiap's own formulas (the
    # bootstrap path) are the independent check
    for scale, codes, k in (("labels", lab, 3), ("binary", bn, 2)):
        assert rep.fleiss_kappa[scale].value == pytest.approx(st.fleiss_kappa(codes, k), abs=1e-9)
        assert rep.krippendorff_alpha[scale].value == pytest.approx(
            st.krippendorff_alpha(codes, k), abs=1e-9
        )

    pairs = list(itertools.combinations(range(len(raters)), 2))
    assert [(p.a, p.b) for p in rep.cohen_kappa] == [(raters[i], raters[j]) for i, j in pairs]
    agreements = []
    for p, (i, j) in zip(rep.cohen_kappa, pairs, strict=True):
        both = (lab[:, i] >= 0) & (lab[:, j] >= 0)
        assert p.n == int(both.sum())
        assert p.kappa == pytest.approx(
            cohen_kappa_score(lab[both, i], lab[both, j], labels=[0, 1, 2]), abs=1e-9
        )
        assert p.binary is not None
        assert p.binary.kappa == pytest.approx(
            cohen_kappa_score(bn[both, i], bn[both, j], labels=[0, 1]), abs=1e-9
        )
        assert p.kappa == pytest.approx(st.cohen_kappa(lab[:, i], lab[:, j], 3), abs=1e-9)
        assert p.binary.kappa == pytest.approx(st.cohen_kappa(bn[:, i], bn[:, j], 2), abs=1e-9)
        agree = sum(
            exp[raters[i]][c] == exp[raters[j]][c]
            for c in ids
            if exp[raters[i]].get(c) and exp[raters[j]].get(c)
        )
        assert p.agreement == pytest.approx(agree / p.n)
        agreements.append(agree / p.n)
    assert rep.percent_agreement["labels"].value == pytest.approx(sum(agreements) / len(agreements))

    # against alice (the only human: the default reference)
    ref = rep.vs_reference
    assert ref.available
    assert ref.reference is not None
    assert ref.reference.raters == ["alice"]
    assert [v.rater for v in ref.raters] == JUDGES
    a = lab[:, -1]
    for v, j in zip(ref.raters, range(5), strict=True):
        both = (a >= 0) & (lab[:, j] >= 0)
        assert v.labels.n == int(both.sum())
        assert v.labels.kappa.value == pytest.approx(
            cohen_kappa_score(a[both], lab[both, j], labels=[0, 1, 2]), abs=1e-9
        )
        assert v.labels.accuracy.value == pytest.approx(accuracy_score(a[both], lab[both, j]))
        assert v.labels.kappa.value == pytest.approx(st.cohen_kappa(a, lab[:, j], 3), abs=1e-9)
        assert v.labels.accuracy.value == pytest.approx(
            float(np.mean(a[both] == lab[both, j])), abs=1e-12
        )
        assert v.labels.confusion == st.confusion_matrix(a, lab[:, j], 3).astype(int).tolist()
        assert (
            v.labels.confusion == confusion_matrix(a[both], lab[both, j], labels=[0, 1, 2]).tolist()
        )
        assert v.binary is not None
        assert v.binary.kappa.value == pytest.approx(
            cohen_kappa_score(bn[both, -1], bn[both, j], labels=[0, 1]), abs=1e-9
        )

    # majority of the five judges, recomputed with a Counter
    winners: dict[str, str | None] = {}
    for c in ids:
        votes = [exp[r][c] for r in JUDGES if exp[r].get(c)]
        top = Counter(votes).most_common()
        winners[c] = top[0][0] if len(votes) >= 3 and top[0][1] * 2 > len(votes) else None
    decided = [w for w in winners.values() if w]
    assert rep.majority.voters == JUDGES
    assert rep.majority.quorum == 3
    assert rep.majority.labels.decided == len(decided)
    assert rep.majority.labels.counts == {x: decided.count(x) for x in LABELS}
    assert rep.supported_share == pytest.approx(decided.count("supports") / len(decided))
    assert rep.vs_reference.majority is not None
    m_both = [c for c in ids if winners[c] and exp["alice"].get(c)]
    assert rep.vs_reference.majority.labels.n == len(m_both)
    assert rep.vs_reference.majority.labels.accuracy.value == pytest.approx(
        sum(winners[c] == exp["alice"][c] for c in m_both) / len(m_both)
    )

    # prevalence per dataset adds up to the overall majority
    by = rep.prevalence.by_dataset
    assert sorted(by) == ["locomo", "longmemeval"]
    for x in LABELS:
        assert sum(g.labels.counts[x] for g in by.values()) == rep.majority.labels.counts[x]
    for ds, g in by.items():
        ds_ids = [c for c in ids if ("locomo", "longmemeval")[int(c.split("-")[1]) % 2] == ds]
        ds_dec = [winners[c] for c in ds_ids if winners[c]]
        assert rep.supported_share_by("dataset")[ds] == pytest.approx(
            ds_dec.count("supports") / len(ds_dec)
        )
        assert g.labels.n == len(ds_ids)

    frame = rep.prevalence_frame("dataset")
    assert list(frame["dataset"]) == ["locomo", "longmemeval"]
    assert frame["supports"].sum() == rep.majority.labels.counts["supports"]
    assert list(frame["supports_share"]) == [rep.supported_share_by("dataset")[d] for d in by]

    # per-rater distributions: retracted and absent labels are missing
    alice = next(x for x in rep.raters if x.name == "alice")
    assert alice.n_valid == sum(1 for v in exp["alice"].values() if v)
    assert alice.n_invalid == sum(1 for v in exp["alice"].values() if v is None)
    assert alice.n_missing == len(ids) - len(exp["alice"])
    assert alice.counts == {x: sum(v == x for v in exp["alice"].values()) for x in LABELS}
    assert alice.reference
    assert alice.included


def test_json_keys_and_bootstrap_intervals(
    filled: tuple[Workspace, dict], rubric: Rubric, tmp_path: Path
) -> None:
    ws, _ = filled
    rep = compute_report(labels_from_workspace(ws, subset="validation"), rubric)
    write_report(rep, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(data) == TOP_KEYS
    assert set(data["fleiss_kappa"]) == {"labels", "binary"}
    fk = data["fleiss_kappa"]["binary"]
    assert set(fk) == {"value", "ci", "n", "reason", "ci_method", "ci_unreliable"}
    assert fk["ci_method"] == "percentile"
    assert fk["ci"][0] <= fk["value"] <= fk["ci"][1]
    assert data["bootstrap"] == {
        "resamples": 1000,
        "seed": 1337,
        "confidence": 0.95,
        "unit": "case",
    }
    for pair in data["cohen_kappa"]:
        assert {"a", "b", "n", "kappa"} <= set(pair)
        assert pair["ci"][0] <= pair["kappa"] <= pair["ci"][1]
    assert set(data["majority"]["labels"]) >= {"counts", "shares", "ties", "no_quorum"}
    assert set(data["prevalence"]) == {"by_dataset", "by_run", "by_category"}
    assert data["gate"]["status"] in {"PASS", "FAIL"}


def test_same_inputs_same_bytes(
    filled: tuple[Workspace, dict], rubric: Rubric, tmp_path: Path
) -> None:
    ws, _ = filled
    table = labels_from_workspace(ws, subset="validation")
    write_report(compute_report(table, rubric), tmp_path / "one")
    write_report(
        compute_report(labels_from_workspace(ws, subset="validation"), rubric), tmp_path / "two"
    )
    write_report(compute_report(table, rubric, seed=7), tmp_path / "seed7")
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert (tmp_path / "one" / "report.json").read_bytes() != (
        tmp_path / "seed7" / "report.json"
    ).read_bytes()


def test_no_rubric_no_binary_and_undefined_is_null(tmp_path: Path) -> None:
    # every label is "yes": chance agreement is 1, kappa and alpha undefined
    p = tmp_path / "labels.csv"
    p.write_text("case_id,rater,label\nc1,a,yes\nc1,b,yes\nc2,a,yes\nc2,b,yes\n", encoding="utf-8")
    rep = compute_report(labels_from_file(p))
    assert rep.binary_labels == []
    assert set(rep.fleiss_kappa) == {"labels"}
    assert rep.fleiss_kappa["labels"].value is None
    assert "same category" in (rep.fleiss_kappa["labels"].reason or "")
    assert rep.krippendorff_alpha["labels"].value is None
    assert rep.cohen_kappa[0].kappa is None
    assert rep.cohen_kappa[0].reason is not None
    assert rep.cohen_kappa[0].binary is None
    assert rep.percent_agreement["labels"].value == 1.0
    write_report(rep, tmp_path / "out")
    text = (tmp_path / "out" / "report.json").read_text()
    assert "NaN" not in text
    assert json.loads(text)["fleiss_kappa"]["labels"]["value"] is None
    assert "binary" not in json.loads(text)["fleiss_kappa"]


def test_reference_policies(workspace: Workspace, rubric: Rubric) -> None:
    ids = workspace.case_ids()[:6]
    s, p, d = LABELS
    add_labels(workspace, "judge", [s, s, p, d, p, s], case_ids=ids)
    add_labels(workspace, "alice", [s, p, p, d, "-", None], kind="human", case_ids=ids)
    add_labels(workspace, "bob", [s, s, d, d, p, "-"], kind="human", case_ids=ids)
    add_labels(workspace, "adjudicated", ["-", "-", p, "-", "-", s], kind="human", case_ids=ids)
    t = labels_from_workspace(workspace, subset="validation")

    # human consensus, adjudicated overriding: case 0 s (agree), 1 unresolved (s/p),
    # 2 p (adjudicated), 3 d, 4 p (bob alone), 5 s (adjudicated)
    rep = compute_report(t, rubric, resamples=0)
    ref = rep.vs_reference
    assert ref.reference is not None
    assert ref.reference.raters == ["alice", "bob", "adjudicated"]
    assert ref.reference.n_cases == 5
    assert ref.reference.unresolved == 1
    assert "adjudicated" not in rep.included_raters
    assert [v.rater for v in ref.raters] == ["judge"]
    judge = ref.raters[0].labels
    # reference s p d p s against judge s p d p s: all five agree
    assert judge.n == 5
    assert judge.accuracy.value == 1.0
    assert judge.confusion == [[2, 0, 0], [0, 2, 0], [0, 0, 1]]

    # one named rater, compared with everyone else included
    rep_b = compute_report(t, rubric, reference="bob", resamples=0)
    assert rep_b.vs_reference.reference is not None
    assert rep_b.vs_reference.reference.n_cases == 5
    assert [v.rater for v in rep_b.vs_reference.raters] == ["judge"]
    with_alice = compute_report(t, rubric, reference="bob", raters=["judge", "alice"], resamples=0)
    assert [v.rater for v in with_alice.vs_reference.raters] == ["judge", "alice"]
    # judge vs bob on cases 0-4: s s p d p vs s s d d p -> 4 of 5
    assert rep_b.vs_reference.raters[0].labels.accuracy.value == pytest.approx(0.8)

    # alice overridden by adjudicated: cases 0 s, 1 p, 2 p, 3 d, 5 s
    rep_c = compute_report(t, rubric, reference="alice+adjudicated", resamples=0)
    vs_judge = rep_c.vs_reference.raters[0]
    assert vs_judge.rater == "judge"
    assert vs_judge.labels.n == 5
    assert vs_judge.labels.accuracy.value == pytest.approx(4 / 5)  # case 1: p vs s

    with pytest.raises(TiapError, match="unknown rater 'carol'"):
        compute_report(t, rubric, reference="carol")
    with pytest.raises(TiapError, match="NAME\\+adjudicated"):
        compute_report(t, rubric, reference="alice+bob")


def test_no_human_no_reference(workspace: Workspace, rubric: Rubric) -> None:
    add_labels(workspace, "j1", ["supports"] * 12)
    add_labels(workspace, "j2", ["partial"] * 12)
    rep = compute_report(labels_from_workspace(workspace), rubric, resamples=10)
    assert not rep.vs_reference.available
    assert "no human labels" in (rep.vs_reference.reason or "")
    assert rep.vs_reference.raters == []
    # j1 always supports, j2 always partial: p_o = 0 and p_e = 0, so kappa is 0 (defined)
    assert rep.cohen_kappa[0].kappa == 0.0
    assert cohen_kappa_score(["supports"] * 12, ["partial"] * 12) == 0.0
    # but each alone is constant, and together they never agree: alpha = 1 - D_o/D_e
    # with n_S = n_P = 12: D = 12 * (4 - 2)/1 = 24, alpha = 1 - 23 * 24 / (576 - 288) = -0.916...
    assert rep.krippendorff_alpha["labels"].value == pytest.approx(1 - 23 * 24 / 288)


def test_raters_option_and_errors(filled: tuple[Workspace, dict], rubric: Rubric) -> None:
    ws, _ = filled
    t = labels_from_workspace(ws, subset="validation")
    rep = compute_report(t, rubric, raters=["j-c", "j-a"], resamples=0)
    assert rep.included_raters == ["j-a", "j-c"]
    assert len(rep.cohen_kappa) == 1
    assert [x.name for x in rep.raters if x.included] == ["j-a", "j-c"]
    assert rep.majority.voters == ["j-a", "j-c"]
    assert rep.majority.quorum == 2
    with pytest.raises(TiapError, match="unknown rater 'zed'"):
        compute_report(t, rubric, raters=["zed"])
    with pytest.raises(TiapError, match="resamples"):
        compute_report(t, rubric, resamples=-1)
    only = labels_from_workspace(ws, subset="validation", raters=["alice"])
    assert only.rater_names == ["alice"]
    with pytest.raises(TiapError, match="no labels by rater"):
        labels_from_workspace(ws, raters=["nobody"])


def test_labels_outside_rubric_from_workspace(workspace: Workspace, rubric: Rubric) -> None:
    add_labels(workspace, "bob", ["weird"] + ["supports"] * 11, kind="human")
    t = labels_from_workspace(workspace)
    with pytest.raises(TiapError, match="label 'weird' is not one of"):
        compute_report(t, rubric)
    rep = compute_report(t, None, resamples=0)  # without a rubric it is just a label
    assert rep.labels == ["supports", "weird"]


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    p = tmp_path / "labels.jsonl"
    rows = [
        {"case_id": f"c{i}", "rater": r, "label": lab, "dataset": "<img src=x onerror=1>"}
        for i in range(6)
        for r, lab in ((evil, "<b>yes</b>" if i % 2 else "no"), ("plain", "no"), ("h", "no"))
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    rep = compute_report(labels_from_file(p), resamples=20)
    write_report(rep, tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>yes" not in html
    assert "&lt;b&gt;yes&lt;/b&gt;" in html
    assert "<img" not in html
    assert not {"script", "img", "b"} & md_tags(md)
    # one file: no scripts, no external resources, inline SVG figures
    tags = _Tags()
    tags.feed(html)
    assert tags.names.isdisjoint({"script", "link", "img", "iframe", "object", "embed"})
    assert not tags.urls
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL)
    assert len(svgs) >= 2
    for fragment in svgs:  # each figure is well-formed XML
        assert ElementTree.fromstring(fragment).tag == "{http://www.w3.org/2000/svg}svg"
    assert "svg" in tags.names
    assert "@import" not in html
    assert "url(" not in html


class _Tags(HTMLParser):
    """Tag names and any attribute that could load something."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        for name, value in attrs:
            if name in {"src", "href", "xlink:href", "action", "data"} or name.startswith("on"):
                self.urls.append(f"{tag} {name}={value}")


@pytest.mark.parametrize("resamples", [0, 50])
def test_intervals_only_with_resamples(
    filled: tuple[Workspace, dict], rubric: Rubric, resamples: int
) -> None:
    ws, _ = filled
    rep = compute_report(labels_from_workspace(ws), rubric, resamples=resamples)
    has_ci = rep.krippendorff_alpha["labels"].ci is not None
    assert has_ci == bool(resamples)
    assert rep.bootstrap.resamples == resamples
    assert not math.isnan(rep.krippendorff_alpha["labels"].value or 0.0)


def test_raters_of_another_rubric_are_left_out_unless_named(
    workspace: Workspace, rubric: Rubric
) -> None:
    from tiap.rubric import load_rubric

    qrels = load_rubric("qrels-relevance")
    add_labels(workspace, "j1", ["supports"] * 6 + ["partial"] * 6)
    add_labels(workspace, "j2", ["supports"] * 6 + ["does_not_support"] * 6)
    add_labels(workspace, "q1", ["relevant"] * 12, rubric=qrels)  # another rubric
    table = labels_from_workspace(workspace, subset="validation")
    rep = compute_report(table, rubric, raters=["j1", "j2"], resamples=0)
    assert rep.included_raters == ["j1", "j2"]
    assert [r.name for r in rep.raters] == ["j1", "j2"]
    assert any("left out rater(s) q1" in n for n in rep.notes)
    # j1 and j2 agree on the first six cases only: p_o = 1/2 (labels)
    assert rep.percent_agreement["labels"].value == pytest.approx(0.5)
    assert [r.name for r in table.raters] == ["j1", "j2", "q1"]  # the caller's table unchanged
    # naming the rater is an error: its labels are not of the judges' rubric version
    with pytest.raises(TiapError) as err:
        compute_report(table, rubric, raters=["j1", "q1"], resamples=0)
    assert str(err.value) == (
        f"rater 'q1' has no label under the judges' rubric contested-credit "
        f"({rubric.content_hash[:12]}): its 12 label(s) were made under rubric qrels-relevance "
        f"({qrels.content_hash[:12]})"
    )
    # the other rubric's report, over its own rater
    other = compute_report(table, qrels, raters=["q1"], resamples=0)
    assert other.included_raters == ["q1"]
    assert any("left out rater(s) j1, j2" in n for n in other.notes)


def test_reference_plus_adjudicated_without_adjudicated_labels(
    workspace: Workspace, rubric: Rubric
) -> None:
    add_labels(workspace, "judge", ["supports"] * 12)
    add_labels(workspace, "alice", ["supports"] * 6 + ["partial"] * 6, kind="human")
    table = labels_from_workspace(workspace, subset="validation")
    rep = compute_report(table, rubric, reference="alice+adjudicated", resamples=0)
    assert rep.vs_reference.reference is not None
    assert rep.vs_reference.reference.raters == ["alice"]
    assert "no adjudicated labels" in rep.vs_reference.reference.policy
    assert rep.vs_reference.raters[0].labels.accuracy.value == pytest.approx(0.5)
