"""The machine a collective runs on: GPUs per node, nodes, and each link's bandwidth and
latency, loaded from a JSON file (the shipped ones are in topologies/, named by file stem).

Units, one for each kind of figure: bandwidths in gigaBYTES per second (1e9 B/s, what
nccl-tests reports), per direction; latencies in microseconds. Vendor sheets quote network
links in gigaBITS per second: a 400 Gb/s NIC is 50 GB/s here (divide by 8).

Keys (all required unless a default is given):
  name, source                   what the file describes and where each figure comes from
  notes                          free text (default "")
  gpus_per_node, nodes           the default group: gpus_per_node x nodes ranks
  intra_node_gbps                one GPU's link bandwidth into the node's fabric (NVLink,
                                 Infinity Fabric), GB/s per direction, as the vendor states it
  intra_node_efficiency          the share of it a ring of NCCL/RCCL reaches (NCCL's own
                                 per-link figure over the vendor's; default 0.8)
  intra_node_latency_us          one ring step's latency inside the node with the Simple
                                 protocol, us (NCCL tuning.cc's NVLink ring figure: 3.4)
  network_gbps_per_node          the node's network bandwidth, all NICs together, GB/s per
                                 direction
  nics_per_node                  NICs per node (default gpus_per_node)
  network_latency_us             what the network adds to one inter-node step, us
  nvls                           NVSwitch with NVLink SHARP (multicast and in-switch reduce)
  nvls_efficiency                share of the link bandwidth NVLS reaches (NCCL tuning.cc's
                                 nvlsEfficiency: Hopper 0.85, Blackwell 0.74; default 0.85)
  call_overhead_us               time every call pays outside NCCL's own latency model (a
                                 framework's launch path; default 0)
  nccl_algo, nccl_proto          the algorithms and protocols the system lets NCCL choose
                                 from, as its NCCL_ALGO / NCCL_PROTO settings list them
                                 ("Ring,Tree", "Simple"; case-insensitive; default "": all).
                                 Some clouds enforce these in their NCCL profile, and the
                                 choice moves small and mid-size collectives by 2-5x.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Union

SHIPPED = Path(__file__).with_name("topologies")


@dataclasses.dataclass(frozen=True)
class Topology:
    """One machine's links (units in the module docstring: GB/s per direction, us)."""

    name: str
    source: str
    gpus_per_node: int
    nodes: int
    intra_node_gbps: float
    intra_node_latency_us: float
    network_gbps_per_node: float
    network_latency_us: float
    nvls: bool
    intra_node_efficiency: float = 0.8
    nics_per_node: int = 0  # 0: one per GPU
    nvls_efficiency: float = 0.85
    call_overhead_us: float = 0.0
    nccl_algo: str = ""
    nccl_proto: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        for key in ("gpus_per_node", "nodes"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"topology {self.name!r}: {key} must be >= 1")
        for key in ("intra_node_gbps", "network_gbps_per_node"):
            if not float(getattr(self, key)) > 0:
                raise ValueError(f"topology {self.name!r}: {key} must be > 0 (GB/s)")
        for key in ("intra_node_efficiency", "nvls_efficiency"):
            if not 0 < float(getattr(self, key)) <= 1:
                raise ValueError(f"topology {self.name!r}: {key} must be in (0, 1]")
        for key in ("intra_node_latency_us", "network_latency_us", "call_overhead_us"):
            if float(getattr(self, key)) < 0:
                raise ValueError(f"topology {self.name!r}: {key} must be >= 0 (us)")
        for key, known in (("nccl_algo", ALGORITHMS), ("nccl_proto", PROTOCOLS)):
            unknown = set(_names(getattr(self, key))) - set(known)
            if unknown:
                raise ValueError(
                    f"topology {self.name!r}: {key} names {', '.join(sorted(unknown))}; "
                    f"known: {', '.join(known)}"
                )

    @property
    def ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def intra_gbps(self) -> float:
        """What a ring gets from one GPU's links, GB/s per direction."""
        return self.intra_node_gbps * self.intra_node_efficiency

    def with_nodes(self, nodes: int) -> "Topology":
        return dataclasses.replace(self, nodes=int(nodes))

    def allows(self, algorithm: str, protocol: str) -> bool:
        """Whether the system's NCCL settings let NCCL pick this algorithm and protocol."""
        algos, protos = _names(self.nccl_algo), _names(self.nccl_proto)
        return (not algos or algorithm.lower() in algos) and (
            not protos or protocol.lower() in protos
        )


# NCCL_ALGO / NCCL_PROTO values, lower-cased ("direct" is this model's name for the
# point-to-point paths of all-to-all and send/recv, which NCCL_ALGO does not restrict).
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat")
PROTOCOLS = ("ll", "ll128", "simple")


def _names(setting: str) -> list[str]:
    return [x.strip().lower() for x in setting.split(",") if x.strip()]


FIELDS = {f.name: f for f in dataclasses.fields(Topology)}
REQUIRED = [f.name for f in dataclasses.fields(Topology) if f.default is dataclasses.MISSING]


def shipped_topologies() -> list[str]:
    """The names of the topology files shipped with the package (topologies/*.json)."""
    return sorted(p.stem for p in SHIPPED.glob("*.json"))


def topology_from_dict(data: dict[str, Any], origin: str = "<dict>") -> Topology:
    """A Topology from a JSON object; an unknown or missing key is a ValueError naming
    the key and `origin` (the file)."""
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a topology is a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"{origin}: unknown topology key(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(FIELDS)})"
        )
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{origin}: topology key(s) missing: {', '.join(missing)}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        kind = FIELDS[key].type
        try:
            if kind in ("int", int):
                if isinstance(value, bool) or float(value) != int(value):
                    raise ValueError
                values[key] = int(value)
            elif kind in ("float", float):
                if isinstance(value, bool):
                    raise ValueError
                values[key] = float(value)
            elif kind in ("bool", bool):
                if not isinstance(value, bool):
                    raise ValueError
                values[key] = value
            else:
                if not isinstance(value, str):
                    raise ValueError
                values[key] = value
        except (TypeError, ValueError):
            raise ValueError(
                f"{origin}: topology key {key!r} must be {kind}, got {value!r}"
            ) from None
    return Topology(**values)


def load_topology(path_or_name: Union[str, Path]) -> Topology:
    """A topology from a JSON file, or a shipped one by name ("hgx_h100"; see
    shipped_topologies())."""
    path = Path(path_or_name)
    if not path.exists() and not path.suffix and (SHIPPED / f"{path_or_name}.json").exists():
        path = SHIPPED / f"{path_or_name}.json"
    if not path.exists():
        raise FileNotFoundError(
            f"no topology file {str(path_or_name)!r} (shipped: {', '.join(shipped_topologies())})"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    return topology_from_dict(data, str(path))


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    return dataclasses.asdict(topology)
