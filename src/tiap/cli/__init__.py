"""The ``tiap`` command: wiring only; the work happens in the other subpackages."""

from tiap.cli.app import app, main

__all__ = ["app", "main"]
