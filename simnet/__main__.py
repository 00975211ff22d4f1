"""``python -m simnet`` is the ``simnet`` command."""

from simnet.cli.main import main

main()
