"""Work done once per test session and handed to each test as a copy.

Two kinds of shared state, both kept pristine:

- :class:`Built`: real-data bundles (``tiap traces build`` on the shared LoCoMo,
  LongMemEval and BEAM files), built on first use and copied wherever a test or
  fixture wants one (:meth:`Built.copy`).
- :class:`Stage`: a directory made by running commands in it (an audit paused for
  human labels, the demo, ...). Audits record their paths (the workspace's is part
  of the key under which the audit keeps its step records), so a stage is restored
  *at the path where it was made* before each test that uses it
  (:meth:`Stage.restore`): the test may change it freely, and the next one gets it as
  it was made. Tests run one after another in one process, so one path serves them.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def copy_tree(source: Path, dest: Path) -> Path:
    """A copy of ``source`` at ``dest`` (which must not exist); ``dest``."""
    shutil.copytree(source, dest, symlinks=True)
    return dest


@dataclass
class Stage(Generic[T]):
    """A directory made once (``root``), with what making it returned (``made``);
    a pristine copy is kept beside it."""

    root: Path
    made: T
    pristine: Path

    @classmethod
    def make(cls, root: Path, make: Callable[[Path], T]) -> Stage[T]:
        """Run ``make(root)`` in the new directory ``root``, then keep a pristine copy."""
        root.mkdir(parents=True)
        made = make(root)
        pristine = root.with_name(root.name + ".pristine")
        copy_tree(root, pristine)
        return cls(root, made, pristine)

    def restore(self) -> Stage[T]:
        """``root`` as it was made (whatever a test did to it)."""
        shutil.rmtree(self.root, ignore_errors=True)
        copy_tree(self.pristine, self.root)
        return self

    def copy(self, dest: Path) -> Path:
        """A copy of the made directory elsewhere (for a test that needs no path kept)."""
        return copy_tree(self.pristine, dest)


@dataclass(frozen=True)
class BuildSpec:
    """``tiap traces build KIND DATA --out OUT -q ARGS`` (``data``: under shared/data)."""

    kind: str
    data: str
    args: Sequence[str] = ()


#: the real-data bundles the tests use, by name
BUILDS: dict[str, BuildSpec] = {
    # BM25 over every store
    "locomo": BuildSpec("locomo", "locomo/locomo10.json"),
    # BM25 over the raw turns only
    "locomo-raw": BuildSpec("locomo", "locomo/locomo10.json", ("-s", "raw")),
    "longmemeval-raw": BuildSpec(
        "longmemeval", "longmemeval/longmemeval_oracle.reconstructed.json", ("-s", "raw")
    ),
    # the observations store (with BM25)
    "locomo-observations": BuildSpec("locomo", "locomo/locomo10.json", ("-s", "observations")),
}


@dataclass
class Built:
    """Real-data bundles built once per test run (on first use), handed out as copies.

    ``root`` is shared by the run's workers: a bundle is built under a file lock into a
    temporary folder and renamed into place when complete, so the first worker that
    needs it builds it and the others wait for it and read it (a bundle does not
    record its path)."""

    data: Path
    root: Path
    run: Callable[[list[str]], Any]
    done: dict[str, Path] = field(default_factory=dict)

    def source(self, name: str) -> Path:
        return self.data / BUILDS[name].data

    def original(self, name: str) -> Path:
        """The bundle as built: read it, never change it (use :meth:`copy` for that)."""
        if name not in self.done:
            self.done[name] = self._build(name)
        return self.done[name]

    def _build(self, name: str) -> Path:
        spec = BUILDS[name]
        out = self.root / name
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / f".{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not out.is_dir():
                part = self.root / f".{name}.partial"
                shutil.rmtree(part, ignore_errors=True)
                self.run(["traces", "build", spec.kind, str(self.source(name)), "--out",
                          str(part), "-q", *spec.args])  # fmt: skip
                part.rename(out)
        return out

    def copy(self, name: str, dest: Path) -> Path:
        """A copy of the bundle ``name`` at ``dest`` (which must not exist)."""
        return copy_tree(self.original(name), dest)
