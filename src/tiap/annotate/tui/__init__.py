"""The Textual app of ``tiap annotate tui`` (import :mod:`tiap.annotate.tui.app`)."""
