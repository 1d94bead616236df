"""The whole audit, in order and resumably (``tiap audit`` and ``tiap demo``).

Steps, each safe to run again:

1. **rescore** the bundle's runs under every target (skipped when the bundle and
   the settings are unchanged since the last run);
2. **extract** contested credits into the workspace (idempotent: stable ids);
3. **sample** the validation subset (kept once drawn);
4. **judge** the validation subset with the panel (resumes; answered calls are cached);
5. **humans**: unless ``humans="skip"``, wait until a person has labelled every
   validation case (the audit stops and names the ``tiap annotate`` command);
6. **validation report**: agreement on the validation subset and the scale gate;
7. **judge** every case, if the gate passed or ``force`` (recorded in the workspace);
8. **final report**: agreement and majority-vote prevalence over every case;
9. **index**: ``index.md`` and ``index.html`` linking everything.

The pipeline only wires the packages together: each step calls their Python API.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tiap.errors import TiapError

STATE_FILE = "audit_state.json"
WORKSPACE_FILE = "workspace.sqlite"
RESCORE_DIR = "rescore"
VALIDATION_DIR = "validation"
FINAL_DIR = "final"

StepStatus = Literal["done", "skipped", "waiting", "failed", "not_run"]


class AuditSettings(BaseModel):
    """Everything that shapes an audit. Defaults are the paper's."""

    bundle: Path
    out: Path
    panel: str
    db: Path | None = None
    rubric: str = "contested-credit"
    k: int | None = None
    ks: str = "10,60"
    subset: str = "validation"
    n: int = 115
    overlap: int | None = None
    seed: int = 1337
    from_runs: list[str] | None = None
    humans: Literal["required", "skip"] = "required"
    reference: str | None = None
    min_fleiss: float = 0.80
    min_judge_kappa: float = 0.60
    rescore_resamples: int = 3000
    agreement_resamples: int = 1000
    max_cost: float | None = None
    force: bool = False
    progress: bool = True

    @property
    def workspace(self) -> Path:
        return self.db if self.db is not None else self.out / WORKSPACE_FILE


class StepRecord(BaseModel):
    name: str
    status: StepStatus
    detail: str = ""


class AuditOutcome(BaseModel):
    """What an audit run did. ``status`` is ``complete``, ``waiting`` (human labels
    needed), ``gate_failed`` or ``budget`` (stopped by ``max_cost``)."""

    status: Literal["complete", "waiting", "gate_failed", "budget"]
    message: str
    steps: list[StepRecord]
    index_md: Path
    index_html: Path
    next_command: str | None = None
    facts: dict[str, Any] = Field(default_factory=dict)


class _State(BaseModel):
    rescore_fingerprint: str | None = None


Say = Callable[[str], None]


def _fingerprint(bundle_dir: Path, settings: AuditSettings) -> str:
    """sha256 over the bundle's files and the rescoring settings."""
    h = hashlib.sha256()
    files = sorted(p for p in bundle_dir.rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(bundle_dir)).encode())
        h.update(b"\0")
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    h.update(f"{settings.ks}|{settings.rescore_resamples}|{settings.seed}".encode())
    return h.hexdigest()


def _read_state(out: Path) -> _State:
    path = out / STATE_FILE
    if not path.exists():
        return _State()
    try:
        return _State.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return _State()


def _write_state(out: Path, state: _State) -> None:
    (out / STATE_FILE).write_text(state.model_dump_json(indent=2) + "\n", encoding="utf-8")


