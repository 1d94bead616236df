"""`tiap rescore`: score a bundle's runs under each target and report the target sensitivity."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tiap.cli import output
from tiap.report.numbers import MISSING, bounds, num, signed

if TYPE_CHECKING:
    from tiap.rescore.report_models import RescoreReport

#: Bundle warnings printed on the terminal (all are counted in report.json).
SHOWN_WARNINGS = 5


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _print_summary(report: RescoreReport, paths: dict[str, Path]) -> None:
    from rich.table import Table

    from tiap.rescore.compare import fixed_label, telling_apart
    from tiap.text import inert as v

    console = output.console()
    m = report.parameters.primary_measure
    targets = report.parameters.targets
    means = Table(title=f"{v(report.dataset)}: mean {m} (each target on its own queries)")
    means.add_column("run")
    for t in targets:
        means.add_column(t, justify="right")
        means.add_column("n", justify="right", style="dim")
    for run, rr in report.runs.items():
        cells = []
        for t in targets:
            cells += [num(rr.targets[t].means[m]), str(rr.targets[t].n_evaluated)]
        means.add_row(v(run), *cells)
    console.print(means)

    diffs = Table(title=f"paired Δ {m} on shared queries (95% CI)")
    for col in ("run", "pair", "n"):
        diffs.add_column(col, justify="right" if col == "n" else "left")
    diffs.add_column("Δ", justify="right")
    diffs.add_column("95% CI", justify="right")
    for run, rr in report.runs.items():
        for name, pair in rr.pairs.items():
            iv = pair.difference[m]
            ci = MISSING if iv.ci_low is None else bounds(iv.ci_low, iv.ci_high, sign=True)
            diffs.add_row(v(run), name, str(pair.n_shared), signed(iv.mean), ci)
    console.print(diffs)

    for name, share in report.headline.instability.items():
        if share.share_changed is not None and share.share_large is not None:
            console.print(
                f"{name}: {m} changes for {share.share_changed:.1%} of {share.n} shared "
                f"(query, run) pairs (by ≥ {report.parameters.large_change:g}: "
                f"{share.share_large:.1%})"
            )
    view = report.parameters.subsets
    console.print(
        f"winner flips on {m} ({view} subsets): {len(report.headline.winner_flips)} of "
        f"{len(report.run_pairs)} run pairs "
        f"({report.headline.n_winner_flips_all_measures} over all measures; design "
        "winners below on the same subsets)"
    )
    design = report.headline.design
    for family in design:
        winners = ", ".join(f"{t}: {v('/'.join(w)) or MISSING}" for t, w in family.winner.items())
        same_key = [f.fixed for f in design if f.key == family.key]
        group = v(fixed_label(telling_apart(family.fixed, same_key)))
        key = v(family.key)
        console.print(f"best {key} on {m}{f' ({group})' if group else ''}: {winners}")
    excluded = sum(sum(v.values()) for v in report.exclusions.values())
    if excluded:
        console.print(
            f"excluded: {excluded} (run, target, query) with an empty target (see report.md)"
        )
    if report.warnings.count:
        console.print(f"bundle warnings: {report.warnings.count} (listed in report.json)")
    _print_answers(report)
    for key in ("per_query", "report_json", "report_md", "report_html"):
        console.print(f"wrote {paths[key]}", soft_wrap=True)


def _print_answers(report: RescoreReport) -> None:
    """One line per run with answers: its answer F1 and the target that predicts it best."""
    from tiap.text import inert as v

    answers = report.answers
    if answers is None:
        return
    for run, r in answers.runs.items():
        best = r.best_target
        r_best = r.correlations[best].pearson if best is not None else None
        predictor = f"{best} (Pearson r {signed(r_best)})" if best is not None else MISSING
        output.echo(
            f"answers {v(run)}: answer F1 {num(r.f1.mean)} "
            f"{bounds(r.f1.ci_low, r.f1.ci_high)} over {r.n_scored} queries; best predictor "
            f"of answer F1 on {answers.measure}: {predictor}"
        )


def register(app: typer.Typer) -> None:
    """Add the ``rescore`` command to ``app``."""

    @app.command("rescore")
    def rescore(
        bundles: list[Path] = typer.Argument(
            ...,
            help="Trace bundle directory; or several, or a directory of bundles (e.g. one per "
            "LMEB task), for a suite report.",
        ),
        out: Path = typer.Option(..., "--out", "-o", help="Output directory (created if needed)."),
        k: str = typer.Option("10,60", "--k", help="Cut-offs, comma-separated."),
        metrics: str | None = typer.Option(
            None,
            "--metrics",
            help="Measures: families expanded over --k (ndcg,recall,mrr,map,p,hit) and/or "
            "NAME@K. Default: all six families.",
        ),
        resamples: int = typer.Option(3000, "--resamples", help="Bootstrap resamples."),
        seed: int = typer.Option(1337, "--seed", help="Bootstrap seed."),
        runs: str | None = typer.Option(
            None, "--runs", help="Only these runs (comma-separated). Default: every run."
        ),
        primary: str | None = typer.Option(
            None,
            "--primary",
            help="Measure the summary and headline quote (default: nDCG at the bundle's k; "
            "for a suite, ndcg@10).",
        ),
        subsets: str = typer.Option(
            "matched",
            "--subsets",
            help="Queries that winner flips and design recommendations compare: matched (the "
            "same queries for every target, every compared target non-empty: the paper's) or "
            "per-target (each target's own non-empty queries). The report shows the other "
            "beside it.",
        ),
        pool_raw_only: bool = typer.Option(
            False,
            "--pool-raw-only",
            help="Pool runs on raw-only stores (no derived memory) into the pooled figures "
            "too (default: left out, their count shown).",
        ),
        scale: int = typer.Option(
            1,
            "--scale",
            help="For a suite: show scores in suite.md and suite.html on 0-1 (1) or on "
            "LMEB's 0-100 scale (100); suite.json keeps 0-1.",
        ),
    ) -> None:
        """Rescore saved rankings under the Raw, Source and Canonical targets.

        Writes per_query.csv, report.json, report.md and report.html to --out. For several
        bundles (or a directory of bundles): each bundle's files in its own subdirectory of
        --out, and suite.json, suite.md and suite.html (Mean(Dataset), Mean(Type)) in --out.
        """
        from tiap.errors import TiapError
        from tiap.io import check_apart
        from tiap.limits import MAX_RESCORE_RESAMPLES, check_resamples, check_seed
        from tiap.rescore.api import rescore_bundle, write_outputs
        from tiap.rescore.metrics import parse_measure, parse_measures
        from tiap.rescore.subsets import check_subsets
        from tiap.rescore.suite import check_scale, is_suite
        from tiap.traces.bundle import read_bundle

        # bad options fail before a large bundle is read
        parse_measures(metrics, k)
        check_resamples("--resamples", resamples, minimum=1, maximum=MAX_RESCORE_RESAMPLES)
        check_seed("--seed", seed)
        if primary is not None:
            parse_measure(primary)
        check_subsets(subsets)
        check_scale(scale)
        check_apart(out, [("bundle", b) for b in bundles])
        options: dict[str, Any] = {
            "ks": k,
            "metrics": metrics,
            "runs": _names(runs),
            "resamples": resamples,
            "seed": seed,
            "subsets": subsets,
            "pool_raw_only": pool_raw_only,
        }
        if is_suite(bundles):
            _suite(bundles, out, primary, {**options, "scale": scale})
            return
        if scale != 1:
            raise TiapError("--scale applies to a suite (several bundles, or a directory of them)")
        loaded = read_bundle(bundles[0])
        result = rescore_bundle(loaded, primary=primary, **options)
        _warn(result.report)
        paths = write_outputs(result, out)
        _print_summary(result.report, paths)


def _warn(report: RescoreReport, prefix: str = "") -> None:
    from tiap.text import inert as visible

    for w in report.warnings.messages[:SHOWN_WARNINGS]:
        output.echo(f"warning: {prefix}{visible(w)}", err=True)
    if report.warnings.count > SHOWN_WARNINGS:
        output.echo(
            f"warning: {prefix}{report.warnings.count - SHOWN_WARNINGS} more warnings "
            "(listed in report.json)",
            err=True,
        )


def _suite(bundles: list[Path], out: Path, primary: str | None, options: dict[str, Any]) -> None:
    from rich.table import Table

    from tiap.rescore.suite import rescore_suite
    from tiap.rescore.suite_render import score
    from tiap.text import inert as v

    console = output.console()

    def done(task: str, report: RescoreReport, paths: dict[str, Path]) -> None:
        _warn(report, prefix=f"{v(task)}: ")
        console.print(f"{v(task)}: wrote {paths['report_md'].parent}", soft_wrap=True)

    result = rescore_suite(bundles, out, primary=primary, on_task=done, **options)
    r = result.report
    table = Table(title=f"suite of {len(r.tasks)} tasks: {r.measure}")
    table.add_column("run")
    for t in r.targets:
        table.add_column(f"Mean(Dataset) {t}", justify="right")
        table.add_column(f"Mean(Type) {t}", justify="right")
    for run in r.runs:
        cells = []
        for t in r.targets:
            cells += [score(r, r.mean_dataset[run][t]), score(r, r.mean_type[run][t])]
        table.add_row(v(run), *cells)
    console.print(table)
    for key, label in (("mean_dataset", "Mean(Dataset)"), ("mean_type", "Mean(Type)")):
        best = ", ".join(f"{t}: {v('/'.join(w)) or MISSING}" for t, w in r.winners[key].items())
        flip = " (the best run changes with the target)" if r.winner_flip[key] else ""
        console.print(f"best run on {label}: {best}{flip}")
    for key in ("suite_json", "suite_md", "suite_html"):
        console.print(f"wrote {result.paths[key]}", soft_wrap=True)
