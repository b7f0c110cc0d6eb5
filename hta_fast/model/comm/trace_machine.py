"""A trace's collectives as measurements of its machine: the rows calibrate() fits and the
calibrated machine every collective what-if costs its collectives on (the bandwidth edit,
the world-size and topology edit, fit_collectives).

The time of a collective is its time moving data: the shortest duration across the ranks
that ran it (hta_fast.analysis.collectives), so a rank waiting for a late one is not
counted as slow communication. On a one-rank trace it is the whole duration, waits
included: an upper bound.
"""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...analysis.collectives import collectives
from ...frame.result import Result
from ...loading.summary import RankSummary
from ...trace import Trace
from ...traceset import TraceSet
from .calibrate import calibrate
from .collective_model import KINDS
from .topology import Topology

# collectives as hta_fast.analysis.collectives names them -> the model's kinds
MODEL_KIND = {**{k: k for k in KINDS}, "send": "send_recv", "recv": "send_recv"}

# Columns an observations table must have.
OBSERVATION_COLUMNS = ("collective", "group_size", "bytes", "data_time")


def observations(source: Any) -> tuple[pa.Table, list[str]]:
    """The matched collectives table (collective, group_size, bytes, data_time, ranks) of
    a trace, trace set, dataset, rank -> RankSummary dict, collectives Result or table,
    and the notes of the analysis that matched them."""
    if isinstance(source, Result):
        return source.table, list(source.notes)
    if isinstance(source, pa.Table):
        missing = [c for c in OBSERVATION_COLUMNS if c not in source.column_names]
        if missing:
            raise ValueError(
                f"collective observations lack column(s) {missing}; "
                f"need {list(OBSERVATION_COLUMNS)}"
            )
        return source, []
    if (
        isinstance(source, dict)
        and source
        and all(isinstance(s, RankSummary) for s in source.values())
    ):
        source = types.SimpleNamespace(summaries=source)
    elif not (isinstance(source, (Trace, TraceSet)) or hasattr(source, "summaries")):
        raise TypeError(
            f"collective observations come from a Trace, TraceSet, TraceDataset, "
            f"{{rank: RankSummary}}, collectives Result or Arrow table, not "
            f"{type(source).__name__}"
        )
    result = collectives(source)
    return result.table, list(result.notes)


def trace_measurements(source: Any, gpus_per_node: int) -> list[dict[str, Any]]:
    """The sized collectives of `source` (as observations() takes it) as calibrate()'s
    measurements: kind (the model's), size_bytes, ranks (the group size), nodes (the
    group's ranks filling nodes of gpus_per_node in order) and time_s (the time moving
    data). Kinds the model does not know (barrier, reduce) are left out."""
    table, _ = observations(source)
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be >= 1, got {gpus_per_node}")
    kind = [MODEL_KIND.get(k, "") for k in table["collective"].to_pylist()]
    n = as_numpy(table["group_size"]).astype(np.float64)
    nbytes = as_numpy(table["bytes"]).astype(np.float64)
    time = as_numpy(table["data_time"]).astype(np.float64)
    keep = np.isfinite(nbytes) & np.isfinite(n) & np.isfinite(time) & (time > 0) & (n >= 1)
    return [
        {
            "kind": kind[i],
            "size_bytes": float(nbytes[i]),
            "ranks": int(n[i]),
            "nodes": int(math.ceil(n[i] / gpus_per_node)),
            "time_s": float(time[i]) * 1e-9,
        }
        for i in np.flatnonzero(keep)
        if kind[i]
    ]


def _fastest(measurements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest measurement of each kind, size and shape: interference, throttling and
    queueing only ever slow a collective, so the lower envelope is the machine's time."""
    best: dict[tuple, dict[str, Any]] = {}
    for m in measurements:
        key = (m["kind"], m["size_bytes"], m["ranks"], m["nodes"])
        if key not in best or m["time_s"] < best[key]["time_s"]:
            best[key] = m
    return list(best.values())


def calibrated_machine(machine: Topology, observed: pa.Table) -> tuple[Topology, str]:
    """The machine fitted to the observed collectives over two ranks or more that record
    their size (observations()' columns; the fastest of each kind, size and group size),
    and a note saying how. Where no observed
    collective crossed nodes, the network keeps the file's figure times the share of
    theirs the intra-node links reached (fitted / file bandwidth): a node measured at a
    tenth of its NVLink figure is not given its network at the vendor's."""
    group = as_numpy(observed["group_size"]).astype(np.float64) if observed.num_rows else None
    if group is None or not (group > 1).any():
        return machine, "not calibrated: no collective over two or more ranks records its size"
    rows = observed.filter(array_of(group > 1))
    measurements = _fastest(trace_measurements(rows, machine.gpus_per_node))
    if not measurements:
        return machine, "not calibrated: no collective over two or more ranks records its size"
    try:
        fitted = calibrate(machine, measurements)
    except ValueError as e:
        return machine, f"not calibrated ({e})"
    detail = fitted.source.split("; from:")[0]
    share = fitted.intra_node_gbps / machine.intra_node_gbps
    if fitted.network_gbps_per_node == machine.network_gbps_per_node and share != 1.0:
        fitted = dataclasses.replace(
            fitted, network_gbps_per_node=machine.network_gbps_per_node * share
        )
        detail += (
            f"; the network, which no recorded collective crossed, gets the intra-node "
            f"links' measured share of the file's figure ({share:.3f}): "
            f"{fitted.network_gbps_per_node:.1f} GB/s per node"
        )
    return fitted, detail


def with_link_scale(machine: Topology, scale: float) -> Topology:
    """The machine with every link's bandwidth (intra-node and network) times `scale`;
    latencies kept."""
    return dataclasses.replace(
        machine,
        intra_node_gbps=machine.intra_node_gbps * scale,
        network_gbps_per_node=machine.network_gbps_per_node * scale,
    )
