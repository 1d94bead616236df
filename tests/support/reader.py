"""A reader that file modes apply to even when the tests run as root (read-only
workspaces): pass :data:`AS_READER` as ``preexec_fn`` of ``tiap_cli.subprocess``."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _obey_file_modes() -> None:
    """In the child, before exec: root loses the capabilities that override file
    modes, so a read-only file or directory is read-only for it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


#: a process started with this drops them, as a reader without those rights would be
AS_READER: Callable[[], None] | None = _obey_file_modes if os.geteuid() == 0 else None


def read_only(directory: Path) -> None:
    """Every file of ``directory`` and the directory itself read-only."""
    for f in directory.iterdir():
        f.chmod(0o444)
    directory.chmod(0o555)


def files(directory: Path) -> dict[str, bytes]:
    """The files of ``directory`` by name, with their bytes."""
    return {f.name: f.read_bytes() for f in sorted(directory.iterdir()) if f.is_file()}
