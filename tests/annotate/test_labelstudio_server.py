"""The Label Studio round-trip against a real server (started by ``.ci/labelstudio``).

Environment: ``TIAP_TEST_LABEL_STUDIO_URL`` and ``TIAP_TEST_LABEL_STUDIO_TOKEN`` (the
admin's legacy token), or ``TIAP_TEST_LABEL_STUDIO_ENV`` (see
:mod:`support.label_studio`). A second annotator signs up in the tests through the
organisation's invite link and makes a personal access token, so both token kinds and
two annotators are exercised.
"""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from annotate_support import count_label_rows, judge_label, make_case, make_workspace

from support.label_studio import label_studio
from tiap.annotate.labelstudio import connect, label_config, pull, push
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError

pytestmark = pytest.mark.labelstudio

#: the server's URL and the admin's legacy token, set by :func:`_server` before any test
#: of this module runs (CI may still be starting the server while the suite runs)
URL = ""
ADMIN_TOKEN = ""


@pytest.fixture(autouse=True, scope="module")
def _server() -> None:
    global URL, ADMIN_TOKEN
    server = label_studio()
    URL, ADMIN_TOKEN = server.url, server.token


@dataclass(frozen=True)
class Annotator:
    email: str
    user_id: int
    legacy_token: str
    personal_token: str


@pytest.fixture(scope="module")
def reviewer() -> Annotator:
    """A second user: signs up with the organisation's invite link, then takes its
    legacy token and creates a personal access token (JWT refresh token)."""
    admin = {"Authorization": f"Token {ADMIN_TOKEN}"}
    invite = httpx.get(f"{URL}/api/invite", headers=admin, timeout=30).json()["invite_url"]
    email = f"reviewer-{uuid.uuid4().hex[:8]}@example.com"
    with httpx.Client(base_url=URL, timeout=30) as web:
        web.get(invite)  # sets the CSRF cookie
        signup = web.post(
            invite,
            data={
                "email": email,
                "password": secrets.token_urlsafe(16),
                "csrfmiddlewaretoken": web.cookies["csrftoken"],
            },
            headers={"Referer": f"{URL}{invite}"},
        )
        assert signup.status_code == 302, signup.text[:500]
        me = web.get("/api/current-user/whoami").json()
        assert me["email"] == email
        legacy = web.get("/api/current-user/token").json()["token"]
        pat = web.post(
            "/api/token/",
            headers={"X-CSRFToken": web.cookies["csrftoken"], "Referer": f"{URL}/"},
        )
        assert pat.status_code == 201, pat.text[:500]
    return Annotator(email, me["id"], legacy, pat.json()["token"])


@pytest.fixture
def title() -> str:
    return f"tiap test {uuid.uuid4().hex[:10]}"


def _tasks(conn, project_id: int) -> dict[str, int]:
    return {t.data["case_id"]: t.id for t in conn.client.tasks.list(project=project_id)}


def _choice(label: str) -> list[dict]:
    return [
        {
            "from_name": "label",
            "to_name": "memory",
            "type": "choices",
            "value": {"choices": [label]},
        }
    ]


def test_personal_access_token_and_legacy_token_both_work(reviewer: Annotator) -> None:
    assert connect(URL, api_key=reviewer.personal_token).user_email == reviewer.email
    assert connect(URL, api_key=reviewer.legacy_token).user_email == reviewer.email
    assert connect(URL, api_key=ADMIN_TOKEN).user_email != reviewer.email


def test_rejected_token_is_one_line_without_the_token() -> None:
    bad = "0123456789abcdef-not-a-token"
    with pytest.raises(TiapError, match="rejected the API token") as err:
        connect(URL, api_key=bad)
    assert bad not in str(err.value)
    assert "\n" not in str(err.value)


