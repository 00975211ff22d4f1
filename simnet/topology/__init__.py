"""Topologies: YAML schema, hardware facts, generators, loader and the routed ``Topology`` graph."""
