"""How a run's answers were made: ``answers/RUN.json`` beside the bundle's run files.

``tiap answers extract`` (extractive or ``--reader``) writes the answers into
``runs/RUN.jsonl`` and then this record: the method in one sentence, how many answers
it wrote and the sha256 of the run file as written. ``tiap rescore`` reports the method
with the run's answer figures when the record is there and the run file is still the
one it describes (same sha256); otherwise the method is not known (a system's own
answers, imported; answers edited or written again since; a record that cannot be
read), and the report says so. The record is not part of the bundle's content: reading a
bundle ignores it, and no case or bundle version depends on it.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.io import file_sha256
from tiap.traces.bundle import Bundle

__all__ = ["ANSWERS_DIR", "AnswerRecord", "answers_method", "record_path", "write_record"]

ANSWERS_DIR = "answers"


class AnswerRecord(BaseModel):
    """``answers/RUN.json``."""

    model_config = ConfigDict(extra="forbid")

    run: str
    method: str
    n_answers: int
    run_file_sha256: str


def record_path(root: Path, run: str) -> Path:
    return root / ANSWERS_DIR / f"{run}.json"


def write_record(root: Path, run: str, method: str, n_answers: int, run_file: Path) -> Path:
    """Write the record of the answers just written into ``run_file`` (a whole new file
    moved into place)."""
    record = AnswerRecord(
        run=run, method=method, n_answers=n_answers, run_file_sha256=file_sha256(run_file)
    )
    path = record_path(root, run)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8", newline="\n")
    os.replace(temporary, path)
    return path


def answers_method(bundle: Bundle, run: str, run_file: Path) -> str | None:
    """The method of the run's answers, when its record describes ``run_file`` as it is
    now (see the module docstring); else None."""
    if bundle.root is None:
        return None
    path = record_path(bundle.root, run)
    try:
        record = AnswerRecord.model_validate_json(path.read_bytes())
        current = file_sha256(run_file)
    except (OSError, ValidationError, ValueError):
        return None
    if record.run != run or record.run_file_sha256 != current:
        return None
    return record.method
