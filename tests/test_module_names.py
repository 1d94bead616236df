"""Module names say what they hold: no two modules of tiap share a file name in
different packages unless they are the same kind of thing."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tiap"

#: file names that mean the same kind of thing in every package that has one
SAME_KIND = {
    "__init__.py": "a package's public names",
    "__main__.py": "`python -m` entry point",
    "models.py": "a package's pydantic models of what it reads and writes",
    "figures.py": "a report's choice of figures, drawn with tiap.report",
    "sections.py": "a report's sections as tiap.report blocks",
    "report_text.py": "a report's own wording of its figures",
}

#: TEMPORARY: shared names being renamed on other branches. Empty this list once those
#: are merged (the test below fails for a name here that is no longer shared).
BEING_RENAMED: set[str] = set()


def _shared_names() -> dict[str, list[str]]:
    """File name -> the modules (paths under src/tiap) with that name, for names that
    more than one package uses."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        where[path.name].append(path.relative_to(SRC).as_posix())
    return {name: paths for name, paths in sorted(where.items()) if len(paths) > 1}


def test_no_two_packages_have_a_module_of_the_same_name() -> None:
    shared = _shared_names()
    assert "models.py" in shared  # the scan really sees the package
    clashes = [
        f"{name}: {', '.join(paths)}"
        for name, paths in shared.items()
        if name not in SAME_KIND and name not in BEING_RENAMED
    ]
    assert not clashes, "modules of the same name in different packages:\n" + "\n".join(clashes)


def test_the_renaming_list_holds_only_names_still_shared() -> None:
    stale = sorted(BEING_RENAMED - _shared_names().keys())
    assert not stale, f"no longer shared, remove from BEING_RENAMED: {', '.join(stale)}"
