"""The time of one collective on a machine (topology.py), as NCCL/RCCL would run it.

Each candidate (algorithm, protocol) gets an alpha-beta time

    time = latency + bytes on the bottleneck link / that link's bandwidth

and the fastest is chosen, as NCCL's tuner does (its model: src/graph/tuning.cc,
ncclTopoTuneModel and ncclTopoGetAlgoTime, read from github.com/NVIDIA/nccl; the shapes and
constants below are restated from it, not copied). The choice is returned with the time.

Algorithms (S: the collective's size as nccl-tests counts it, n ranks, g per node, N nodes):
  ring      every collective. All-reduce puts 2(n-1)/n S through each GPU's links and, across
            nodes, through each node's network; all-gather and reduce-scatter (n-1)/n S;
            broadcast S. Latency: NCCL's base + a step latency for each of its steps,
            inter-node steps paying the network's.
  tree      all-reduce across nodes (NCCL's double binary tree, a chain inside each node):
            the network carries S per node with 2 nodes, 2S with more; inside the node NCCL
            counts 2S per GPU. Latency grows with log2(N), not N.
  nvls      all-reduce (and all-gather / reduce-scatter) inside one NVSwitch node with NVLink
            SHARP: the switch reduces and multicasts, so each GPU's link carries (n+1)/n S
            instead of 2(n-1)/n S, at nvls_efficiency of the link; a fixed 25 us latency.
  nvls_tree all-reduce across NVLS nodes: NVLS inside the node, a tree between nodes.
  direct    all-to-all and send/recv: each pair of ranks talks directly; what leaves a node
            shares its network.
Protocols (ring/tree; NVLS runs Simple only):
  LL        8-byte stores with a flag: lowest latency, half the bandwidth
  LL128     128-byte lines with a flag: 120/128 of the bandwidth (NCCL: 0.92), mid latency
  Simple    full bandwidth, the highest latency per step
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence, Union

import numpy as np

from ...costs.collectives import bus_factor
from .topology import Topology

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
PROTOCOLS = ("LL", "LL128", "Simple")

# NCCL tuning.cc: bandwidth of each protocol against Simple on a ring (LL: half, LL128:
# 120/128 less its overhead) and on a tree (LL 1/3.8; Simple and LL128 x 0.92, 120/128).
RING_BW = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}
TREE_BW = {"LL": 1 / 3.8, "LL128": 120 / 128 * 0.92, "Simple": 0.92}
# NCCL tuning.cc baseLatencies (us): a call's fixed cost per algorithm and protocol.
BASE_US = {
    "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
    "tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
}
# One NVLink step of each protocol against Simple's (tuning.cc hwLatencies, NVLINK ring:
# 0.6 / 1.9 / 3.4 us): the topology's intra_node_latency_us is Simple's.
INTRA_STEP = {"LL": 0.6 / 3.4, "LL128": 1.9 / 3.4, "Simple": 1.0}
# The software cost of one inter-node step (tuning.cc hwLatencies, NET), us; the topology's
# network_latency_us adds to it (twice for Simple, which flushes).
NET_STEP_US = {
    "ring": {"LL": 2.7, "LL128": 4.0, "Simple": 14.0},
    "tree": {"LL": 5.0, "LL128": 8.5, "Simple": 14.0},
    "nvls_tree": {"Simple": 20.9},
}
NVLS_US = 25.0  # tuning.cc: NVLS / NVLS tree over NVLink, Simple
# tuning.cc treeCorrectionFactor: NCCL's trees fall short of their model at medium sizes, so
# it scales a tree all-reduce's bandwidth by a factor per protocol, indexed by
# log2(size / 64 B) for sizes 64 B to 256 MiB (1.0 outside).
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5,
           .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6,
              .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
               .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}  # fmt: skip
# Inter-node rings post every step to the network: at least 1 us a step (3 with Simple).
NET_POST_US = 1.0


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One collective's predicted time and how it would run. time_us: microseconds;
    algbw_gbps = size / time and busbw_gbps = algbw x bus factor, GB/s (1e9 B/s, as
    nccl-tests); latency_us: the size-independent part; bottleneck: the link that bounds
    the bandwidth term ("intra_node", "network" or "none")."""

    kind: str
    size_bytes: float
    ranks: int
    nodes: int
    algorithm: str
    protocol: str
    time_us: float
    latency_us: float
    algbw_gbps: float
    busbw_gbps: float
    bottleneck: str


