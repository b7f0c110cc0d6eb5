"""The collective cost model of a trace: the machine-aware model (collective_model, topology)
calibrated on the trace's own collectives (trace_machine), so that one model answers for
the sizes, group sizes and node counts a trace shows and for those it does not.

fit_collectives takes the recorded machine (the shipped topology the trace's GPU calls for,
hta_fast.model.comm.recorded_topology; a given topology instead) and fits the link figures
the trace's sized collectives exercise (calibrate). Each collective's time is its time
moving data: the shortest duration across the ranks that ran it. A trace without collective
sizes calibrates nothing, and the notes say so: the file's figures stand.

Bandwidth is the algorithm bandwidth (bytes / time, nccl-tests' convention for bytes);
busbw_gbps multiplies it by nccl-tests' bus factor, the figure comparable across group
sizes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...costs.collectives import bus_factor
from ...frame.fields import NS
from ...frame.result import Result
from ...trace import Trace
from ...traceset import TraceSet
from .collective_model import KINDS, predict_collectives
from .recorded_topology import FALLBACK, recorded_machine
from .topology import Topology, load_topology
from .trace_machine import MODEL_KIND, calibrated_machine, observations, with_link_scale

# A size at which every candidate's latency is under 0.1 % of its time: the bandwidth a
# collective tends to (its asymptote).
ASYMPTOTE_BYTES = float(2**36)


@dataclasses.dataclass(frozen=True)
class CostModel:
    """machine: the calibrated topology; observed: the trace's sized collectives
    (collective, group_size, bytes, data_time, ranks); notes. A bandwidth change
    (with_bandwidth) is kept beside the machine: `scale` multiplies every link, or
    `busbw_gbps` sets each collective's bus bandwidth at large sizes; `kinds`: the
    collectives it applies to (None: all)."""

    machine: Topology
    observed: pa.Table
    notes: tuple[str, ...] = ()
    scale: float = 1.0
    busbw_gbps: Optional[float] = None
    kinds: Optional[frozenset[str]] = None

    def _link_scale(self, kind: str, group_size: int) -> float:
        if self.kinds is not None and kind not in self.kinds:
            return 1.0
        if self.busbw_gbps is None:
            return self.scale
        at = predict_collectives(kind, [ASYMPTOTE_BYTES], self.machine, ranks=group_size)[0]
        return self.busbw_gbps / at.busbw_gbps if at.busbw_gbps > 0 else 1.0

    def predict(
        self, kind: str, nbytes: Union[float, np.ndarray], group_size: int
    ) -> Union[float, np.ndarray]:
        """Predicted time moving data, in ns, of a `kind` collective (as
        hta_fast.analysis.collectives names it) of nbytes over group_size ranks. KeyError
        for a collective the model does not know (barrier, reduce)."""
        model_kind = MODEL_KIND.get(kind)
        if model_kind is None:
            raise KeyError(f"the collective model has no {kind!r} (it models: {', '.join(KINDS)})")
        g = int(group_size)
        machine = with_link_scale(self.machine, self._link_scale(model_kind, g))
        sizes = np.atleast_1d(np.asarray(nbytes, np.float64))
        ns = np.array(
            [p.time_us * 1e3 for p in predict_collectives(model_kind, sizes, machine, ranks=g)]
        )
        return float(ns[0]) if np.ndim(nbytes) == 0 else ns

    def with_bandwidth(
        self,
        scale: Optional[float] = None,
        *,
        busbw_gbps: Optional[float] = None,
        kinds: Optional[Iterable[str]] = None,
    ) -> "CostModel":
        """A new model with a faster or slower interconnect: every link's bandwidth times
        `scale` (2.0: links twice as fast), or the links set so that each collective
        reaches `busbw_gbps` of bus bandwidth at large sizes. Latencies are kept, and the
        algorithm and protocol are chosen again at each size. `kinds` limits the change to
        those collectives."""
        if (scale is None) == (busbw_gbps is None):
            raise ValueError("with_bandwidth takes one of scale or busbw_gbps")
        value = scale if scale is not None else busbw_gbps
        assert value is not None
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"bandwidth change must be a positive number, got {value!r}")
        wanted = None if kinds is None else frozenset(MODEL_KIND.get(k, k) for k in kinds)
        if busbw_gbps is not None:
            return dataclasses.replace(self, scale=1.0, busbw_gbps=float(busbw_gbps), kinds=wanted)
        return dataclasses.replace(self, scale=self.scale * float(value), kinds=wanted)

    def table(self) -> Result:
        """Result "collective_cost": one row per (collective, group_size) the trace shows:
        nodes, collectives, sizes (distinct), algorithm (NCCL's choice at the median
        size), latency_ns (the time of an empty one), bandwidth_gbps (algorithm bandwidth
        at large sizes), busbw_gbps, fit_error_pct (median relative error against the
        fastest time at each size), one_rank (seen on one rank: times include waiting)."""
        rows = []
        for kind, g, sizes, times, one_rank in _groups(self.observed):
            at = np.unique(sizes)
            fastest = np.array([times[sizes == s].min() for s in at])
            pred = np.asarray(self.predict(kind, at, g), np.float64)
            scale = self._link_scale(MODEL_KIND[kind], g)
            machine = with_link_scale(self.machine, scale)
            mid, empty, big = predict_collectives(
                MODEL_KIND[kind], [float(np.median(sizes)), 0.0, ASYMPTOTE_BYTES], machine, ranks=g
            )
            rows.append(
                {
                    "collective": kind,
                    "group_size": g,
                    "nodes": mid.nodes,
                    "collectives": len(sizes),
                    "sizes": len(at),
                    "algorithm": f"{mid.algorithm}/{mid.protocol}",
                    "latency_ns": empty.time_us * 1e3,
                    "bandwidth_gbps": big.algbw_gbps,
                    "busbw_gbps": big.algbw_gbps * bus_factor(kind, g),
                    "fit_error_pct": float(np.median(np.abs(pred / fastest - 1))) * 100,
                    "one_rank": one_rank,
                }
            )
        return Result("collective_cost", _cost_table(rows), notes=list(self.notes))

    def __repr__(self) -> str:
        return f"<CostModel on {self.machine.name}: {len(list(_groups(self.observed)))} collectives kinds>"


SCHEMA = pa.schema(
    [
        pa.field("collective", pa.string()),
        pa.field("group_size", pa.int64()),
        pa.field("nodes", pa.int64()),
        pa.field("collectives", pa.int64()),
        pa.field("sizes", pa.int64()),
        pa.field("algorithm", pa.string()),
        pa.field("latency_ns", pa.float64(), metadata=NS),
        pa.field("bandwidth_gbps", pa.float64(), metadata={"unit": "GB/s"}),
        pa.field("busbw_gbps", pa.float64(), metadata={"unit": "GB/s"}),
        pa.field("fit_error_pct", pa.float64()),
        pa.field("one_rank", pa.bool_()),
    ]
)


def _cost_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table({f.name: array_of([r[f.name] for r in rows], f.type) for f in SCHEMA}).cast(
        SCHEMA
    )


def _sized(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """kind, group size, bytes, time and ranks of each row, and which rows are sized."""
    kind = (
        np.asarray(table["collective"].to_pylist(), object)
        if table.num_rows
        else np.zeros(0, object)
    )
    n = as_numpy(table["group_size"]).astype(np.float64)
    nbytes = as_numpy(table["bytes"]).astype(np.float64)
    time = as_numpy(table["data_time"]).astype(np.float64)
    sized = np.isfinite(nbytes) & np.isfinite(n) & np.isfinite(time) & (time > 0)
    return kind, n, nbytes, time, sized


def _groups(table: pa.Table) -> Iterable[tuple[str, int, np.ndarray, np.ndarray, bool]]:
    """(collective, group size, sizes, times, one_rank) per group the model knows."""
    kind, n, nbytes, time, sized = _sized(table)
    ranks = (
        as_numpy(table["ranks"]).astype(np.float64)
        if "ranks" in table.column_names
        else np.full(len(kind), np.nan)
    )
    for c, g in sorted({(kind[i], int(n[i])) for i in np.flatnonzero(sized)}):
        if MODEL_KIND.get(c) is None:
            continue
        rows = sized & (kind == c) & (n == g)
        yield c, g, nbytes[rows], time[rows], bool(np.all(ranks[rows] <= 1)) and g > 1


def fit_collectives(source: Any, *, topology: Union[str, Topology, None] = None) -> CostModel:
    """The collective cost model of `source` (a Trace, TraceSet, TraceDataset,
    {rank: RankSummary}, the collectives() Result, or an Arrow table with collective,
    group_size, bytes, data_time): the recorded machine (a Trace or TraceSet's GPU and
    ranks; `topology`, a file, shipped name or Topology, instead) calibrated on its sized
    collectives."""
    table, upstream = observations(source)
    groups = [int(g) for g in as_numpy(table["group_size"]) if g == g]
    if topology is not None:
        machine = topology if isinstance(topology, Topology) else load_topology(topology)
        world = max([machine.ranks, *groups])
        machine = dataclasses.replace(machine, nodes=math.ceil(world / machine.gpus_per_node))
        how = f"machine: given, {machine.name}"
    elif isinstance(source, (Trace, TraceSet)):
        recorded = recorded_machine(source, groups)
        machine, how = recorded.topology, recorded.how
    else:
        machine = load_topology(FALLBACK)
        how = (
            f"machine: {FALLBACK}'s figures standing in (a table of collectives names no "
            f"device; pass topology=)"
        )
    return cost_model(table, machine, how, upstream)


def cost_model(
    table: pa.Table, machine: Topology, how: str, upstream: Iterable[str] = ()
) -> CostModel:
    """The model of these observed collectives (observations()' table) on `machine`
    (how: a note saying where its figures come from), calibrated on the sized ones."""
    notes = [n for n in upstream if "no size" in n or "no communication" in n]
    kind, _, _, _, sized = _sized(table)
    notes.append(how)
    if table.num_rows and not sized.any():
        notes.append(
            "no collective in this trace records its size: the model is not calibrated "
            "(sizes come from collective arguments, record_param_comms with "
            "in/out_msg_nelems)"
        )
    observed = table.filter(array_of(sized))
    fitted, detail = calibrated_machine(machine, observed)
    notes.append(f"the machine's figures {detail}")
    for c, g, _, _, one_rank in _groups(observed):
        if one_rank:
            notes.append(
                f"{c} over {g} ranks was seen on one rank only: its times include "
                "waiting for the other ranks, so the bandwidth is a lower bound"
            )
    unknown = sorted({str(k) for k in kind[sized] if MODEL_KIND.get(k) is None})
    if unknown:
        notes.append(f"not modelled: {', '.join(unknown)} (the model knows {', '.join(KINDS)})")
    return CostModel(fitted, observed, tuple(notes))


def collective_time_factors(source: Any, base: CostModel, changed: CostModel) -> pa.Table:
    """How much each matched collective of `source` speeds up or slows down when the
    base model is replaced by the changed one (a what-if edit multiplies each
    collective's time moving data by its factor): one row per matched collective with
    group, index, collective, group_size, bytes, data_time, base_ns, changed_ns and
    factor = changed_ns / base_ns. A collective without a size or that the model does not
    know keeps factor 1.0 (its time is not changed) and null predictions."""
    table, _ = observations(source)
    kind, n, nbytes, _, _ = _sized(table)
    base_ns = np.full(len(kind), np.nan)
    changed_ns = np.full(len(kind), np.nan)
    sized = np.isfinite(nbytes) & np.isfinite(n)
    # One prediction per (collective, group size), over all its collectives at once.
    for c, g in {(kind[i], int(n[i])) for i in np.flatnonzero(sized)}:
        rows = sized & (kind == c) & (n == g)
        try:
            b, a = base.predict(c, nbytes[rows], g), changed.predict(c, nbytes[rows], g)
        except KeyError:
            continue
        base_ns[rows], changed_ns[rows] = b, a
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(base_ns > 0, changed_ns / base_ns, 1.0)
    factor = np.where(np.isfinite(factor), factor, 1.0)
    keep = [
        c
        for c in ("group", "index", "collective", "group_size", "bytes", "data_time")
        if c in table.column_names
    ]
    return (
        table.select(keep)
        .append_column(
            pa.field("base_ns", pa.float64(), metadata=NS),
            array_of(base_ns, pa.float64(), mask=np.isnan(base_ns)),
        )
        .append_column(
            pa.field("changed_ns", pa.float64(), metadata=NS),
            array_of(changed_ns, pa.float64(), mask=np.isnan(changed_ns)),
        )
        .append_column("factor", array_of(factor, pa.float64()))
    )
