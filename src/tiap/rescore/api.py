"""The rescoring API: :func:`rescore_bundle`, :class:`RescoreResult`, :func:`write_outputs`.

Usable from a notebook::

    from tiap.traces.bundle import read_bundle
    from tiap.rescore import rescore_bundle, write_outputs

    result = rescore_bundle(read_bundle("my-bundle"), ks=(10, 60))
    result.per_query                      # pandas DataFrame, the per_query.csv layout
    result.report.headline                # figures an audit quotes
    write_outputs(result, "out/")         # per_query.csv, report.json, report.md, report.html
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from tiap.errors import TiapError
from tiap.io import write_json
from tiap.limits import MAX_RESCORE_RESAMPLES, check_resamples, check_seed
from tiap.rescore import sections
from tiap.rescore.analysis import build_report
from tiap.rescore.common import Settings
from tiap.rescore.metrics import DEFAULT_KS, Measure, parse_ks, parse_measure, parse_measures
from tiap.rescore.per_query_csv import per_query_frame, write_per_query_csv
from tiap.rescore.report_models import RescoreReport
from tiap.rescore.scores import ScoreTable, score_runs
from tiap.rescore.subsets import DEFAULT_SUBSETS, check_subsets
from tiap.rescore.targets import DEFAULT_TARGETS
from tiap.stats import CONFIDENCE as DEFAULT_CONFIDENCE
from tiap.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, Progress
from tiap.traces.bundle import Bundle, no_queries_problem

PER_QUERY_FILE = "per_query.csv"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"


@dataclass
class RescoreResult:
    """Scores and report of one rescoring; ``per_query`` is built on first access."""

    scores: ScoreTable
    report: RescoreReport

    @cached_property
    def per_query(self) -> Any:
        """pandas DataFrame with the columns of ``per_query.csv`` (``NaN`` for empty targets)."""
        return per_query_frame(self.scores)

    def report_dict(self) -> dict[str, Any]:
        """``report.json`` as a dict."""
        return self.report.model_dump(mode="json")

    def markdown(self) -> str:
        return sections.render(self.report)

    def html(self) -> str:
        """``report.html``: the same tables as ``report.md``, with inline SVG figures."""
        from tiap.rescore import report_html

        return report_html.render(self.report)


def _measures(
    metrics: str | Sequence[str | Measure] | None, ks: tuple[int, ...]
) -> tuple[Measure, ...]:
    if metrics is None or isinstance(metrics, str):
        return parse_measures(metrics, ks)
    parsed: list[Measure] = []
    for m in metrics:
        if isinstance(m, Measure):
            parsed.append(parse_measure(str(m)))
        else:
            parsed.extend(parse_measures([m], ks))
    return tuple(dict.fromkeys(parsed))


def choose_primary(measures: Sequence[Measure], k: int) -> Measure:
    """nDCG at the bundle's ``k`` if computed, else the first nDCG, else the first measure."""
    for m in measures:
        if m.name == "ndcg" and m.k == k:
            return m
    return next((m for m in measures if m.name == "ndcg"), measures[0])


def rescore_bundle(
    bundle: Bundle,
    *,
    ks: Sequence[int] | str = DEFAULT_KS,
    metrics: str | Sequence[str | Measure] | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
    runs: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    primary: str | None = None,
    subsets: str = DEFAULT_SUBSETS,
    pool_raw_only: bool = False,
    progress: Progress | None = None,
) -> RescoreResult:
    """Rescore a bundle's runs under each target and analyse the target sensitivity.

    ``metrics`` names measures (``"ndcg@10"``) or families expanded over ``ks``
    (``"ndcg,recall"``); ``None`` means nDCG, Recall, MRR, MAP, P and Hit at
    every cut-off. ``primary`` picks the measure the headline quotes (default:
    nDCG at the bundle's ``k`` when computed). ``subsets`` picks the queries winner
    flips and design recommendations compare: ``"matched"`` (the same for every
    target, the paper's) or ``"per-target"`` (:mod:`tiap.rescore.subsets`); the
    report carries the other view beside it. Runs on raw-only stores are left out of
    the pooled figures unless ``pool_raw_only`` (:mod:`tiap.rescore.pooling`).
    ``progress(done, total)`` follows
    the bootstrap's resamples (:class:`tiap.stats.paired.BootstrapBatch`). The
    bundle is not modified.
    """
    cutoffs = parse_ks(ks)
    measures = _measures(metrics, cutoffs)
    check_resamples("--resamples", resamples, minimum=1, maximum=MAX_RESCORE_RESAMPLES)
    check_seed("--seed", seed)
    check_subsets(subsets)
    if not (isinstance(confidence, float | int) and 0.0 < confidence < 1.0):
        raise TiapError(f"confidence must be between 0 and 1 (got {confidence})")
    if not bundle.queries:
        raise TiapError(no_queries_problem(bundle))
    if primary is not None:
        main = parse_measure(primary)
        if main not in measures:
            raise TiapError(f"primary measure '{main}' is not among the measures computed")
    else:
        main = choose_primary(measures, bundle.config.k)
    table = score_runs(bundle, measures, runs=runs, targets=targets)
    settings = Settings(
        measures=measures,
        targets=table.targets,
        primary=main,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        subsets=subsets,
        pool_raw_only=bool(pool_raw_only),
    )
    report = build_report(bundle, table, settings, progress=progress)
    return RescoreResult(scores=table, report=report)


def write_outputs(result: RescoreResult, out_dir: str | Path) -> dict[str, Path]:
    """Write ``per_query.csv``, ``report.json``, ``report.md``, ``report.html``; their paths."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise TiapError(f"{out}: output path exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TiapError(f"{out}: cannot create output directory ({exc.strerror})") from None
    paths = {
        "per_query": out / PER_QUERY_FILE,
        "report_json": out / REPORT_JSON,
        "report_md": out / REPORT_MD,
        "report_html": out / REPORT_HTML,
    }
    write_per_query_csv(result.scores, paths["per_query"])
    write_json(paths["report_json"], result.report_dict())
    paths["report_md"].write_text(result.markdown(), encoding="utf-8", newline="\n")
    paths["report_html"].write_text(result.html(), encoding="utf-8", newline="\n")
    return paths


def rescore_path(bundle_dir: str | Path, out_dir: str | Path, **options: Any) -> RescoreResult:
    """Read a bundle directory, rescore it and write the four files."""
    from tiap.traces.bundle import read_bundle

    result = rescore_bundle(read_bundle(bundle_dir), **options)
    write_outputs(result, out_dir)
    return result
