"""``python -m simnet`` is the ``simnet`` command."""

from simnet.cli import main

main()
