"""The label codes of one scale of a report: the rubric's labels or its binary
collapse, for every rater, the included ones, the reference and the majority."""

from __future__ import annotations

import numpy as np

from tiap.agreement.reference import Reference
from tiap.agreement.votes import VoteArrays


class Scale:
    """Codes of the included raters, the reference and the majority on one scale
    (the rubric's labels, or its binary collapse)."""

    def __init__(
        self,
        name: str,
        cats: list[str],
        names: list[str],
        codes_all: np.ndarray,
        included_idx: list[int],
        ref: Reference | None,
        votes: VoteArrays,
    ) -> None:
        self.name, self.cats, self.k = name, cats, len(cats)
        self.names = names
        self.codes_all = codes_all
        self.codes = codes_all[:, included_idx]
        self.ref = ref.codes if ref is not None else None
        self.votes = votes

    def column(self, rater: str) -> np.ndarray:
        return self.codes_all[:, self.names.index(rater)]
