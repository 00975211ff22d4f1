"""Topologies: YAML schema, generators, loader and the routed ``Topology`` graph."""

from simnet.topology.generators import GENERATORS
from simnet.topology.loader import load_topology, topology_from_dict
from simnet.topology.model import Topology

__all__ = ["GENERATORS", "Topology", "load_topology", "topology_from_dict"]
