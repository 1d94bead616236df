"""Find and load rubrics: built-in names or user TOML files."""

from __future__ import annotations

from pathlib import Path

from tiap.io import builtin_toml_names, load_builtin_or_file, parse_toml
from tiap.rubric.models import Rubric

DEFAULT_RUBRIC = "contested-credit"


def builtin_rubrics() -> list[str]:
    """Names of the rubrics shipped with tiap."""
    return builtin_toml_names("tiap.rubric", "builtin")


def parse_rubric(text: str, origin: str) -> Rubric:
    """Parse rubric TOML text; errors name ``origin``."""
    return parse_toml(text, origin, Rubric, what="rubric")


def load_rubric(name_or_path: str | Path = DEFAULT_RUBRIC) -> Rubric:
    """A built-in rubric by name, or a rubric TOML file by path."""
    return load_builtin_or_file(
        name_or_path, Rubric, package="tiap.rubric", folder="builtin", what="rubric"
    )
