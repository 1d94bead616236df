"""How ``tiap --help`` reads: plain text, like a well-kept Unix command.

The command tree typer builds is tidied once before it runs (:func:`tidy`):

- help is plain text (no Rich markup): a bracket in a help string, like
  ``[default: 36/115 of --n]``, is shown as written, and a docstring wrapped
  over several lines is one paragraph, re-wrapped to the terminal's width;
- a value's metavar is a word in capitals (``--db PATH``, ``--n INTEGER``); a
  flag has none (no ``<bool>``);
- an argument is shown by its name in capitals, in the usage line too
  (``tiap audit [OPTIONS] BUNDLE``, not ``{bundle}``).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument

#: metavars by the type typer reads from the annotation (``<path>`` -> ``PATH``)
_METAVARS = {
    "path": "PATH",
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "NUMBER",
    "float range": "NUMBER",
}


class PlainArgument(TyperArgument):
    """An argument shown as ``NAME`` (``[NAME]`` when optional) in usage and help."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name in capitals says it; no second metavar


def _metavar(param: Any) -> str:
    """The metavar of an option's value: its type in capitals."""
    shown = str(param.display_type(None)).strip("<>")
    shown = shown.removeprefix("list[").removesuffix("]")
    return _METAVARS.get(shown, shown.upper())


def tidy(command: Any) -> Any:
    """Make a typer-built click command tree (and every sub-command) print plain
    help; returns ``command``."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    for param in command.params:
        if isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
            param.__class__ = PlainArgument
        elif param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = _metavar(param)
    for sub in (getattr(command, "commands", None) or {}).values():
        tidy(sub)
    return command