class Audit:
    """One run of the audit pipeline. Use :func:`run_audit`."""

    def __init__(self, settings: AuditSettings, say: Say) -> None:
        self.s = settings
        self.say = say
        self.steps: list[StepRecord] = []
        self.facts: dict[str, Any] = {}

    def step(self, name: str, status: StepStatus, detail: str = "") -> None:
        self.steps.append(StepRecord(name=name, status=status, detail=detail))
        self.say(f"[{len(self.steps)}] {name}: {status}" + (f" ({detail})" if detail else ""))

    # -------------------------------------------------------------------- steps

    def rescore(self, bundle: Any) -> None:
        from tiap.rescore import rescore_bundle, write_outputs

        out = self.s.out / RESCORE_DIR
        state = _read_state(self.s.out)
        fp = _fingerprint(self.s.bundle, self.s)
        report_json = out / "report.json"
        if state.rescore_fingerprint == fp and report_json.exists():
            self.facts["rescore"] = json.loads(report_json.read_text(encoding="utf-8"))
            self.step("rescore", "skipped", "bundle and settings unchanged")
            return
        result = rescore_bundle(
            bundle, ks=self.s.ks, resamples=self.s.rescore_resamples, seed=self.s.seed
        )
        write_outputs(result, out)
        self.facts["rescore"] = result.report_dict()
        _write_state(self.s.out, state.model_copy(update={"rescore_fingerprint": fp}))
        self.step("rescore", "done", f"{out}/report.md")

    def extract(self, bundle: Any, ws: Any) -> None:
        from tiap.cases.extract import extract_cases

        report = extract_cases(bundle, ws, k=self.s.k)
        self.facts["cases"] = report.model_dump(mode="json")
        self.step(
            "extract contested credits",
            "done",
            f"{report.contested} cases at k={report.k}, {report.added} new",
        )
        if ws.count_cases() == 0:
            raise TiapError(
                f"no contested credits in {self.s.bundle} at k={report.k}: nothing to judge "
                "(the rescore report is in " + str(self.s.out / RESCORE_DIR) + ")"
            )

    def sample(self, ws: Any) -> None:
        from tiap.cases.sample import default_overlap, sample_subset

        name = self.s.subset
        if name in ws.subsets():
            params = ws.subset_params(name)
            if params.get("kind") != "validation":
                raise TiapError(f"subset '{name}' exists and is not a validation subset")
            self.step("validation subset", "skipped", f"'{name}' already drawn")
            return
        overlap = self.s.overlap if self.s.overlap is not None else default_overlap(self.s.n)
        result = sample_subset(
            ws,
            name=name,
            n=self.s.n,
            overlap=overlap,
            seed=self.s.seed,
            from_runs=self.s.from_runs,
        )
        self.step(
            "validation subset",
            "done",
            f"'{name}': {len(result.case_ids)} cases, overlap {len(result.overlap_ids)}",
        )

    def judge(self, ws: Any, panel: Any, rubric: Any, subset: str | None) -> bool:
        """Judge; returns False when the budget stopped the run."""
        from tiap.judge import plan_run
        from tiap.judge.progress import run_with_progress

        plan = plan_run(ws, panel, rubric, subset=subset)
        summary = run_with_progress(ws, plan, max_cost=self.s.max_cost, progress=self.s.progress)
        where = f"subset '{subset}'" if subset else "every case"
        invalid = sum(summary.invalid.values())
        self.step(
            f"judge {where}",
            "done",
            f"{summary.calls} calls, {summary.cache_hits} cached, {summary.valid} valid, "
            f"{invalid} invalid",
        )
        self.facts.setdefault("judging", []).append(summary.model_dump(mode="json"))
        if summary.errors:
            raise TiapError("judges stopped: " + "; ".join(summary.errors))
        return not summary.stopped_by_budget

    def humans_ready(self, ws: Any) -> str | None:
        """None when a person labelled every validation case; else the command to run."""
        cases = ws.case_ids(subset=self.s.subset)
        done: dict[str, int] = {}
        for rec in ws.latest_labels(case_ids=cases, rater_kind="human"):
            if rec.label is not None and rec.rater != "adjudicated":
                done[rec.rater] = done.get(rec.rater, 0) + 1
        complete = sorted(r for r, n in done.items() if n >= len(cases))
        if complete:
            self.step("human labels", "done", f"complete: {', '.join(complete)}")
            return None
        progress = ", ".join(f"{r} {n}/{len(cases)}" for r, n in sorted(done.items()))
        command = (
            f"tiap annotate tui --db {self.s.workspace} --rater YOUR_NAME --subset {self.s.subset}"
        )
        self.step("human labels", "waiting", progress or "none yet")
        return command

    def agreement(
        self, ws: Any, rubric: Any, judges: list[str], subset: str | None, out: Path
    ) -> Any:
        from tiap.agreement import compute_report, labels_from_workspace, record_gate, write_report

        table = labels_from_workspace(ws, subset=subset)
        present = set(table.rater_names)
        raters = [j for j in judges if j in present]
        if not raters:
            raise TiapError(f"no labels from the panel's judges on {subset or 'the cases'}")
        report = compute_report(
            table,
            rubric,
            raters=raters,
            reference=self.s.reference,
            resamples=self.s.agreement_resamples,
            seed=self.s.seed,
            min_fleiss=self.s.min_fleiss,
            min_judge_kappa=self.s.min_judge_kappa,
        )
        write_report(report, out)
        if subset is not None:
            record_gate(ws, report)
        return report


