"""The machine a trace was recorded on, as a topology (topology.py): which shipped file its
GPU calls for, how many GPUs a node held and how many ranks the job had.

    device      the trace's deviceProperties (hta_fast.costs.devices.trace_device) matched
                to the device table; its key picks the shipped file (DEVICE_TOPOLOGY, first
                prefix that fits). A GPU no file describes takes FALLBACK's figures, and
                the reason says so.
    GPUs/node   how many devices the trace's deviceProperties list where they list two or
                more (a Kineto trace lists the GPUs its process sees: the node's, unless
                each rank was given only its own), else the file's gpus_per_node
    world size  the largest of: the ranks' distributedInfo world_size, the collectives'
                group sizes, the number of ranks loaded
    nodes       the world size over the GPUs per node, rounded up
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Optional, Union

from ...costs.devices import trace_device
from ...trace import Trace
from ...traceset import TraceSet
from .topology import Topology, load_topology

# device table key prefix -> shipped topology (first match wins: GH200 before H200).
DEVICE_TOPOLOGY = (
    ("A100", "dgx_a100"),
    ("V100", "dgx1_v100"),
    ("GH200", "hgx_h100"),
    ("H100", "hgx_h100"),
    ("H800", "hgx_h100"),
    ("H200", "hgx_h200"),
    ("B200", "hgx_b200"),
    ("B300", "hgx_b200"),
    ("MI300X", "mi300x"),
    ("MI325X", "mi300x"),
)
FALLBACK = "dgx_a100"


@dataclasses.dataclass(frozen=True)
class RecordedMachine:
    """topology: the recorded machine's links, gpus_per_node and nodes set from the trace;
    world_size: the job's ranks; device: the device table key (None: not recognised);
    how: one sentence on how each figure was found."""

    topology: Topology
    world_size: int
    device: Optional[str]
    how: str


def topology_for_device(key: Optional[str]) -> Optional[str]:
    """The shipped topology a device table key calls for, or None."""
    for prefix, name in DEVICE_TOPOLOGY:
        if key is not None and key.startswith(prefix):
            return name
    return None


def recorded_world_size(traces: Union[Trace, TraceSet], group_sizes: Iterable[int] = ()) -> int:
    """The job's ranks (the module doc): distributedInfo, group sizes, ranks loaded."""
    ts = traces if isinstance(traces, TraceSet) else TraceSet({0: traces})
    sizes = [int(ts[r].meta.world_size or 0) for r in ts.ranks]
    return max([1, len(ts.ranks), *sizes, *(int(g) for g in group_sizes)])


def recorded_machine(
    traces: Union[Trace, TraceSet],
    group_sizes: Iterable[int] = (),
    given: Union[Topology, str, None] = None,
) -> RecordedMachine:
    """The recorded machine (the module doc); `given`: its topology, instead of the one
    its device calls for (its gpus_per_node kept unless the trace lists its devices)."""
    ts = traces if isinstance(traces, TraceSet) else TraceSet({0: traces})
    first = ts[ts.ranks[0]]
    world = recorded_world_size(ts, group_sizes)
    device = trace_device(first) if first.meta.devices else None
    key = device.key if device is not None else None
    if given is not None:
        topology = load_topology(given) if isinstance(given, str) else given
        why = f"given: {topology.name}"
    else:
        name = topology_for_device(key)
        topology = load_topology(name or FALLBACK)
        why = (
            f"{name} (the device {key})"
            if name
            else f"{FALLBACK}'s figures standing in (no shipped topology for "
            f"{'the device ' + key if key else 'an unnamed device'})"
        )
    listed = len(first.meta.devices or [])
    # one GPU listed: a rank that sees only its own (CUDA_VISIBLE_DEVICES), not a node of one
    gpn = listed if listed > 1 else topology.gpus_per_node
    nodes = math.ceil(world / gpn)
    topology = dataclasses.replace(topology, gpus_per_node=gpn, nodes=nodes)
    source = (
        f"deviceProperties lists {listed}"
        if listed > 1
        else "the file's; deviceProperties lists " + ("one GPU, a rank's own" if listed else "none")
    )
    how = (
        f"recorded machine: {why}; {gpn} GPUs per node ({source}), "
        f"world size {world}, {nodes} node(s)"
    )
    return RecordedMachine(topology, world, key, how)
