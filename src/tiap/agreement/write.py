"""Write an agreement report: ``report.json``, ``report.md`` and ``report.html``."""

from __future__ import annotations

from pathlib import Path

from tiap.agreement.models import AgreementReport
from tiap.agreement.render_html import render_html
from tiap.agreement.render_md import render_markdown
from tiap.errors import TiapError
from tiap.io import write_json

REPORT_FILES = ("report.json", "report.md", "report.html")


def write_report(report: AgreementReport, out_dir: str | Path) -> list[Path]:
    """Write the three report files (deterministic bytes); returns their paths."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TiapError(f"{out}: cannot create the output directory ({exc.strerror})") from None
    if not out.is_dir():
        raise TiapError(f"{out}: not a directory")
    paths = [out / name for name in REPORT_FILES]
    write_json(paths[0], report.to_json_dict())
    paths[1].write_text(render_markdown(report), encoding="utf-8", newline="\n")
    paths[2].write_text(render_html(report), encoding="utf-8", newline="\n")
    return paths
