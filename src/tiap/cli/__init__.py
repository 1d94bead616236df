"""The ``tiap`` command: wiring only; the work happens in the other subpackages."""

from tiap.cli.root import app, main

__all__ = ["app", "main"]
