"""The audit's probe step (``probes``, ``tiap audit --probes order,repeat``): after the
gate, when the audit goes on (the gate passed, or ``force``), each judge of the panel
is probed on the validation subset (:func:`tiap.probe.run_probes`, the Python API of
``tiap judge probe``). The probe report goes to ``probe/`` in the audit's output and
its results are recorded in the workspace, so the final agreement report shows them in
its ``diagnostics`` section. Probe judgments are cached, leased and budgeted like every
judgment; a run the budget stopped resumes with the same audit command."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tiap.audit.settings import PROBE_DIR
from tiap.audit.step_figures import ProbeFigures
from tiap.audit.step_host import StepHost
from tiap.audit.steps import StepName
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.cases import Workspace
    from tiap.cases.diagnostic_events import ProbeEvent
    from tiap.judge.panel import Panel
    from tiap.progress import Reporter
    from tiap.rubric import Rubric


def _recorded(ws: Workspace, event: ProbeEvent) -> bool:
    """Is the latest recorded probe event this one's results (the same judges' figures
    on the same subset, panel, rubric and kinds)?"""
    from tiap.cases.diagnostic_events import ProbeEvent
    from tiap.cases.events import events_newest_first

    latest = next(events_newest_first(ws, ProbeEvent), None)
    if latest is None:
        return False
    fields = ("subset", "panel", "rubric_hash", "kinds", "repeats", "seed", "judges")
    return all(getattr(latest, f) == getattr(event, f) for f in fields)


class ProbeSteps(StepHost):
    """The probe step of the audit (a part of :class:`tiap.audit.pipeline._Audit`,
    which provides the settings, the state and the step records)."""

    reporter: Reporter | None

    async def probe(self, ws: Workspace, panel: Panel, rubric: Rubric) -> bool:
        """Probe the panel on the validation subset; False when the budget stopped it."""
        from tiap.cases.events import ReportRef, record_event
        from tiap.probe.probe_report import write_probe_report
        from tiap.probe.run import run_probes

        s = self.s
        run = await run_probes(
            ws,
            panel,
            rubric,
            subset=s.subset,
            kinds=s.probes,
            repeats=s.probe_repeats,
            seed=s.seed,
            max_cost=s.max_cost,
            reporter=self.reporter if s.progress else None,
            record=False,
        )
        summary, event = run.summary, run.result
        verdicts = {j.name: j.verdict for j in event.judges}
        detail = (
            f"{', '.join(s.probes)} on '{s.subset}': {summary.calls} calls, "
            f"{summary.cache_hits} cached; "
            + "; ".join(f"{name}: {verdict}" for name, verdict in verdicts.items())
        )
        figures = ProbeFigures(
            kinds=list(s.probes), calls=summary.calls, cached=summary.cache_hits, verdicts=verdicts
        )
        if summary.errors:
            self.ran(StepName.PROBES, "failed", detail, figures)
            raise TiapError("judges stopped: " + "; ".join(summary.errors))
        if summary.stopped_by_budget:
            self.ran(StepName.PROBES, "stopped", detail + "; stopped by the budget", figures)
            return False
        out = Path(s.out) / PROBE_DIR
        digest = write_probe_report(event, out)
        rec = self.state.steps.get(StepName.PROBES)
        done_before = rec is not None and rec.status == "done"
        if done_before and summary.calls == 0 and _recorded(ws, event):
            self.found_done(StepName.PROBES, "every probe already judged and recorded")
            return True
        ref = ReportRef(out_dir=str(out.resolve()), report_json_sha256=digest)
        record_event(ws, event.model_copy(update={"report": ref}))
        self.ran(StepName.PROBES, "done", detail, figures)
        return True
