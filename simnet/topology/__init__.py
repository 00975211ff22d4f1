"""Topologies: YAML schema, hardware facts, generators, loader, the ``Topology`` graph (``graph``)
and its routes (``routing``, which the graph asks but never imports)."""
