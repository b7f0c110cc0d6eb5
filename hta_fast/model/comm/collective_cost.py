"""Collective cost model: time = latency + bytes / bandwidth per (collective, group size,
transport), fitted to the trace's own collectives.

The time of a collective is its time moving data: the shortest duration across the ranks
that ran it (hta_fast.analysis.collectives), so a rank waiting for a late one is not
counted as slow communication. Each (collective, group size, transport) gets its own
curve (hta_fast.costs.time_fit: lower envelope per size, relative least squares, the
piecewise knee curve where five or more distinct sizes exist). Bandwidth is the
algorithm bandwidth (bytes / time, nccl-tests' convention for bytes); busbw_gbps in the
table multiplies it by nccl-tests' bus factor, the figure comparable across group sizes.

The transport (NVLink, InfiniBand, PCIe) is not recorded in Kineto traces: it is
"unknown" unless the caller names it. A trace without collective sizes gives no curve,
and the notes say so: no number is invented.

The same observations calibrate the machine-aware model (collective_model, topology):
trace_measurements turns them into calibrate()'s rows, so that one trace's collectives fit
the links' figures and the model then predicts other sizes, group sizes and node counts.
"""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any, Iterable, Optional, Union

import numpy as np
import pyarrow as pa

from ...analysis.collectives import collectives
from ...costs.collectives import bus_factor
from ...costs.time_fit import TimeFit, fit_time
from ...frame.fields import NS
from ...frame.result import Result
from ...loading.summary import RankSummary
from ...trace import Trace
from ...traceset import TraceSet
from .collective_model import KINDS

Key = tuple[str, int, str]  # (collective, group size, transport)

# Columns an observations table passed to fit_collectives must have.
OBSERVATION_COLUMNS = ("collective", "group_size", "bytes", "data_time")


@dataclasses.dataclass(frozen=True)
class CollectiveFit:
    """The curve of one (collective, group size, transport) and how well it fits."""

    key: Key
    fit: TimeFit
    collectives: int  # sized collectives used
    sizes: int  # distinct sizes among them
    fit_error_pct: float  # mean relative error on the lower envelope
    holdout_error_pct: float  # leave-one-size-out error (NaN under three sizes)
    one_rank: bool  # seen on one rank only: times include waiting


