"""The whole audit, in order and resumably (``tiap audit``, ``tiap demo``, notebooks).

Steps, each safe to run again:

1. **rescore** the bundle's runs under every target (skipped when the bundle and
   the settings are unchanged since the last run);
2. **extract** contested credits into the workspace (idempotent: stable ids). A
   bundle that now gives another version of the cases than the workspace holds
   stops the audit with an error naming both versions, unless ``replace_stale``
   (``--replace-stale``): the stale cases and their labels are then retired (kept,
   out of every figure) and the audit goes on with the new version;
3. **sample** the validation subset (kept once drawn; drawn again when it went
   stale, its cases' version having been replaced);
4. **judge** the validation subset with the panel (resumes; answered calls are cached);
5. **humans**: unless ``humans="skip"``, wait until a person has labelled every
   validation case (the audit stops and names the ``tiap annotate`` command);
6. **validation report**: agreement on the validation subset and the scale gate
   (with ``humans="skip"`` every human label is left out: judges only); then, with
   ``probes`` (``--probes``) and when the audit goes on, the judges are probed on the
   validation subset (:mod:`tiap.audit.probe_step`);
7. **judge** every case, if the gate passed or ``force`` (recorded in the workspace);
8. **final report**: agreement and majority-vote prevalence over every case;
9. **index**: ``index.md`` and ``index.html`` linking everything, with every
   step's figures from the invocation that did its work (kept in the state file).

In qrels mode (``mode="qrels"``, the LMEB procedure of auditing relevance
labels) steps 1-2 are one: **draw qrels pairs** from the source into the
workspace as the subset ``qrels_subset`` (:mod:`tiap.audit.qrels_steps`); the
validation subset is drawn from those pairs, step 7 judges every drawn pair, and
the reports add each dataset's relevance-label verdict.

The pipeline only wires the packages together: each step calls their Python
API. :func:`run_audit_async` is the API; :func:`run_audit` runs it from
synchronous code, also inside a running event loop (a notebook).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tiap.aio import run_sync
from tiap.audit.case_steps import CaseSteps
from tiap.audit.humans import (
    annotate_command,
    human_progress,
    import_human_labels,
    waiting_detail,
    waiting_message,
)
from tiap.audit.index_page import write_index
from tiap.audit.outcome import AuditContext, AuditOutcome, AuditStatus
from tiap.audit.probe_step import ProbeSteps
from tiap.audit.qrels_steps import QrelsSteps, final_detail
from tiap.audit.settings import (
    FINAL_DIR,
    RESCORE_DIR,
    VALIDATION_DIR,
    AuditSettings,
    rescore_fingerprint,
)
from tiap.audit.state import AuditState, read_state, write_state
from tiap.audit.step_figures import (
    AgreementFigures,
    JudgeFigures,
    RescoreFigures,
    StepFigures,
)
from tiap.audit.steps import StepName, StepRecord, StepRun, StepStatus, step_title, utc_now
from tiap.errors import TiapError
from tiap.io import check_apart
from tiap.limits import check_share_threshold
from tiap.text import inert

if TYPE_CHECKING:
    from pathlib import Path

    from tiap.agreement.models import AgreementReport
    from tiap.cases import Workspace
    from tiap.judge.panel import Panel
    from tiap.judge.routes import OnRouteLoad
    from tiap.progress import Reporter
    from tiap.rubric import Rubric
    from tiap.traces.bundle import Bundle

Say = Callable[[str], None]


def say_inert(line: str) -> None:
    """The default ``say``: print the line made :func:`~tiap.text.inert` (step lines
    quote run, dataset and file names from the data)."""
    print(inert(line))


__all__ = ["Say", "run_audit", "run_audit_async"]


class _Audit(CaseSteps, QrelsSteps, ProbeSteps):
    """One invocation of the audit: its settings, the state and the step records."""

    def __init__(
        self,
        settings: AuditSettings,
        say: Say,
        state: AuditState,
        reporter: Reporter | None,
        on_route_load: OnRouteLoad | None = None,
    ) -> None:
        self.s = settings
        self.say = say
        self.state = state
        self.reporter = reporter
        self.on_route_load = on_route_load
        self.reached = 0

    # ----------------------------------------------------------------- records

    def _record(self, name: StepName) -> StepRecord:
        rec = self.state.steps.get(name)
        if rec is None:
            rec = StepRecord(step=name, title=step_title(name, self.s.subset, self.s.mode))
            self.state.steps[name] = rec
        return rec

    def _report(self, title: str, status: str, detail: str) -> None:
        self.reached += 1
        write_state(self.s.out, self.state)
        self.say(f"[{self.reached}] {title}: {status}" + (f" ({detail})" if detail else ""))

    def ran(
        self, name: StepName, status: StepStatus, detail: str, figures: StepFigures | None
    ) -> None:
        """The step did its work now (or found something new)."""
        rec = self._record(name)
        rec.add(StepRun(at=utc_now(), status=status, detail=detail, figures=figures))
        self._report(rec.title, status, detail)

    def found_done(self, name: StepName, why: str) -> None:
        """The step's work was done by an earlier invocation: nothing to do now."""
        rec = self._record(name)
        rec.mark_found_done(utc_now(), why)
        self._report(rec.title, "skipped", why)

    def checked(
        self, name: StepName, status: StepStatus, detail: str, figures: StepFigures | None
    ) -> None:
        """A step that is evaluated every time (human labels, agreement): a new run
        when its outcome differs from the latest one, else the latest holds."""
        rec = self._record(name)
        latest = rec.latest
        if latest is None or latest.status != status or latest.figures != figures:
            self.ran(name, status, detail, figures)
            return
        rec.mark_found_done(utc_now(), "unchanged")
        self._report(rec.title, status, detail)

    # ------------------------------------------------------------------- steps

    def rescore(self, bundle: Bundle) -> None:
        from tiap.rescore import rescore_bundle, write_outputs

        out = self.s.out / RESCORE_DIR
        fp = rescore_fingerprint(self.s)
        rec = self.state.steps.get(StepName.RESCORE)
        if (
            self.state.rescore_fingerprint == fp
            and rec is not None
            and isinstance(rec.figures, RescoreFigures)
            and (out / "report.json").exists()
        ):
            self.found_done(StepName.RESCORE, "bundle and settings unchanged")
            return
        result = rescore_bundle(
            bundle, ks=self.s.ks, resamples=self.s.rescore_resamples, seed=self.s.seed
        )
        write_outputs(result, out)
        self.state.rescore_fingerprint = fp
        self.ran(StepName.RESCORE, "done", f"{out}/report.md", RescoreFigures.of(result.report))

    async def judge(
        self,
        ws: Workspace,
        panel: Panel,
        rubric: Rubric,
        subset: str | None,
        force: bool,
        step: StepName | None = None,
    ) -> bool:
        """Judge; returns False when the budget stopped the run. Beyond the validation
        subset the plan applies the scale gate (``force`` goes past it, recorded).
        ``step``: the step it is (default: the subset's, or every case's)."""
        from tiap.judge import plan_run
        from tiap.judge.reporting import execute_with_progress

        name = step or (StepName.JUDGE_SUBSET if subset is not None else StepName.JUDGE_ALL)
        plan = plan_run(ws, panel, rubric, subset=subset, force=force)
        forced = plan.gate.forced
        if plan.gate_note:
            self.say(f"warning: {plan.gate_note}")
        summary = await execute_with_progress(
            ws,
            plan,
            max_cost=self.s.max_cost,
            progress=self.s.progress,
            reporter=self.reporter if self.s.progress else None,
            on_route_load=self.on_route_load,
        )
        invalid = sum(summary.invalid.values())
        shared = (
            f" ({summary.deduplicated} judgments shared an identical request, sent once)"
            if summary.deduplicated
            else ""
        )
        detail = (
            f"{summary.cases} cases x {len(summary.judges)} judges: {summary.calls} calls"
            f"{shared}, {summary.cache_hits} cached, {summary.valid} valid, {invalid} invalid"
        )
        status: StepStatus = "done"
        if summary.errors:
            status = "failed"
        elif summary.stopped_by_budget:
            status, detail = "stopped", detail + "; stopped by the budget"
        rec = self.state.steps.get(name)
        idle = summary.calls == 0 and summary.cache_hits == 0
        if idle and status == "done" and rec is not None and rec.status == "done":
            self.found_done(name, "every case already judged by every judge")
        else:
            self.ran(name, status, detail, JudgeFigures(summary=summary, forced=forced))
        if summary.errors:
            raise TiapError("judges stopped: " + "; ".join(summary.errors))
        return not summary.stopped_by_budget

    def humans(self, ws: Workspace, rubric: Rubric) -> tuple[str, str] | None:
        """None when the audit may go on to the gate; else the command to run and why
        it waits. Human labels count when made under the rubric's version (the
        judges')."""
        s = self.s
        if s.human_labels is not None:
            import_human_labels(ws, s.human_labels, rubric)
        if s.humans == "skip":
            figures = human_progress(ws, s.subset, required=False)
            detail = "--no-humans: the gate uses judges only"
            if figures.left_out:
                detail += f"; labels of {', '.join(figures.left_out)} left out of the reports"
            self.checked(StepName.HUMANS, "skipped", detail, figures)
            return None
        figures = human_progress(ws, s.subset, rubric_hash=rubric.content_hash)
        if figures.complete:
            detail = f"complete: {', '.join(figures.complete)}"
            if figures.other_version:
                others = ", ".join(f"{r} {n}" for r, n in figures.other_version.items())
                detail += f"; not counted, made under another version of the rubric: {others}"
            self.checked(StepName.HUMANS, "done", detail, figures)
            return None
        self.checked(StepName.HUMANS, "waiting", waiting_detail(figures), figures)
        overlap = len(ws.overlap_ids(s.subset))
        return annotate_command(str(s.workspace), s.subset, s.rubric_name), waiting_message(
            figures, overlap
        )

    def agreement(
        self,
        ws: Workspace,
        rubric: Rubric,
        judges: list[str],
        subset: str | None,
        out: Path,
        *,
        gate: bool | None = None,
    ) -> AgreementReport:
        """The agreement report on ``subset`` (every case: ``None``); its gate verdict
        is recorded when ``gate`` (default: for a subset)."""
        from tiap.agreement import compute_report, labels_from_workspace, record_gate, write_report
        from tiap.agreement.diagnostics import with_diagnostics

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
            min_cases=self.s.min_cases,
            min_valid=self.s.min_valid,
            gate_on=self.s.gate_on,
            gate_raters=self.s.gate_raters,
            min_confirmed=self.s.min_confirmed,
            max_missed=self.s.max_missed,
            min_decided=self.s.min_decided,
            # judges only: human labels are neither raters nor the reference (recorded)
            no_humans=self.s.humans == "skip",
        )
        report = with_diagnostics(ws, report)  # the latest probe and drift results
        write_report(report, out)
        record = subset is not None if gate is None else gate
        if record:
            record_gate(ws, report)
        return report


