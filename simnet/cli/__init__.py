"""The command line: a thin shell over the Python API (``simnet.run``)."""