class CostModel:
    """Fitted collective curves. predict(kind, nbytes, group_size) -> ns; with_bandwidth
    for what-if; table() for the parameters."""

    def __init__(self, fits: dict[Key, CollectiveFit], notes: Iterable[str] = ()):
        self.fits = dict(fits)
        self.notes = list(notes)

    def _find(self, kind: str, group_size: int, transport: Optional[str]) -> CollectiveFit:
        hits = [
            f
            for k, f in self.fits.items()
            if k[0] == kind and k[1] == int(group_size) and (transport is None or k[2] == transport)
        ]
        if not hits:
            have = ", ".join(f"{k[0]}/{k[1]}/{k[2]}" for k in sorted(self.fits)) or "none"
            raise KeyError(
                f"no fitted curve for {kind} over {group_size} ranks"
                f"{'' if transport is None else ' on ' + transport}"
                f" (fitted: {have})"
            )
        return max(hits, key=lambda f: f.collectives)

    def predict(
        self,
        kind: str,
        nbytes: Union[float, np.ndarray],
        group_size: int,
        transport: Optional[str] = None,
    ) -> Union[float, np.ndarray]:
        """Predicted time moving data, in ns, of a `kind` collective of nbytes over
        group_size ranks (any transport fitted for it unless one is named). KeyError,
        naming what was fitted, when no curve matches."""
        return self._find(kind, group_size, transport).fit.predict(nbytes)

    def with_bandwidth(
        self,
        scale: Optional[float] = None,
        *,
        busbw_gbps: Optional[float] = None,
        kinds: Optional[Iterable[str]] = None,
    ) -> "CostModel":
        """A new model with a faster or slower interconnect: bandwidth times `scale`
        (2.0: a link twice as fast), or the bus bandwidth set to `busbw_gbps` (each
        curve's algorithm bandwidth = busbw / bus factor). Latency is kept. `kinds`
        limits the change to those collectives."""
        if (scale is None) == (busbw_gbps is None):
            raise ValueError("with_bandwidth takes one of scale or busbw_gbps")
        value = scale if scale is not None else busbw_gbps
        assert value is not None
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"bandwidth change must be a positive number, got {value!r}")
        wanted = None if kinds is None else set(kinds)
        out = {}
        for key, f in self.fits.items():
            if (wanted is not None and key[0] not in wanted) or f.fit.form == "latency":
                out[key] = f
                continue
            factor = (
                scale
                if scale is not None
                else value / bus_factor(key[0], key[1]) / f.fit.bandwidth_gbps
            )
            out[key] = dataclasses.replace(f, fit=f.fit.scaled(float(factor)))
        return CostModel(out, self.notes)

    def table(self) -> Result:
        """Result "collective_cost": one row per fitted curve: collective, group_size,
        transport, form (linear / piecewise / bandwidth / latency), collectives, sizes,
        latency_ns, bandwidth_gbps (algorithm), busbw_gbps, knee_bytes (null unless
        piecewise), fit_error_pct, holdout_error_pct (null under three sizes), one_rank."""
        fits = [self.fits[k] for k in sorted(self.fits)]
        bw = [f.fit.bandwidth_gbps for f in fits]
        t = pa.table(
            {
                "collective": pa.array([f.key[0] for f in fits], pa.string()),
                "group_size": pa.array([f.key[1] for f in fits], pa.int64()),
                "transport": pa.array([f.key[2] for f in fits], pa.string()),
                "form": pa.array([f.fit.form for f in fits], pa.string()),
                "collectives": pa.array([f.collectives for f in fits], pa.int64()),
                "sizes": pa.array([f.sizes for f in fits], pa.int64()),
                "latency_ns": pa.array([f.fit.latency_ns for f in fits], pa.float64()),
                "bandwidth_gbps": pa.array(bw, pa.float64()),
                "busbw_gbps": pa.array(
                    [b * bus_factor(f.key[0], f.key[1]) for b, f in zip(bw, fits)], pa.float64()
                ),
                "knee_bytes": pa.array([f.fit.knee_bytes for f in fits], pa.float64()),
                "fit_error_pct": pa.array([f.fit_error_pct for f in fits], pa.float64()),
                "holdout_error_pct": pa.array(
                    [f.holdout_error_pct for f in fits], pa.float64(), from_pandas=True
                ),
                "one_rank": pa.array([f.one_rank for f in fits], pa.bool_()),
            }
        )
        units = {
            "latency_ns": NS,
            "bandwidth_gbps": {"unit": "GB/s"},
            "busbw_gbps": {"unit": "GB/s"},
            "knee_bytes": {"unit": "B"},
        }
        t = t.cast(
            pa.schema([f.with_metadata(units[f.name]) if f.name in units else f for f in t.schema])
        )
        return Result("collective_cost", t, notes=self.notes)

    def __repr__(self) -> str:
        return f"<CostModel {len(self.fits)} curves>"


def _observations(source: Any) -> tuple[pa.Table, list[str]]:
    """The matched collectives table (collective, group_size, bytes, data_time, ranks) of
    a trace, trace set, dataset, rank -> RankSummary dict, collectives Result or table."""
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
            f"fit_collectives takes a Trace, TraceSet, TraceDataset, "
            f"{{rank: RankSummary}}, collectives Result or Arrow table, not "
            f"{type(source).__name__}"
        )
    result = collectives(source)
    return result.table, list(result.notes)


