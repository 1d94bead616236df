"""The top-level ``tiap`` command and its error policy.

Errors a user can fix (:class:`~tiap.errors.TiapError`) print one line on
stderr and exit with status 2; so do usage errors (typer's message on one line,
:mod:`tiap.cli.options`); Ctrl-C exits 130; work that stopped before the end (a
failed scale gate, a paused audit, a budget) exits 3 with what was done kept. Help
is plain text (:mod:`tiap.cli.help`). Sub-commands live in one module each and
import their heavy dependencies inside the command functions, so ``tiap --help``
starts fast.

The entry point is the one place that sets up the process: offline defaults for
litellm and Hugging Face (unless the user set them) and tiap's process tuning
(:func:`tiap.runtime.tuned`) for the whole command.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from tiap import __version__
from tiap.cli import (
    agreement,
    annotate,
    answers,
    audit,
    cases,
    cases_answers,
    judge,
    judge_probe,
    labels,
    rescore,
    traces,
)
from tiap.cli.options import OneLineUsageGroup
from tiap.cli.output import echo
from tiap.errors import Interrupted, TiapError
from tiap.text import inert

app = typer.Typer(
    name="tiap",
    help=(
        "Audit how conversational-memory benchmarks give retrieval credit: rescore traces "
        "under Raw/Source/Canonical targets, extract contested credits, judge them with LLM "
        "panels and people, and check agreement before scaling up."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=OneLineUsageGroup,
)


def _version(value: bool) -> None:
    if value:
        echo(f"tiap {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """tiap: target-sensitivity audits for memory benchmarks."""


app.add_typer(traces.app, name="traces")
rescore.register(app)
app.add_typer(cases.app, name="cases")
cases.app.command("from-answers")(cases_answers.from_answers)
judge.app.command("probe")(judge_probe.probe)
judge.app.add_typer(judge_probe.anchor_app, name="anchor")
judge.app.command("drift")(judge_probe.drift)
app.add_typer(judge.app, name="judge")
app.add_typer(answers.app, name="answers")
app.add_typer(annotate.app, name="annotate")
app.add_typer(agreement.app, name="agreement")
app.add_typer(labels.app, name="labels")
audit.register(app)


def command() -> Any:
    """The click command tree of ``tiap``, with plain help (:mod:`tiap.cli.help`)."""
    import typer.main

    from tiap.cli.help import tidy

    return tidy(typer.main.get_command(app))


def fail(message: str, code: int = 2) -> None:
    """Print one line on stderr and exit. Messages often quote data (a file's line,
    a provider's reply): they are made :func:`~tiap.text.inert`, on one line."""
    echo(f"tiap: error: {one_line(message)}", err=True)
    raise SystemExit(code)


def one_line(message: object) -> str:
    """``message`` made inert, every run of whitespace (newlines too) one space."""
    return " ".join(inert(message).split())


def _interrupted(exc: BaseException | None) -> str:
    """The line for Ctrl-C: with the hint of an :class:`Interrupted` in the chain."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, Interrupted) and str(exc):
            return f"tiap: interrupted: {one_line(exc)}"
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return "tiap: interrupted"


#: environment defaults of the command (a user's own setting wins): litellm reads its
#: model-cost map from the package instead of the network at import, and Hugging
#: Face libraries do not try the hub for tokenizers (about 23 s offline otherwise).
ENV_DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    from tiap.runtime import tuned

    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    try:
        with tuned():
            command().main(args=argv, prog_name="tiap")
    except TiapError as exc:
        fail(str(exc))
    except KeyboardInterrupt as exc:  # typer versions that let it through
        echo(_interrupted(exc), err=True)
        raise SystemExit(130) from None
    except SystemExit as exc:
        if exc.code == 130:  # typer's exit for Ctrl-C (it raises no other 130)
            echo(_interrupted(exc), err=True)
        raise
