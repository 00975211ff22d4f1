"""simnet's version: in result files, sweep metadata and bug reports."""

__version__ = "0.2.0"