async def run_audit_async(
    settings: AuditSettings,
    say: Say | None = None,
    *,
    reporter: Reporter | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> AuditOutcome:
    """Run (or continue) an audit; see the module doc for the steps. ``say``
    receives one line per step and warnings (default: :func:`say_inert`);
    ``reporter`` (:class:`tiap.progress.Reporter`) the judging steps' progress (none
    without one); ``on_route_load`` is called with a route's name before a judging
    step loads the library that route needs (``litellm``: seconds, before the first
    judgment)."""
    from tiap.cases import Workspace

    say = say or say_inert
    from tiap.agreement.files import read_label_rows
    from tiap.cases.qrels_source import read_source
    from tiap.judge import load_panel
    from tiap.rubric import load_rubric
    from tiap.traces.bundle import read_bundle

    s = settings
    check_share_threshold("min_confirmed", s.min_confirmed)
    check_share_threshold("max_missed", s.max_missed)
    if s.humans == "skip" and s.reference is not None:
        raise TiapError(
            "--reference names the human reference, and --no-humans leaves human labels "
            "out: use one of them"
        )
    check_apart(
        s.out,
        [("bundle" if s.mode != "qrels" else "source", s.bundle), ("panel", s.panel),
         ("rubric", s.rubric), ("run", s.run), ("human labels", s.human_labels)],
    )  # fmt: skip
    started = utc_now()
    # every input is read and checked before anything is created (--out, the workspace)
    panel = load_panel(s.panel)
    panel.require_extras()
    rubric = load_rubric(s.rubric_name)
    rubric.require_case_kind(s.mode)
    judges = [j.name for j in panel.judges]
    if s.human_labels is not None:
        read_label_rows(s.human_labels)  # its rows checked as a table before anything is made
    if s.mode == "qrels":
        source = read_source(s.bundle)
        dataset = ", ".join(t.dataset for t in source.tasks)
    else:
        bundle = read_bundle(s.bundle)
        dataset = bundle.config.dataset
        if not s.workspace.exists():  # a new workspace only for cases to judge
            _require_contested(bundle, s)
    audit = _Audit(s, say, AuditState(), reporter, on_route_load)
    drawn = audit.draw(source) if s.mode == "qrels" else None
    try:
        s.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. --out names a file
        raise TiapError(f"{s.out}: cannot create the output directory ({exc.strerror})") from None
    state, warning = read_state(s.out)
    if warning:
        say(f"warning: {warning}")
    audit.state = state.for_context(s.context_key())
    context = AuditContext(
        bundle=str(s.bundle),
        dataset=dataset,
        panel=panel.name,
        judges=judges,
        rubric=rubric.id,
        rubric_hash=rubric.content_hash,
        workspace=str(s.workspace),
        subset=s.subset,
        humans=s.humans,
        mode=s.mode,
    )
    reports: dict[str, AgreementReport] = {}

    def finish(status: AuditStatus, message: str, next_command: str | None = None) -> AuditOutcome:
        records = audit.state.ordered()
        md, html = write_index(s.out, context, records, status, message, next_command)
        return AuditOutcome(
            status=status,
            message=message,
            started_at=started,
            context=context,
            steps=records,
            index_md=md,
            index_html=html,
            next_command=next_command,
            validation=reports.get("validation"),
            final=reports.get("final"),
        )

    if s.mode == "qrels":
        await asyncio.sleep(0)  # a point where Ctrl-C (cancellation) takes effect
        with Workspace(s.workspace) as ws:
            audit.qrels_cases(ws, drawn)  # type: ignore[arg-type]
            status = await _validate_and_scale(
                audit, ws, panel, rubric, judges, reports, s.qrels_subset
            )
    else:
        audit.rescore(bundle)
        await asyncio.sleep(0)  # a point where Ctrl-C (cancellation) takes effect
        with Workspace(s.workspace) as ws:
            audit.extract(bundle, ws)
            status = await _validate_and_scale(audit, ws, panel, rubric, judges, reports, None)
    return finish(*status)


def _require_contested(bundle: Bundle, s: AuditSettings) -> None:
    """A bundle without a contested credit leaves nothing to judge: an error before
    any file is created."""
    from tiap.cases.extract import find_contested

    _, found = find_contested(bundle, k=s.k)
    if not found.contested:
        raise TiapError(
            f"no contested credits in {s.bundle} at k={found.k}: nothing to judge "
            "(see 'tiap rescore' for its figures)"
        )


async def _validate_and_scale(
    audit: _Audit,
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    judges: list[str],
    reports: dict[str, AgreementReport],
    every: str | None,
) -> tuple[AuditStatus, str, str | None]:
    """The validation subset, its judges, human labels, the gate, then judging
    ``every`` case (a subset's name; ``None``: the workspace's) and the final report.
    Returns how the audit ends: (status, message, next command)."""
    s = audit.s
    budget = "stopped by --max-cost; run the same command to continue"
    audit.sample(ws)
    if not await audit.judge(ws, panel, rubric, s.subset, force=False):
        return "budget", budget, None
    waiting = audit.humans(ws, rubric)
    if waiting is not None:
        command, message = waiting
        return "waiting", message, command
    val = audit.agreement(ws, rubric, judges, s.subset, s.out / VALIDATION_DIR)
    reports["validation"] = val
    gate = val.gate
    audit.checked(
        StepName.VALIDATION,
        "done" if gate.passed else "failed",
        gate.status + ("" if gate.passed else ": " + "; ".join(gate.failures)),
        AgreementFigures.of(val),
    )
    if not gate.passed and not s.force:
        return (
            "gate_failed",
            "the scale gate failed: "
            + "; ".join(gate.failures)
            + " (see validation/report.md; improve the panel or rubric, or use --force)",
            None,
        )
    if s.probes and not await audit.probe(ws, panel, rubric):
        return "budget", budget, None
    if not await audit.judge(ws, panel, rubric, every, force=s.force, step=StepName.JUDGE_ALL):
        return "budget", budget, None
    final = audit.agreement(ws, rubric, judges, every, s.out / FINAL_DIR, gate=False)
    reports["final"] = final
    audit.checked(StepName.FINAL, "done", final_detail(final), AgreementFigures.of(final))
    return "complete", "audit complete", None


def run_audit(
    settings: AuditSettings,
    say: Say | None = None,
    *,
    reporter: Reporter | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> AuditOutcome:
    """:func:`run_audit_async` from synchronous code; inside a running event loop
    (a notebook) it runs on a private loop in a worker thread (see :mod:`tiap.aio`)."""
    return run_sync(
        lambda: run_audit_async(settings, say, reporter=reporter, on_route_load=on_route_load)
    )
