"""``tiap demo``: the whole audit on the sample bundle shipped with tiap, offline.

The demo's settings (:func:`demo_settings`): the sample bundle, the ``offline`` panel
(five deterministic baseline judges, in-process), a 20-case validation subset with 8
overlap cases, ``force`` past the gate (twenty cases are fewer than its 30, and the
baselines do not agree at 0.80), the ``order``, ``repeat`` and ``injection`` probes
after the gate, and a reference for the validation subset: ``demo-reference.csv``
(:func:`demo_reference_path`), imported as human labels of rater
``demo-reference``.

The reference labels are **illustrative**: written by the tiap project for its
invented sample conversations, to show what the reports say with a human reference
(each judge against it, the calibrated prevalence beside the panel's). They are not
human judgments of real data, and no figure of the demo says anything about a real
benchmark. Each row's note gives the reason for its label under the
``contested-credit`` rubric. They cover exactly the validation subset the demo draws
(seed 1337); a sample bundle that gives other cases needs them written again.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tiap.audit.settings import AuditSettings
from tiap.errors import TiapError

__all__ = ["DEMO_PROBES", "DEMO_REFERENCE_RATER", "demo_reference_path", "demo_settings"]

#: the probes the demo runs after the gate (the offline panel: in-process, fast)
DEMO_PROBES = ("order", "repeat", "injection")
#: the rater name of the demo's illustrative reference labels
DEMO_REFERENCE_RATER = "demo-reference"
_REFERENCE_FILE = "demo-reference.csv"


def demo_reference_path() -> Path:
    """The demo's illustrative reference labels inside the installed package."""
    path = Path(str(resources.files("tiap.audit") / _REFERENCE_FILE))
    if not path.is_file():
        raise TiapError(f"{path}: the demo's reference labels are missing from this installation")
    return path


def demo_settings(out: Path, *, progress: bool = True) -> AuditSettings:
    """The settings of ``tiap demo --out OUT`` (see the module doc)."""
    from tiap.traces.samples import sample_bundle_path

    return AuditSettings(
        bundle=sample_bundle_path(),
        out=out,
        panel="offline",
        n=20,
        overlap=8,
        force=True,
        progress=progress,
        probes=list(DEMO_PROBES),
        human_labels=demo_reference_path(),
    )
