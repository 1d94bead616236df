"""Is each judge fit to judge? Probes re-judge a subset's cases under controlled
perturbations (``order``, ``verbosity``, ``repeat``, ``injection``:
:mod:`tiap.probe.perturb`) through the judges' one path, store the judgments as
probe labels apart from the audit's (:mod:`tiap.cases.probe_store`), and report
each judge's flip rates and verdict (:mod:`tiap.probe.figures`)."""

from tiap.probe.anchor import freeze_anchor
from tiap.probe.drift import DriftRun, run_drift
from tiap.probe.probe_plan import ProbePlan, parse_kinds, plan_probes
from tiap.probe.run import ProbeRun, probe_panel, run_probes

__all__ = [
    "DriftRun",
    "ProbePlan",
    "ProbeRun",
    "freeze_anchor",
    "parse_kinds",
    "plan_probes",
    "probe_panel",
    "run_drift",
    "run_probes",
]