@dataclasses.dataclass(frozen=True)
class _Candidate:
    algorithm: str
    protocol: str
    latency_us: float
    intra_bytes: float  # bytes per unit of size through one GPU's intra-node links
    intra_gbps: float
    net_bytes: float  # bytes per unit of size through one node's network
    net_gbps: float

    def times(self, sizes: np.ndarray) -> tuple[np.ndarray, str]:
        intra = self.intra_bytes / (self.intra_gbps * 1e3) if self.intra_bytes else 0.0
        net = self.net_bytes / (self.net_gbps * 1e3) if self.net_bytes else 0.0
        per_byte = max(intra, net)  # us per byte; the links work at the same time
        where = "none" if per_byte == 0 else ("network" if net >= intra else "intra_node")
        scale = tree_correction(self.protocol, sizes) if self.algorithm == "tree" else 1.0
        return self.latency_us + sizes * per_byte / scale, where


def tree_correction(protocol: str, sizes: np.ndarray) -> np.ndarray:
    """NCCL's tree bandwidth factor at each size (TREE_CORRECTION)."""
    table = np.asarray(TREE_CORRECTION[protocol])
    with np.errstate(divide="ignore"):
        idx = np.floor(np.log2(np.maximum(sizes, 1) / 64)).astype(np.int64)
    inside = (idx >= 0) & (idx < len(table) - 1)
    return np.where(inside, table[np.clip(idx, 0, len(table) - 1)], 1.0)


def _shape(topology: Topology, ranks: Optional[int]) -> tuple[int, int, int]:
    """(n, g, N): ranks, ranks per node, nodes; ranks fill nodes in order."""
    n = topology.ranks if ranks is None else int(ranks)
    if n < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    g = min(n, topology.gpus_per_node)
    return n, g, math.ceil(n / topology.gpus_per_node)


def candidates(kind: str, topology: Topology, ranks: Optional[int] = None) -> list[_Candidate]:
    """Every (algorithm, protocol) NCCL would consider for `kind` on this machine, less
    those the system's NCCL_ALGO / NCCL_PROTO settings rule out (Topology.allows)."""
    every = _every_candidate(kind, topology, ranks)
    # Point-to-point paths ("direct") and a lone rank ("none") are not NCCL_ALGO choices.
    allowed = [
        c for c in every
        if c.algorithm in ("direct", "none") or topology.allows(c.algorithm, c.protocol)
    ]  # fmt: skip
    if not allowed:
        raise ValueError(
            f"topology {topology.name!r}: nccl_algo {topology.nccl_algo!r} and nccl_proto "
            f"{topology.nccl_proto!r} leave no way to run {kind}"
        )
    return allowed