def run_audit(settings: AuditSettings, say: Say = print) -> AuditOutcome:
    """Run (or continue) an audit; see the module docstring for the steps."""
    from tiap.agreement.gate import require_scale_gate
    from tiap.cases import Workspace
    from tiap.cli.audit_index import write_index
    from tiap.judge import load_panel
    from tiap.rubric import load_rubric
    from tiap.traces.bundle import read_bundle

    s = settings
    s.out.mkdir(parents=True, exist_ok=True)
    panel = load_panel(s.panel)
    rubric = load_rubric(s.rubric)
    judges = [j.name for j in panel.judges]
    audit = Audit(s, say)
    bundle = read_bundle(s.bundle)
    audit.facts.update(
        bundle=str(s.bundle),
        dataset=bundle.config.dataset,
        panel=panel.name,
        judges=judges,
        rubric=rubric.id,
        rubric_hash=rubric.content_hash,
        workspace=str(s.workspace),
        subset=s.subset,
        humans=s.humans,
    )

    def finish(status: str, message: str, next_command: str | None = None) -> AuditOutcome:
        md, html = write_index(s.out, audit.facts, audit.steps, status, message, next_command)
        return AuditOutcome(
            status=status,  # type: ignore[arg-type]
            message=message,
            steps=audit.steps,
            index_md=md,
            index_html=html,
            next_command=next_command,
            facts=audit.facts,
        )

    audit.rescore(bundle)
    with Workspace(s.workspace) as ws:
        audit.extract(bundle, ws)
        audit.sample(ws)
        if not audit.judge(ws, panel, rubric, s.subset):
            return finish("budget", "stopped by --max-cost; run the same command to continue")
        if s.humans == "required":
            command = audit.humans_ready(ws)
            if command is not None:
                return finish(
                    "waiting",
                    "human labels are needed on the validation subset before the gate; "
                    "label them, then run the same audit command again",
                    command,
                )
        else:
            audit.step("human labels", "skipped", "--no-humans: the gate uses judges only")
        val = audit.agreement(ws, rubric, judges, s.subset, s.out / VALIDATION_DIR)
        audit.facts["validation"] = val.model_dump(mode="json")
        gate = val.gate
        audit.step(
            "validation agreement and gate",
            "done" if gate.passed else "failed",
            gate.status + ("" if gate.passed else ": " + "; ".join(gate.failures)),
        )
        if not gate.passed and not s.force:
            return finish(
                "gate_failed",
                "the scale gate failed: "
                + "; ".join(gate.failures)
                + " (see validation/report.md; improve the panel or rubric, or use --force)",
            )
        note = require_scale_gate(
            ws,
            panel=panel.name,
            judges=panel.judge_models,
            rubric=rubric,
            subset=None,
            force=s.force,
        )
        if note:
            audit.facts["forced"] = True
            say(f"warning: {note}")
        if not audit.judge(ws, panel, rubric, None):
            return finish("budget", "stopped by --max-cost; run the same command to continue")
        final = audit.agreement(ws, rubric, judges, None, s.out / FINAL_DIR)
        audit.facts["final"] = final.model_dump(mode="json")
        audit.facts["supported_share"] = final.supported_share
        audit.step("final report", "done", f"{final.n_cases} cases")
    return finish("complete", "audit complete")