def fit_collectives(source: Any, *, transport: str = "unknown") -> CostModel:
    """Fit one curve per (collective, group size) of the collectives in `source` (a
    Trace, TraceSet, TraceDataset, {rank: RankSummary}, the collectives() Result, or an
    Arrow table with collective, group_size, bytes, data_time). `transport` labels
    every curve (Kineto does not record it)."""
    table, upstream = _observations(source)
    notes = [n for n in upstream if "no size" in n or "no communication" in n]
    kind = (
        np.asarray(table["collective"].to_pylist(), dtype=object).astype(str)
        if table.num_rows
        else np.zeros(0, str)
    )
    n = np.asarray(table["group_size"].to_numpy(zero_copy_only=False), np.float64)
    nbytes = np.asarray(table["bytes"].to_numpy(zero_copy_only=False), np.float64)
    time = np.asarray(table["data_time"].to_numpy(zero_copy_only=False), np.float64)
    ranks = (
        np.asarray(table["ranks"].to_numpy(zero_copy_only=False), np.float64)
        if "ranks" in table.column_names
        else np.full(len(kind), np.nan)
    )
    sized = np.isfinite(nbytes) & np.isfinite(n) & np.isfinite(time) & (time > 0)
    if table.num_rows and not sized.any():
        notes.append(
            "no collective in this trace records its size: no cost curve is fitted "
            "(sizes come from collective arguments, record_param_comms with "
            "in/out_msg_nelems)"
        )
    fits: dict[Key, CollectiveFit] = {}
    for c, g in sorted({(kind[i], int(n[i])) for i in np.flatnonzero(sized)}):
        rows = sized & (kind == c) & (n == g)
        fit, err, held = fit_time(nbytes[rows], time[rows])
        one_rank = bool(np.all(ranks[rows] <= 1)) and g > 1
        key = (c, g, transport)
        fits[key] = CollectiveFit(
            key, fit, int(rows.sum()), len(np.unique(nbytes[rows])), err, held, one_rank
        )
        if one_rank:
            notes.append(
                f"{c} over {g} ranks was seen on one rank only: its times include "
                "waiting for the other ranks, so the bandwidth is a lower bound"
            )
        if fit.form == "bandwidth":
            notes.append(
                f"{c} over {g} ranks has one size only: latency cannot be told "
                "from bandwidth (all time counted as bandwidth)"
            )
    return CostModel(fits, notes)


def trace_measurements(source: Any, gpus_per_node: int) -> list[dict[str, Any]]:
    """The sized collectives of `source` (as fit_collectives takes it) as calibrate()'s
    measurements: kind, size_bytes, ranks (the group size), nodes (the group's ranks
    filling nodes of gpus_per_node in order) and time_s (the time moving data). Kinds the
    model does not know (barrier, reduce) are left out."""
    table, _ = _observations(source)
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be >= 1, got {gpus_per_node}")
    kind = table["collective"].to_pylist()
    n = np.asarray(table["group_size"].to_numpy(zero_copy_only=False), np.float64)
    nbytes = np.asarray(table["bytes"].to_numpy(zero_copy_only=False), np.float64)
    time = np.asarray(table["data_time"].to_numpy(zero_copy_only=False), np.float64)
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
        if kind[i] in KINDS
    ]


def collective_time_factors(source: Any, base: CostModel, changed: CostModel) -> pa.Table:
    """How much each matched collective of `source` speeds up or slows down when the
    base model is replaced by the changed one (a what-if edit multiplies each
    collective's time moving data by its factor): one row per matched collective with
    group, index, collective, group_size, bytes, data_time, base_ns, changed_ns and
    factor = changed_ns / base_ns. A collective without a size or a curve keeps factor
    1.0 (its time is not changed) and null predictions."""
    table, _ = _observations(source)
    kind = (
        np.asarray(table["collective"].to_pylist(), dtype=object).astype(str)
        if table.num_rows
        else np.zeros(0, str)
    )
    n = np.asarray(table["group_size"].to_numpy(zero_copy_only=False), np.float64)
    nbytes = np.asarray(table["bytes"].to_numpy(zero_copy_only=False), np.float64)
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
            pa.array(base_ns, pa.float64(), from_pandas=True),
        )
        .append_column(
            pa.field("changed_ns", pa.float64(), metadata=NS),
            pa.array(changed_ns, pa.float64(), from_pandas=True),
        )
        .append_column("factor", pa.array(factor, pa.float64()))
    )
