"""What shapes an audit (:class:`AuditSettings`) and where its files go."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

STATE_FILE = "audit_state.json"
WORKSPACE_FILE = "workspace.sqlite"
RESCORE_DIR = "rescore"
VALIDATION_DIR = "validation"
FINAL_DIR = "final"
INDEX_MD = "index.md"
INDEX_HTML = "index.html"


AuditMode = Literal["contested", "qrels"]

#: the rubric of each mode, unless one is given.
MODE_RUBRICS: dict[str, str] = {"contested": "contested-credit", "qrels": "qrels-relevance"}


class AuditSettings(BaseModel):
    """Everything that shapes an audit. Defaults are the paper's.

    ``humans="skip"`` (``--no-humans``) does not wait for human labels, and the
    agreement reports then leave every human label out: the gate is on judge
    agreement only.

    ``mode="qrels"`` audits relevance annotations instead (the LMEB procedure):
    ``bundle`` is then any SOURCE of ``tiap cases from-qrels`` (an LMEB/BEIR task
    directory, a tree of them, or a trace bundle); ``per_dataset``, ``negatives``
    and ``run`` shape the draw of pairs (stored as subset ``qrels_subset``), and
    ``min_confirmed`` / ``max_missed`` are the thresholds of each dataset's verdict.
    """

    model_config = ConfigDict(extra="forbid")

    bundle: Path
    out: Path
    panel: str
    mode: AuditMode = "contested"
    db: Path | None = None
    #: the rubric's name or file; default: the mode's (``MODE_RUBRICS``)
    rubric: str | None = None
    k: int | None = Field(default=None, ge=1)
    ks: str = "10,60"
    subset: str = "validation"
    n: int = Field(default=115, ge=1)
    overlap: int | None = Field(default=None, ge=0)
    seed: int = 1337
    from_runs: list[str] | None = None
    humans: Literal["required", "skip"] = "required"
    reference: str | None = None
    min_fleiss: float = 0.80
    min_judge_kappa: float = 0.60
    rescore_resamples: int = 3000
    agreement_resamples: int = 1000
    max_cost: float | None = Field(default=None, ge=0)
    force: bool = False
    progress: bool = True
    # qrels mode
    per_dataset: int = Field(default=100, ge=1)
    negatives: int = Field(default=0, ge=0)
    run: str | None = None
    qrels_subset: str = "qrels"
    min_confirmed: float = 0.90
    max_missed: float = 0.10

    @property
    def workspace(self) -> Path:
        return self.db if self.db is not None else self.out / WORKSPACE_FILE

    @property
    def rubric_name(self) -> str:
        """The rubric given, or the mode's."""
        return self.rubric if self.rubric is not None else MODE_RUBRICS[self.mode]

    def context_key(self) -> str:
        """A hash of the settings that decide *what* the steps work on: the bundle,
        the workspace, the panel, the rubric, the cut-off and the subset's name.
        Step records kept for other values are dropped. The rest only change later
        verdicts (thresholds, the reference, ``humans``, ``force``, the budget),
        the draw of a subset that is kept once drawn (``n``, ``overlap``, ``seed``,
        ``from_runs``) or the rescore, which has a fingerprint of its own."""
        data: dict[str, object] = {
            "bundle": str(self.bundle),
            "workspace": str(self.workspace),
            "panel": self.panel,
            "rubric": self.rubric_name,
            "k": self.k,
            "subset": self.subset,
        }
        if self.mode != "contested":  # the contested audit's key is as it was
            data["mode"] = self.mode
            data["qrels_subset"] = self.qrels_subset
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def rescore_fingerprint(settings: AuditSettings) -> str:
    """sha256 over the bundle's files and the rescoring settings."""
    h = hashlib.sha256()
    root = settings.bundle
    for p in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(p.relative_to(root)).encode())
        h.update(b"\0")
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    h.update(f"{settings.ks}|{settings.rescore_resamples}|{settings.seed}".encode())
    return h.hexdigest()