def _every_candidate(
    kind: str, topology: Topology, ranks: Optional[int] = None
) -> list[_Candidate]:
    if kind not in KINDS:
        raise ValueError(f"unknown collective kind {kind!r}; known: {', '.join(KINDS)}")
    n, g, nodes = _shape(topology, ranks)
    t = topology
    bi, bn = t.intra_gbps, t.network_gbps_per_node
    over = t.call_overhead_us
    multi = nodes > 1
    out: list[_Candidate] = []

    def net_step(algo: str, p: str) -> float:
        return NET_STEP_US[algo][p] + t.network_latency_us * (2 if p == "Simple" else 1)

    if n == 1:
        return [_Candidate("none", "Simple", over, 0.0, bi, 0.0, bn)]
    if kind == "send_recv":
        # n > gpus_per_node: the two ranks are on different nodes, one NIC's share each.
        nic = bn / (t.nics_per_node or t.gpus_per_node)
        for p in PROTOCOLS:
            lat = over + BASE_US["ring"][p]
            if multi:
                out.append(
                    _Candidate("direct", p, lat + net_step("ring", p), 0, bi, 1.0, nic * RING_BW[p])
                )
            else:
                step = t.intra_node_latency_us * INTRA_STEP[p]
                out.append(_Candidate("direct", p, lat + step, 1.0, bi * RING_BW[p], 0, bn))
        return out
    if kind == "all_to_all":
        # Each rank sends (n-1)/n of its buffer; (n-g)/n of it leaves the node, from g GPUs.
        lat = over + BASE_US["ring"]["Simple"] + t.intra_node_latency_us
        if multi:
            lat += net_step("ring", "Simple")
        net = g * (n - g) / n
        return [_Candidate("direct", "Simple", lat, (n - 1) / n, bi, net, bn)]

    steps = {"all_reduce": 2 * (n - 1), "broadcast": n - 1}.get(kind, n - 1)
    inter = 0 if not multi else (2 * (nodes - 1) if kind == "all_reduce" else nodes - 1)
    ring_bytes = {"all_reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(kind, (n - 1) / n)
    for p in PROTOCOLS:
        step = t.intra_node_latency_us * INTRA_STEP[p]
        if multi:
            step = max(step, NET_POST_US * (3 if p == "Simple" else 1))
        lat = over + BASE_US["ring"][p] + (steps - inter) * step + inter * net_step("ring", p)
        f = RING_BW[p]
        out.append(
            _Candidate("ring", p, lat, ring_bytes, bi * f, ring_bytes if multi else 0, bn * f)
        )
    if kind == "all_reduce" and multi:
        hops = math.log2(nodes)
        net = 1.0 if nodes == 2 else 2.0
        for p in PROTOCOLS:
            step = t.intra_node_latency_us * INTRA_STEP[p]
            lat = over + BASE_US["tree"][p] + 2 * ((g - 1) * step + hops * net_step("tree", p))
            f = TREE_BW[p]
            out.append(_Candidate("tree", p, lat, 2.0 if g > 1 else 0, bi * f, net, bn * f))
    if t.nvls and g > 1:
        nv = bi * t.nvls_efficiency
        if not multi and kind in ("all_reduce", "all_gather", "reduce_scatter"):
            nvls_bytes = (n + 1) / n if kind == "all_reduce" else (n - 1) / n
            out.append(_Candidate("nvls", "Simple", over + NVLS_US, nvls_bytes, nv, 0, bn))
        elif multi and kind == "all_reduce":
            lat = over + NVLS_US + 2 * math.log2(nodes) * net_step("nvls_tree", "Simple")
            net = 1.0 if nodes == 2 else 2.0
            out.append(_Candidate("nvls_tree", "Simple", lat, (g + 1) / g, nv, net, bn))
    return out


def predict_collectives(
    kind: str,
    sizes: Union[Sequence[float], np.ndarray],
    topology: Topology,
    *,
    ranks: Optional[int] = None,
) -> list[Prediction]:
    """predict_collective for each size (one pass over the candidates)."""
    sizes_a = np.asarray(sizes, np.float64)
    if sizes_a.ndim != 1 or not np.all(np.isfinite(sizes_a)) or np.any(sizes_a < 0):
        raise ValueError("sizes must be finite numbers of bytes >= 0")
    n, _, nodes = _shape(topology, ranks)
    cands = candidates(kind, topology, ranks)
    runs = [c.times(sizes_a) for c in cands]
    table = np.stack([r[0] for r in runs])  # candidates x sizes
    best = np.argmin(table, axis=0)  # ties: the first listed (ring before tree before NVLS)
    factor = bus_factor(kind, n)
    out = []
    for i, size in enumerate(sizes_a):
        c, time = cands[best[i]], float(table[best[i], i])
        algbw = size / time / 1e3 if time > 0 else 0.0
        out.append(
            Prediction(
                kind, float(size), n, nodes, c.algorithm, c.protocol, time, c.latency_us,
                algbw, algbw * factor, runs[best[i]][1],
            )
        )  # fmt: skip
    return out


def predict_collective(
    kind: str, size_bytes: float, topology: Topology, *, ranks: Optional[int] = None
) -> Prediction:
    """The time of one `kind` collective of size_bytes (nccl-tests' size: the all-reduce
    buffer, the gathered output, the scattered input) over `ranks` ranks (default: every GPU
    of the topology, filling nodes in order) on `topology`, with the algorithm and protocol
    chosen as NCCL chooses: the fastest by its own alpha-beta model."""
    return predict_collectives(kind, [size_bytes], topology, ranks=ranks)[0]
