"""The audit's steps for relevance annotations (``mode="qrels"``, the LMEB
procedure): draw qrels pairs from the source into the workspace; the rest of the
procedure (validation subset, panel, human spot checks, gate, every drawn pair,
final report) is the audit's own, run on those pairs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.audit.step_figures import QrelsCasesFigures
from tiap.audit.step_host import StepHost
from tiap.audit.steps import StepName
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.agreement.models import AgreementReport
    from tiap.cases import Workspace
    from tiap.cases.from_qrels import QrelsImportReport
    from tiap.cases.models import Case
    from tiap.cases.qrels_source import QrelsSource


class QrelsSteps(StepHost):
    """The qrels step of the audit (a part of :class:`tiap.audit.pipeline._Audit`,
    which provides the settings, the state and the step records)."""

    def draw(self, source: QrelsSource) -> tuple[list[Case], QrelsImportReport]:
        """The pairs the audit stores (drawn before the workspace is opened, so bad
        input creates none)."""
        from tiap.cases.from_qrels import draw_qrels

        s = self.s
        return draw_qrels(
            source,
            per_dataset=s.per_dataset,
            seed=s.seed,
            negatives=s.negatives,
            run=s.run,
            subset=s.qrels_subset,
            group_by=s.group_by,
        )

    def qrels_cases(self, ws: Workspace, drawn: tuple[list[Case], QrelsImportReport]) -> None:
        """Store the drawn pairs (idempotent: the same source and settings draw the
        same pairs, which are then found already drawn)."""
        from tiap.cases.from_qrels import store_qrels

        s = self.s
        try:
            report = store_qrels(ws, *drawn, replace_stale=s.replace_stale)
        except TiapError as exc:
            if f"subset '{s.qrels_subset}' exists" not in str(exc):
                raise
            raise TiapError(
                f"{ws.path}: its qrels pairs (subset '{s.qrels_subset}') were drawn from "
                "another source or with other settings; an audit keeps its pairs once "
                "drawn: use another --out (or --db)"
            ) from None
        detail = f"{report.cases} pairs from {len(report.datasets)} dataset(s)"
        negatives = sum(c.negatives for c in report.datasets.values())
        if negatives:
            detail += f" ({negatives} negatives from run {report.run})"
        before = self.state.steps.get(StepName.EXTRACT)
        earlier = before.figures if before is not None else None
        if report.subset_status == "unchanged" and isinstance(earlier, QrelsCasesFigures):
            self.found_done(StepName.EXTRACT, f"{detail}, already drawn")
        else:
            self.ran(StepName.EXTRACT, "done", detail, QrelsCasesFigures(report=report))


def _calibrated_detail(report: AgreementReport) -> str:
    """``; supports 41.0%, calibrated 38.2% [31.0%, 45.4%]`` (empty without a reference)."""
    from tiap.report.numbers import pct

    c = report.calibrated
    if not c.available or c.overall is None or not report.labels:
        return ""
    first = report.labels[0]
    x = c.overall.labels.shares[first]
    ci = f" [{pct(x.ppi.ci[0])}, {pct(x.ppi.ci[1])}]" if x.ppi.ci else ""
    return f"; {first} {pct(x.panel.value)}, calibrated {pct(x.ppi.value)}{ci}"


def final_detail(report: AgreementReport) -> str:
    """The final step's line: its cases and their bundle version, and each dataset's
    verdict on qrels pairs."""
    from tiap.cases.fingerprint import short

    version = f"bundle version {short(report.source.bundle_version)}"
    q = report.qrels
    if q is None:
        return f"{report.n_cases} cases of {version}" + _calibrated_detail(report)
    verdicts = "; ".join(f"{name}: {g.verdict}" for name, g in q.by_dataset.items())
    return f"{report.n_cases} pairs of {version}; {verdicts}"
