"""Label Studio bridge parts that need no server: config, checks, mapping, errors."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET

import pytest
from annotate_support import make_case

from tiap.annotate.labelstudio import check_config, connect, instructions_html, label_config
from tiap.annotate.labelstudio.config import task_data
from tiap.annotate.labelstudio.models import ExportAnnotation, PullResult
from tiap.annotate.labelstudio.pull import annotation_id, external_id, rater_name
from tiap.errors import TiapError


def test_label_config_from_rubric(rubric) -> None:
    root = ET.fromstring(label_config(rubric))
    texts = [(t.get("name"), t.get("value")) for t in root.iter("Text")]
    assert texts == [(f, f"${f}") for f in rubric.fields]
    (choices,) = list(root.iter("Choices"))
    assert (choices.get("name"), choices.get("toName"), choices.get("choice")) == (
        "label",
        "memory",
        "single-radio",
    )
    got = [(c.get("value"), c.get("hotkey")) for c in choices.iter("Choice")]
    assert got == [("supports", "1"), ("partial", "2"), ("does_not_support", "3")]
    hints = [c.get("hint") for c in choices.iter("Choice")]
    assert hints[2].startswith("The memory does not carry the information")
    html = instructions_html(rubric)
    assert "<b>partial</b> (key 2)" in html


def test_check_config_accepts_own_config_and_names_mismatches(rubric) -> None:
    info = check_config(label_config(rubric), rubric, "p")
    assert (info.control, info.to_name) == ("label", "memory")
    other = (
        '<View><Text name="memory" value="$memory"/>'
        '<Choices name="rel" toName="memory"><Choice value="yes"/><Choice value="no"/>'
        "</Choices></View>"
    )
    with pytest.raises(
        TiapError, match=r"does not match rubric 'contested-credit' \(config choices: yes, no"
    ):
        check_config(other, rubric, "p")
    foreign_field = label_config(rubric).replace("$rank", "$score")
    with pytest.raises(TiapError, match="shows task field 'score'"):
        check_config(foreign_field, rubric, "p")
    with pytest.raises(TiapError, match="not valid XML"):
        check_config("<View>", rubric, "p")


def test_task_data_carries_case_id_and_rubric_fields(rubric) -> None:
    case = make_case(3)
    data = task_data(case, rubric)
    assert data["case_id"] == "c0003"
    assert set(data) == {"case_id", *rubric.fields}
    assert data["memory"] == case.memory_text
    assert data["rank"] == str(case.rank)


def test_annotation_choice_and_versioned_external_id() -> None:
    ann = ExportAnnotation.model_validate(
        {
            "id": 7,
            "completed_by": 2,
            "result": [
                {"from_name": "other", "value": {"choices": ["x"]}},
                {"from_name": "label", "value": {"choices": ["partial"]}},
            ],
            "updated_at": "2026-11-30T01:55:03.833708Z",
        }
    )
    assert ann.choice("label") == "partial"
    assert ann.choice("missing") is None
    assert ann.user_id == 2
    first = external_id(3, ann, "bob")
    edited = ann.model_copy(update={"updated_at": "2026-11-30T02:00:00.000000Z"})
    assert first == "labelstudio:p3:a7:2026-11-30T01:55:03.833708Z:bob"
    assert external_id(3, edited, "bob") != first
    nested = ExportAnnotation.model_validate({"id": 1, "completed_by": {"id": 5}})
    assert nested.user_id == 5


def test_annotation_id_of_a_stored_label() -> None:
    ann = ExportAnnotation.model_validate({"id": 71, "updated_at": "2026-11-30T01:55:03Z"})
    stored = external_id(3, ann, "a:b")  # the version and the rater may hold colons
    assert annotation_id(3, stored) == 71
    assert annotation_id(13, stored) is None  # another project's label
    assert annotation_id(3, None) is None
    assert annotation_id(3, "import:p3:a71:x") is None


def test_pull_summary_names_renamed_raters() -> None:
    res = PullResult(
        url="http://127.0.0.1:8080",
        project_id=3,
        project="p",
        annotations=4,
        labels_added=2,
        labels_present=2,
        skipped=0,
        empty=0,
        retracted=0,
        unknown_tasks=0,
        outside_subset=0,
        raters={"alice": 2, "bob": 2},
        renamed={"a@lab.org": {"alice": 2}},
    )
    text = res.summary()
    assert "0 withdrawn" in text
    assert "stored under a new rater name: a@lab.org -> alice (2)" in text
    assert "labels under the earlier name are kept" in text
    assert res.model_dump()["renamed"] == {"a@lab.org": {"alice": 2}}
    assert "new rater name" not in res.model_copy(update={"renamed": {}}).summary()


def test_rater_name_mapping() -> None:
    users = {1: ("admin@example.com", ""), 2: ("b@example.com", "bob"), 3: ("", "carol")}
    assert rater_name(1, users, {}) == "admin@example.com"
    assert rater_name(3, users, {}) == "carol"
    assert rater_name(9, users, {}) == "labelstudio-user-9"
    mapping = {"admin@example.com": "alice", "bob": "robert", "3": "caro"}
    assert [rater_name(i, users, mapping) for i in (1, 2, 3)] == ["alice", "robert", "caro"]


def test_connect_errors_without_a_server(monkeypatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with pytest.raises(TiapError, match="set LABEL_STUDIO_API_KEY"):
        connect("http://127.0.0.1:9")
    with pytest.raises(TiapError, match="expected http"):
        connect("127.0.0.1:8080", api_key="x" * 40)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = "s3cret-token-value-0123456789"
    with pytest.raises(TiapError, match="cannot reach Label Studio") as err:
        connect(f"http://127.0.0.1:{port}", api_key=secret)
    assert secret not in str(err.value)


def test_overlap_scope_and_default_titles(tmp_path, rubric) -> None:
    from annotate_support import make_workspace

    from tiap.annotate.labelstudio.push import default_title, scope_case_ids
    from tiap.cases.workspace import Workspace

    assert default_title(rubric, None) == "tiap contested-credit"
    assert default_title(rubric, "val") == "tiap contested-credit val"
    assert default_title(rubric, "val", True) == "tiap contested-credit val overlap"
    db = make_workspace(tmp_path / "w.sqlite", 4, overlap=1)
    with Workspace(db) as ws:
        assert scope_case_ids(ws, None, False) is None
        assert scope_case_ids(ws, "val", False) == ["c0000", "c0001", "c0002", "c0003"]
        assert scope_case_ids(ws, "val", True) == ["c0000"]
        with pytest.raises(TiapError, match="--overlap needs --subset"):
            scope_case_ids(ws, None, True)
    bare = make_workspace(tmp_path / "bare.sqlite", 2, overlap=0)
    with Workspace(bare) as ws, pytest.raises(TiapError, match="has no reviewer overlap"):
        scope_case_ids(ws, "val", True)
