"""Human labels: a terminal app for one rater (``tiap.annotate.tui``) and a Label
Studio round-trip for a team (``tiap.annotate.labelstudio``).

Both store labels in the workspace as ``rater_kind = human``. Textual and the
Label Studio SDK are imported only by the modules that use them.
"""

from tiap.annotate.session import ADJUDICATED, AnnotationSession, Progress, UndoStep

__all__ = ["ADJUDICATED", "AnnotationSession", "Progress", "UndoStep"]