def test_push_creates_project_then_adds_only_new_cases(tmp_path: Path, rubric, title) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 6)
    conn = connect(URL, api_key=ADMIN_TOKEN)
    with Workspace(db) as ws:
        first = push(ws, conn, rubric, title=title, subset="val")
        assert (first.created, first.tasks_added, first.tasks_present) == (True, 6, 0)
        project = conn.client.projects.get(first.project_id)
        assert project.label_config == label_config(rubric)
        assert "does_not_support" in (project.expert_instruction or "")
        again = push(ws, conn, rubric, title=title, subset="val")
        assert (again.created, again.tasks_added, again.tasks_present) == (False, 0, 6)
        ws.add_cases([make_case(6), make_case(7)])
        ws.save_subset("val", [f"c{i:04d}" for i in range(8)], replace=True)
        more = push(ws, conn, rubric, title=title, subset="val")
        assert (more.tasks_added, more.tasks_present) == (2, 6)
    tasks = list(conn.client.tasks.list(project=first.project_id))
    assert sorted(t.data["case_id"] for t in tasks) == [f"c{i:04d}" for i in range(8)]
    assert tasks[0].data["memory"]  # the case's text travels with the task
    assert conn.client.predictions.list(project=first.project_id) == []  # blind by default


def test_push_with_predictions(tmp_path: Path, rubric, title) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 3)
    conn = connect(URL, api_key=ADMIN_TOKEN)
    with Workspace(db) as ws:
        ws.add_labels(
            [
                judge_label("c0000", "judge-a", "partial"),
                judge_label("c0000", "judge-b", "supports"),
                judge_label("c0001", "judge-a", None, "not_json"),  # abstention: none
            ]
        )
        res = push(ws, conn, rubric, title=title, subset="val", with_predictions=True)
        assert res.predictions_added == 2
        ws.add_label(judge_label("c0002", "judge-a", "does_not_support"))
        res2 = push(ws, conn, rubric, title=title, subset="val", with_predictions=True)
        assert (res2.tasks_added, res2.predictions_added) == (0, 1)
        res3 = push(ws, conn, rubric, title=title, subset="val", with_predictions=True)
        assert res3.predictions_added == 0
    by_task = {v: k for k, v in _tasks(conn, res.project_id).items()}
    got = sorted(
        (by_task[p.task], p.model_version, p.result[0]["value"]["choices"][0])
        for p in conn.client.predictions.list(project=res.project_id)
    )
    assert got == [
        ("c0000", "judge-a", "partial"),
        ("c0000", "judge-b", "supports"),
        ("c0002", "judge-a", "does_not_support"),
    ]


def test_two_annotators_pull_idempotent_update_delete(
    tmp_path: Path, rubric, title, reviewer: Annotator
) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 4)
    admin = connect(URL, api_key=ADMIN_TOKEN)
    other = connect(URL, api_key=reviewer.personal_token)
    with Workspace(db) as ws:
        pushed = push(ws, admin, rubric, title=title, subset="val")
    tasks = _tasks(admin, pushed.project_id)
    ann = admin.client.annotations
    a0 = ann.create(id=tasks["c0000"], result=_choice("supports"))
    ann.create(id=tasks["c0001"], result=_choice("partial"))
    ann.create(id=tasks["c0002"], result=[], was_cancelled=True)  # skipped: not a label
    other.client.annotations.create(id=tasks["c0000"], result=_choice("partial"))
    b1 = other.client.annotations.create(id=tasks["c0001"], result=_choice("partial"))
    other.client.annotations.create(id=tasks["c0003"], result=[])  # no choice
    admin_email = admin.user_email

    with Workspace(db) as ws:
        res = pull(ws, other, rubric, title=title, subset="val")  # pulled with a PAT
        assert (res.annotations, res.labels_added, res.skipped, res.empty) == (6, 4, 1, 1)
        assert res.raters == {admin_email: 2, reviewer.email: 2}
        latest = {(r.case_id, r.rater): r.label for r in ws.latest_labels(rater_kind="human")}
        assert latest == {
            ("c0000", admin_email): "supports",
            ("c0001", admin_email): "partial",
            ("c0000", reviewer.email): "partial",
            ("c0001", reviewer.email): "partial",
        }
        rec = ws.latest_labels(raters=[admin_email])[0]
        assert (rec.rater_kind, rec.origin, rec.rubric_hash) == (
            "human",
            "labelstudio",
            rubric.content_hash,
        )
        rows = count_label_rows(db)

        again = pull(ws, admin, rubric, title=title, subset="val")
        assert (again.labels_added, again.labels_present, again.retracted) == (0, 4, 0)
        assert count_label_rows(db) == rows

        ann.update(id=a0.id, result=_choice("does_not_support"))  # an edit: one new row
        other.client.annotations.delete(id=b1.id)  # a deletion: the label is withdrawn
        third = pull(ws, admin, rubric, title=title, subset="val")
        assert (third.labels_added, third.retracted) == (1, 1)
        latest = {(r.case_id, r.rater): r.label for r in ws.latest_labels(rater_kind="human")}
        assert latest[("c0000", admin_email)] == "does_not_support"
        assert ("c0001", reviewer.email) not in latest
        assert [r.label for r in ws.label_history("c0000", admin_email)] == [
            "supports",
            "does_not_support",
        ]
        fourth = pull(ws, admin, rubric, title=title, subset="val")
        assert (fourth.labels_added, fourth.retracted) == (0, 0)

    mapped_db = make_workspace(tmp_path / "mapped.sqlite", 4)
    with Workspace(mapped_db) as ws:
        mapping = {admin_email: "alice", str(reviewer.user_id): "bob"}
        res = pull(ws, admin, rubric, title=title, subset="val", rater_map=mapping)
        assert res.raters == {"alice": 2, "bob": 1}
        assert ws.raters("human") == ["alice", "bob"]


