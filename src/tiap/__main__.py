"""``python -m tiap``: the same as the ``tiap`` command."""

from tiap.cli import main

main()
