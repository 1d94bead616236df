"""A Label Studio labeling config generated from a rubric, and the check that an
existing project's config still matches the rubric.

The generated config shows each of the rubric's case fields as a ``Text`` object
(under a header) and one single-choice ``Choices`` control whose choices are the
rubric's labels, with the label keys as hotkeys and the definitions as hints.
The definitions are also the project's instructions.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from tiap.cases.models import Case
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

FIELD_TITLES = {
    "question": "Question",
    "answer": "Gold answer",
    "category": "Question category",
    "evidence": "Gold source evidence (the turns the benchmark cites)",
    "memory": "Credited memory (does it support answering the question?)",
    "rank": "Rank of the credited memory",
    "query": "Query",
    "title": "Document title",
    "document": "Document (is it relevant to the query?)",
    "response": "Model response (is it correct?)",
    "question_type": "Question type",
    "criteria": "Criteria for this question type",
}
CASE_ID = "case_id"
_VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


def control_name(rubric: Rubric) -> str:
    """The name of the ``Choices`` control (``label``, unless a case field is called so)."""
    return "tiap_label" if "label" in rubric.fields else "label"


def target_name(rubric: Rubric) -> str:
    """The Text object the Choices control labels: the memory (a qrels pair's
    document, an answer case's response), when the rubric shows it."""
    for name in ("memory", "document", "response"):
        if name in rubric.fields:
            return name
    return rubric.fields[0]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def label_config(rubric: Rubric) -> str:
    """The labeling config XML for a rubric."""
    if CASE_ID in rubric.fields:
        raise TiapError(f"rubric '{rubric.id}': a case field may not be called '{CASE_ID}'")
    view = ET.Element("View")
    for field in rubric.fields:
        title = FIELD_TITLES.get(field, field.replace("_", " ").capitalize())
        ET.SubElement(view, "Header", value=title, size="5")
        ET.SubElement(view, "Text", name=field, value=f"${field}")
    ET.SubElement(view, "Header", value=f"Label (rubric {rubric.id})", size="5")
    choices = ET.SubElement(
        view,
        "Choices",
        name=control_name(rubric),
        toName=target_name(rubric),
        choice="single-radio",
        required="true",
        showInline="false",
    )
    for lab in rubric.labels:
        ET.SubElement(
            choices, "Choice", value=lab.name, hotkey=lab.key, hint=_one_line(lab.definition)
        )
    return ET.tostring(view, encoding="unicode")


def instructions_html(rubric: Rubric) -> str:
    """The project instructions: the rubric's description and label definitions."""
    esc = html.escape
    items = "".join(
        f"<li><b>{esc(lab.name)}</b> (key {esc(lab.key)}): {esc(_one_line(lab.definition))}</li>"
        for lab in rubric.labels
    )
    desc = f"<p>{esc(_one_line(rubric.description))}</p>" if rubric.description else ""
    return f"{desc}<ul>{items}</ul><p>Rubric {esc(rubric.id)}, version {esc(rubric.version)}.</p>"


def project_description(rubric: Rubric) -> str:
    return f"tiap rubric {rubric.id} version {rubric.version} ({rubric.content_hash[:12]})"


def task_data(case: Case, rubric: Rubric) -> dict[str, str]:
    """A task's data: the rubric's fields of the case, and its ``case_id`` (a case of
    another kind than the rubric's is refused). The built-in qrels rubric shows the
    query and the document, not the qrels grade: annotators stay blind to it."""
    rubric.require_case_kind(case.kind, case.case_id)
    fields = case.prompt_fields()
    missing = [f for f in rubric.fields if f not in fields]
    if missing:
        raise TiapError(f"rubric '{rubric.id}' needs case fields that cases lack: {missing}")
    return {CASE_ID: case.case_id, **{f: fields[f] for f in rubric.fields}}


@dataclass(frozen=True)
class ConfigInfo:
    """What tiap needs from a project's config: the Choices control and its target."""

    control: str
    to_name: str


def check_config(config: str, rubric: Rubric, project: str) -> ConfigInfo:
    """Check that a project's labeling config fits the rubric; one-line error if not."""
    where = f"Label Studio project '{project}'"
    try:
        root = ET.fromstring(config)
    except ET.ParseError as exc:
        raise TiapError(f"{where}: its labeling config is not valid XML ({exc})") from None
    wanted = set(rubric.label_names)
    found: list[list[str]] = []
    match: ConfigInfo | None = None
    for node in root.iter("Choices"):
        values = [c.get("value", "") for c in node.iter("Choice")]
        found.append(values)
        if set(values) == wanted and node.get("name") and node.get("toName"):
            match = ConfigInfo(control=str(node.get("name")), to_name=str(node.get("toName")))
    if match is None:
        seen = "; ".join(", ".join(v) for v in found) or "no Choices control"
        raise TiapError(
            f"{where}: its labeling config does not match rubric '{rubric.id}' "
            f"(config choices: {seen}; rubric labels: {', '.join(rubric.label_names)})"
        )
    provided = {CASE_ID, *rubric.fields}
    for node in root.iter():
        m = _VARIABLE.match(node.get("value", ""))
        if m and m.group(1) not in provided:
            raise TiapError(
                f"{where}: its labeling config shows task field '{m.group(1)}', which "
                f"rubric '{rubric.id}' does not provide ({', '.join(sorted(provided))})"
            )
    return match