def test_changed_rater_map_withdraws_nothing_and_says_so(
    tmp_path: Path, rubric, title, reviewer: Annotator
) -> None:
    """Only what Label Studio no longer has is withdrawn: a remapped annotator's
    annotations are stored under the new name too, reported as renamed, and no
    label is retracted for them; a deletion still withdraws every label stored from
    that annotation, under each name."""
    db = make_workspace(tmp_path / "w.sqlite", 3)
    admin = connect(URL, api_key=ADMIN_TOKEN)
    other = connect(URL, api_key=reviewer.personal_token)
    with Workspace(db) as ws:
        pushed = push(ws, admin, rubric, title=title, subset="val")
    tasks = _tasks(admin, pushed.project_id)
    a0 = admin.client.annotations.create(id=tasks["c0000"], result=_choice("supports"))
    admin.client.annotations.create(id=tasks["c0001"], result=_choice("partial"))
    other.client.annotations.create(id=tasks["c0000"], result=_choice("partial"))
    admin_email = admin.user_email

    def history(ws: Workspace) -> list[tuple[str, str, str | None, str | None]]:
        return [
            (r.case_id, r.rater, r.label, r.reason)
            for cid in ("c0000", "c0001", "c0002")
            for r in ws.label_history(cid)
        ]

    with Workspace(db) as ws:
        first = pull(ws, admin, rubric, title=title, subset="val")
        assert (first.labels_added, first.retracted) == (3, 0)
        mapping = {admin_email: "alice"}
        mapped = pull(ws, admin, rubric, title=title, subset="val", rater_map=mapping)
        assert (mapped.labels_added, mapped.labels_present) == (2, 1)
        assert mapped.retracted == 0
        assert all(reason != "retracted" for *_, reason in history(ws))
        assert "0 withdrawn" in mapped.summary()
        assert first.renamed == {}
        assert mapped.renamed == {admin_email: {"alice": 2}}
        assert f"{admin_email} -> alice (2)" in mapped.summary()
        latest = {(r.case_id, r.rater): r.label for r in ws.latest_labels(rater_kind="human")}
        assert latest == {
            ("c0000", admin_email): "supports",
            ("c0001", admin_email): "partial",
            ("c0000", "alice"): "supports",
            ("c0001", "alice"): "partial",
            ("c0000", reviewer.email): "partial",
        }
        rows = len(history(ws))
        # the earlier map again: nothing new, nothing withdrawn
        back = pull(ws, admin, rubric, title=title, subset="val")
        assert (back.labels_added, back.retracted) == (0, 0)
        assert back.renamed == {"alice": {admin_email: 2}}
        assert len(history(ws)) == rows

        admin.client.annotations.delete(id=a0.id)  # gone from the server: withdrawn
        gone = pull(ws, admin, rubric, title=title, subset="val", rater_map=mapping)
        assert (gone.labels_added, gone.retracted) == (0, 2)
        assert gone.renamed == {admin_email: {"alice": 1}}
        latest = {(r.case_id, r.rater) for r in ws.latest_labels(rater_kind="human")}
        assert ("c0000", "alice") not in latest
        assert ("c0000", admin_email) not in latest
        assert ("c0000", reviewer.email) in latest
        notes = {r.rater: r.note for r in ws.label_history("c0000") if r.reason == "retracted"}
        assert notes == {
            admin_email: "annotation deleted in Label Studio",
            "alice": "annotation deleted in Label Studio",
        }


