"""Maintainer tools that live beside the package, not in it."""
