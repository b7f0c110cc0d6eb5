"""Collectives: links across ranks, their bytes per kernel, fitted cost models, and the
collective cost model that knows the machine (collective_model, topology, calibrate)."""

from .calibrate import calibrate
from .collective_model import KINDS, Prediction, predict_collective, predict_collectives
from .topology import Topology, load_topology, shipped_topologies

__all__ = [
    "KINDS",
    "Prediction",
    "Topology",
    "calibrate",
    "load_topology",
    "predict_collective",
    "predict_collectives",
    "shipped_topologies",
]
