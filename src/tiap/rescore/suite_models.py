"""The suite report's models (``suite.json``): every task's means per run and target, the
datasets and memory types they group into, Mean(Dataset) and Mean(Type), and the best
runs (:mod:`tiap.rescore.suite` computes them, :mod:`tiap.rescore.suite_render` writes
``suite.md`` and ``suite.html``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tiap.rescore.report_models import Float, Share

Means = dict[str, dict[str, Float]]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskHeadline(_Model):
    """A task's target sensitivity on the suite's measure (from its report's headline)."""

    instability: dict[str, Share]
    n_run_pairs: int
    winner_flips: int
    n_design_families: int
    design_flips: int
    #: the queries the winner flips and design flips compare: "matched" or "per-target"
    subsets: str = "matched"
    #: runs whose target ordering on the suite's measure is defined; of them, those that
    #: are not monotone (the paper's Table 7: Source >= Canonical >= Raw) and those that
    #: are not containment consistent (tiap: Source >= max(Raw, Canonical))
    n_ordered_runs: int = 0
    n_not_monotone: int = 0
    n_not_containment_consistent: int = 0


class SuiteTask(_Model):
    task: str
    dataset: str
    memory_type: str
    bundle_name: str | None
    n_queries: int
    means: Means
    n_evaluated: dict[str, dict[str, int]]
    headline: TaskHeadline


class SuiteGroup(_Model):
    """A dataset (its tasks) or a memory type (its datasets) and its means."""

    name: str
    memory_type: str
    members: list[str]
    means: Means


class SuiteReport(_Model):
    schema_version: int = 1
    measure: str
    targets: list[str]
    runs: list[str]
    method: dict[str, str]
    tasks: list[SuiteTask]
    datasets: list[SuiteGroup]
    memory_types: list[SuiteGroup]
    mean_dataset: Means
    mean_type: Means
    #: ``mean_dataset`` / ``mean_type`` -> target -> the best run(s) there.
    winners: dict[str, dict[str, list[str]]]
    #: whether the best run differs between targets.
    winner_flip: dict[str, bool]
    #: the scale suite.md and suite.html show scores on: 1 (0-1, as stored here) or 100
    #: (LMEB's 0-100); the scores in this file are always on 0-1
    scale: int = 1
