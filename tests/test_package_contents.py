"""What the installed package holds and needs: test infrastructure stays out of
``src/``, and every run-time dependency is one the code imports."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "tiap"
#: distribution name -> import name, where they differ
IMPORT_NAMES = {
    "scikit-learn": "sklearn",
    "tomli-w": "tomli_w",
    "label-studio-sdk": "label_studio_sdk",
}


def _imports() -> set[str]:
    """Top-level names imported anywhere under src/tiap (lazy imports included)."""
    pattern = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


def test_test_infrastructure_is_not_in_the_package() -> None:
    assert importlib.util.find_spec("tiap.judge.loopback") is None
    assert not list(SRC.rglob("loopback*.py"))
    imported = _imports()
    assert "support" not in imported
    assert "tests" not in imported


def test_every_run_time_dependency_is_imported() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    imported = _imports()
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()  # type: ignore[union-attr]
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        assert module in imported, f"{name} is a run-time dependency no module imports"
