"""The built-in sample bundle: invented chats written for tiap (see
``tools/make_sample_bundle.py``), used by ``tiap demo``, the README and the tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tiap.errors import TiapError


def sample_bundle_path() -> Path:
    """Directory of the sample bundle inside the installed package."""
    path = Path(str(resources.files("tiap.traces") / "sample"))
    if not (path / "bundle.toml").is_file():
        raise TiapError(f"{path}: the sample bundle is missing from this installation")
    return path
