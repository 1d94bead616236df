"""The audit's steps that put cases into the workspace: **extract** the contested
credits of the bundle and **sample** the validation subset (steps 2 and 3 of
:mod:`tiap.audit.pipeline`), each safe to run again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.audit.settings import RESCORE_DIR
from tiap.audit.step_figures import ExtractFigures, SampleFigures
from tiap.audit.step_host import StepHost
from tiap.audit.steps import StepName
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.cases import Workspace
    from tiap.traces.bundle import Bundle


class CaseSteps(StepHost):
    """Extracting the cases and drawing the validation subset."""

    def extract(self, bundle: Bundle, ws: Workspace) -> None:
        from tiap.cases.extract import extract_cases
        from tiap.cases.fingerprint import short

        report = extract_cases(bundle, ws, k=self.s.k, replace_stale=self.s.replace_stale)
        before = self.state.steps.get(StepName.EXTRACT)
        earlier = before.figures if before is not None else None
        version = report.version
        fp = short(version.fingerprint if version is not None else None)
        if (
            report.added == 0
            and version is not None
            and version.status == "same"
            and isinstance(earlier, ExtractFigures)
            and (earlier.report.contested, earlier.report.k) == (report.contested, report.k)
        ):
            self.found_done(
                StepName.EXTRACT,
                f"{report.contested} cases at k={report.k} of bundle version {fp}, none new",
            )
        else:
            detail = f"{report.contested} cases at k={report.k}, {report.added} new"
            if version is not None and version.status == "moved":
                detail += (
                    f", {version.replaced} stored again with their new content; bundle "
                    f"version {short(version.previous)} -> {fp}: {version.retired} stale "
                    f"cases retired with {version.retired_labels} labels, {version.carried} "
                    "unchanged"
                )
            else:
                detail += f"; bundle version {fp}"
            self.ran(StepName.EXTRACT, "done", detail, ExtractFigures(report=report))
        if ws.count_cases("contested") == 0:
            raise TiapError(
                f"no contested credits in {self.s.bundle} at k={report.k}: nothing to judge "
                "(the rescore report is in " + str(self.s.out / RESCORE_DIR) + ")"
            )

    def sample(self, ws: Workspace) -> None:
        from tiap.cases.sample import default_overlap, sample_subset

        name = self.s.subset
        stale = name in ws.subsets() and ws.subset_is_stale(name)
        if name in ws.subsets() and not stale:
            params = ws.subset_params(name)
            if params.get("kind") != "validation":
                raise TiapError(f"subset '{name}' exists and is not a validation subset")
            rec = self.state.steps.get(StepName.SAMPLE)
            if rec is not None and rec.runs:
                self.found_done(StepName.SAMPLE, f"'{name}' already drawn")
                return
            cases, overlap = len(ws.case_ids(subset=name)), len(ws.overlap_ids(name))
            pool, seed = params.get("pool_size"), params.get("seed")
            self.ran(
                StepName.SAMPLE,
                "done",
                f"'{name}' already drawn: {cases} cases, overlap {overlap}",
                SampleFigures(
                    subset=name,
                    cases=cases,
                    overlap=overlap,
                    pool_size=pool if isinstance(pool, int) else None,
                    seed=seed if isinstance(seed, int) else None,
                ),
            )
            return
        if stale and ws.subset_params(name).get("kind") != "validation":
            raise TiapError(f"subset '{name}' exists and is not a validation subset")
        overlap_n = self.s.overlap if self.s.overlap is not None else default_overlap(self.s.n)
        result = sample_subset(
            ws,
            name=name,
            n=self.s.n,
            overlap=overlap_n,
            seed=self.s.seed,
            from_runs=self.s.from_runs,
            kind=self.s.mode,
            replace=stale,
        )
        again = " drawn again (its cases' bundle version was replaced)" if stale else ""
        self.ran(
            StepName.SAMPLE,
            "done",
            f"'{name}'{again}: {len(result.case_ids)} cases, overlap {len(result.overlap_ids)}",
            SampleFigures(
                subset=name,
                cases=len(result.case_ids),
                overlap=len(result.overlap_ids),
                pool_size=result.pool_size,
                seed=self.s.seed,
            ),
        )
