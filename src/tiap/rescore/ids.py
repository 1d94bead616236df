"""String ids to integer positions, many at a time.

Looking up one Python string in a dict compares it with the stored key, which
touches a second object; for the hundreds of thousands of memory ids in a
bundle's runs that comparison dominates. :class:`IdIndex` instead matches the
ids' cached ``hash()`` values against the sorted hashes of the known ids with
one vectorised search. That is exact whenever the known ids have distinct
hashes (checked; otherwise, or when an id is not found, the plain dict path
is used) and every looked-up id is one of the known ids, which bundle
validation guarantees for the memories a run ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from tiap.errors import TiapError


def hashes(ids: Sequence[str]) -> np.ndarray:
    """``hash(id)`` of every id as an int64 array."""
    return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))


class IdIndex:
    """Positions ``0..n-1`` of ``ids`` (which must be distinct)."""

    def __init__(self, ids: Sequence[str], what: str = "id") -> None:
        self.ids = tuple(ids)
        self.what = what
        h = hashes(self.ids)
        self._order = np.argsort(h, kind="stable")
        self._sorted = h[self._order]
        self._fast = bool(np.all(self._sorted[1:] != self._sorted[:-1]))

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def mapping(self) -> dict[str, int]:
        return {x: i for i, x in enumerate(self.ids)}

    def positions(self, ids: Sequence[str]) -> np.ndarray:
        """Position of each of ``ids``; an unknown id raises :class:`TiapError`."""
        if self._fast and self.ids:
            h = hashes(ids)
            pos = np.searchsorted(self._sorted, h)
            np.minimum(pos, len(self.ids) - 1, out=pos)
            if bool(np.all(self._sorted[pos] == h)):
                return self._order[pos]
        mapping = self.mapping
        try:
            return np.fromiter(map(mapping.__getitem__, ids), dtype=np.int64, count=len(ids))
        except KeyError as exc:
            raise TiapError(f"unknown {self.what} '{exc.args[0]}'") from None
