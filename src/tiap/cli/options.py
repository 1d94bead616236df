"""How the command line reports bad options: one line on stderr, exit status 2.

Numbers are checked by :mod:`tiap.limits` (the same checks as the Python API), not by
typer's ``min=``/``max=``, which print a usage box. The rest of typer's usage errors
(a value that is not a number, an unknown option, a missing argument) are turned into
the same one line by :class:`OneLineUsageGroup`, the top-level command's class.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup

from tiap.errors import TiapError

#: click's ``UsageError`` (typer exports only its subclass ``BadParameter``, and
#: vendors click from 0.29 on, so it is found through that subclass).
_USAGE_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)


class UsageProblem(TiapError):
    """A usage error of the command line, as one line."""


def _one_line(exc: Exception) -> str:
    message = " ".join(str(getattr(exc, "format_message", exc.__str__)()).split())
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) if ctx is not None else None
    return f"{message} (see '{path} --help')" if path else message


@contextmanager
def _usage_in_one_line() -> Iterator[None]:
    try:
        yield
    except _USAGE_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as typer shows it
            raise
        raise UsageProblem(_one_line(exc)) from None


class OneLineUsageGroup(TyperGroup):
    """The ``tiap`` group: a usage error anywhere below it is a :class:`UsageProblem`
    (printed as one line by :func:`tiap.cli.root.main`) instead of typer's usage box."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        with _usage_in_one_line():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        with _usage_in_one_line():
            return super().invoke(ctx)


def option_name(field: str) -> str:
    """The option of a settings field: ``min_fleiss`` -> ``--min-fleiss``."""
    return "--" + field.replace("_", "-")


def settings_problem(exc: Any, options: dict[str, str] | None = None) -> TiapError:
    """A pydantic ``ValidationError`` of settings built from options, as one line
    naming the option (``options`` maps fields whose option is named otherwise)."""
    err = exc.errors(include_url=False)[0]
    loc = [str(p) for p in err.get("loc", ())]
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if not loc:
        return TiapError(msg)
    field = loc[0]
    name = (options or {}).get(field, option_name(field))
    return TiapError(f"{name} {msg}")
