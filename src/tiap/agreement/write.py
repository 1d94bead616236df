"""Write an agreement report: ``report.json``, ``report.md`` and ``report.html``;
and record its gate verdict once all three are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tiap.agreement.gate import record_gate
from tiap.agreement.models import AgreementReport
from tiap.agreement.sections import render_html, render_markdown
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

REPORT_FILES = ("report.json", "report.md", "report.html")


class WrittenReport(NamedTuple):
    """The files written, and the id of the gate event recorded (``None``: none)."""

    paths: list[Path]
    gate_event: int | None


def _render(report: AgreementReport) -> list[str]:
    """The three files' text, in :data:`REPORT_FILES` order (deterministic)."""
    data = json.dumps(
        report.to_json_dict(), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False
    )
    return [data + "\n", render_markdown(report), render_html(report)]


def write_report(report: AgreementReport, out_dir: str | Path) -> list[Path]:
    """Write the three report files (deterministic bytes); returns their paths. Every
    file is rendered before the first is written; a file that cannot be written is a
    one-line :class:`TiapError` naming it."""
    out = Path(out_dir)
    texts = _render(report)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TiapError(f"{out}: cannot create the output directory ({exc.strerror})") from None
    if not out.is_dir():
        raise TiapError(f"{out}: not a directory")
    paths = [out / name for name in REPORT_FILES]
    for path, text in zip(paths, texts, strict=True):
        try:
            path.write_text(text, encoding="utf-8", newline="\n")
        except OSError as exc:
            raise TiapError(f"{path}: cannot write the report ({exc.strerror})") from None
    return paths


def write_report_and_record_gate(
    report: AgreementReport, out_dir: str | Path, ws: Workspace | None = None
) -> WrittenReport:
    """Write the report, then, when its gate applies and ``ws`` is given, record the
    verdict with the written ``report.json``'s hash. A report that fails to be written
    records nothing."""
    paths = write_report(report, out_dir)
    event = record_gate(ws, report, report_dir=out_dir) if ws is not None else None
    return WrittenReport(paths=paths, gate_event=event)
