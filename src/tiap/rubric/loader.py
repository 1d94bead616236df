"""Find and load rubrics: built-in names or user TOML files."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from tiap.errors import InputError, TiapError
from tiap.io import describe_toml_error, describe_validation_error
from tiap.rubric.models import Rubric

DEFAULT_RUBRIC = "contested-credit"


def builtin_rubrics() -> list[str]:
    """Names of the rubrics shipped with tiap."""
    root = resources.files("tiap.rubric") / "builtin"
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def parse_rubric(text: str, origin: str) -> Rubric:
    """Parse rubric TOML text; errors name ``origin``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg, line = describe_toml_error(exc)
        raise InputError(origin, f"malformed TOML ({msg})", line) from None
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise InputError(origin, f"invalid rubric: {describe_validation_error(exc)}") from None


def load_rubric(name_or_path: str | Path = DEFAULT_RUBRIC) -> Rubric:
    """A built-in rubric by name, or a rubric TOML file by path."""
    text_name = str(name_or_path)
    if text_name in builtin_rubrics():
        res = resources.files("tiap.rubric") / "builtin" / f"{text_name}.toml"
        return parse_rubric(res.read_text(encoding="utf-8"), f"<built-in rubric {text_name}>")
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(path, "rubric file not found") from None
        return parse_rubric(text, str(path))
    raise TiapError(
        f"unknown rubric '{text_name}' (built-in: {', '.join(builtin_rubrics())}; "
        "or give the path of a .toml file)"
    )