def test_an_annotation_skipped_since_is_withdrawn_as_skipped(tmp_path: Path, rubric, title) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 2)
    admin = connect(URL, api_key=ADMIN_TOKEN)
    with Workspace(db) as ws:
        pushed = push(ws, admin, rubric, title=title, subset="val")
    tasks = _tasks(admin, pushed.project_id)
    a0 = admin.client.annotations.create(id=tasks["c0000"], result=_choice("supports"))
    with Workspace(db) as ws:
        assert pull(ws, admin, rubric, title=title, subset="val").labels_added == 1
        admin.client.annotations.update(id=a0.id, result=[], was_cancelled=True)
        res = pull(ws, admin, rubric, title=title, subset="val")
        assert (res.skipped, res.retracted) == (1, 1)
        assert ws.latest_labels(rater_kind="human") == []
        last = ws.label_history("c0000", admin.user_email)[-1]
        assert (last.reason, last.note) == (
            "retracted",
            "annotation skipped or left without a choice in Label Studio",
        )


def test_overlap_project_holds_only_the_reviewer_overlap(
    tmp_path: Path, rubric, title, reviewer: Annotator
) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 5, overlap=2)  # overlap: c0000, c0001
    admin = connect(URL, api_key=ADMIN_TOKEN)
    other = connect(URL, api_key=reviewer.personal_token)
    with Workspace(db) as ws:
        pushed = push(ws, other, rubric, title=title, subset="val", overlap=True)
        assert (pushed.created, pushed.tasks_added) == (True, 2)
        tasks = _tasks(admin, pushed.project_id)
        assert sorted(tasks) == ["c0000", "c0001"]
        other.client.annotations.create(id=tasks["c0001"], result=_choice("partial"))
        res = pull(ws, admin, rubric, title=title, subset="val", overlap=True)
        assert (res.labels_added, res.raters) == (1, {reviewer.email: 1})
        (rec,) = ws.latest_labels(rater_kind="human")
        assert (rec.case_id, rec.rater, rec.label) == ("c0001", reviewer.email, "partial")


def test_mismatched_project_and_missing_project(tmp_path: Path, rubric, title) -> None:
    conn = connect(URL, api_key=ADMIN_TOKEN)
    conn.client.projects.create(
        title=title,
        label_config=(
            '<View><Text name="memory" value="$memory"/><Choices name="rel" toName="memory">'
            '<Choice value="yes"/><Choice value="no"/></Choices></View>'
        ),
    )
    db = make_workspace(tmp_path / "w.sqlite", 2)
    with Workspace(db) as ws:
        with pytest.raises(TiapError, match="does not match rubric 'contested-credit'"):
            push(ws, conn, rubric, title=title)
        with pytest.raises(TiapError, match="does not match rubric"):
            pull(ws, conn, rubric, title=title)
        with pytest.raises(TiapError, match="no project titled"):
            pull(ws, conn, rubric, title=title + " absent")


