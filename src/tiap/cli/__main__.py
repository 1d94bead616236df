"""``python -m tiap.cli``: the same as the ``tiap`` command."""

from tiap.cli import main

main()