def test_cli_round_trip_keeps_the_token_out_of_workspace_and_output(
    tiap_cli, tmp_path: Path, title, monkeypatch, capsys
) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 3)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ADMIN_TOKEN)
    base = ["--db", str(db), "--url", URL, "--project", title, "--subset", "val"]
    assert tiap_cli("annotate", "labelstudio", "push", *base).code == 0
    out = capsys.readouterr().out
    assert f"project '{title}'" in out
    assert "3 tasks added" in out
    conn = connect(URL, api_key=ADMIN_TOKEN)
    project = next(p for p in conn.client.projects.list(title=title) if p.title == title)
    task = _tasks(conn, project.id)["c0001"]
    conn.client.annotations.create(id=task, result=_choice("supports"))
    mapping = f"{conn.user_email}=ann"
    assert (
        tiap_cli("annotate", "labelstudio", "pull", *base, "--rater-map", mapping, "--json").code
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert (summary["labels_added"], summary["raters"]) == (1, {"ann": 1})
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "wrong-token-123456")
    assert tiap_cli("annotate", "labelstudio", "pull", *base).code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "rejected the API token" in err
    assert "wrong-token-123456" not in err
    for path in tmp_path.iterdir():
        assert ADMIN_TOKEN.encode() not in path.read_bytes()


def test_pull_refuses_an_annotator_named_like_a_judge(tmp_path: Path, rubric, title) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 2)
    admin = connect(URL, api_key=ADMIN_TOKEN)
    with Workspace(db) as ws:
        ws.add_label(judge_label("c0000", "gpt-judge", "supports"))
        pushed = push(ws, admin, rubric, title=title, subset="val")
        tasks = _tasks(admin, pushed.project_id)
        admin.client.annotations.create(id=tasks["c0001"], result=_choice("partial"))
        rows = count_label_rows(db)
        mapping = {admin.user_email: "gpt-judge"}
        with pytest.raises(TiapError) as err:
            pull(ws, admin, rubric, title=title, subset="val", rater_map=mapping)
        assert "'gpt-judge' is the name of a judge in this workspace" in str(err.value)
        assert "--rater-map" in str(err.value)
        assert count_label_rows(db) == rows  # nothing stored
        res = pull(
            ws, admin, rubric, title=title, subset="val", rater_map={admin.user_email: "ann"}
        )
        assert res.raters == {"ann": 1}
        assert ws.raters("human") == ["ann"]
        assert ws.raters("judge") == ["gpt-judge"]


def test_qrels_pairs_round_trip_like_contested_credits(tmp_path: Path, title: str) -> None:
    """Push qrels pairs with the qrels rubric, annotate the document, pull the labels."""
    from support.qrels_cases import qrels_case
    from tiap.rubric import load_rubric

    qrels = load_rubric("qrels-relevance")
    cases = [qrels_case(i, grade=1 if i % 2 else 2) for i in range(3)]
    with Workspace(tmp_path / "q.sqlite") as ws:
        ws.add_cases(cases)
        ws.save_subset("val", [c.case_id for c in cases], params={"kind": "validation"})
        admin = connect(URL, api_key=ADMIN_TOKEN)
        pushed = push(ws, admin, qrels, title=title, subset="val")
        assert (pushed.created, pushed.tasks_added) == (True, 3)
        tasks = {t.data["case_id"]: t for t in admin.client.tasks.list(project=pushed.project_id)}
        assert set(tasks) == {c.case_id for c in cases}
        data = tasks[cases[0].case_id].data
        assert (data["query"], data["title"], data["document"]) == (
            cases[0].question,
            cases[0].title,
            cases[0].memory_text,
        )
        assert "grade" not in data  # annotators stay blind to the annotation
        choice = [
            {
                "from_name": "label",
                "to_name": "document",
                "type": "choices",
                "value": {"choices": ["not_relevant"]},
            }
        ]
        admin.client.annotations.create(id=tasks[cases[0].case_id].id, result=choice)
        res = pull(ws, admin, qrels, title=title, subset="val")
        assert res.labels_added == 1
        (rec,) = ws.latest_labels(rater_kind="human")
        assert (rec.case_id, rec.label, rec.rubric_id) == (
            cases[0].case_id,
            "not_relevant",
            "qrels-relevance",
        )
