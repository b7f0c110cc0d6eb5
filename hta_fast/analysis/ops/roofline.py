"""Roofline of every operator group and kernel: how close each runs to the device's limits.

Each GPU event (kernel, memcpy, memset) is charged to the innermost operator around its
launch that has a cost model with work in it (hta_fast.costs.flops), so `aten::linear ->
aten::addmm -> kernel` charges aten::addmm, and no kernel counts twice. Per operator group
(name + recorded shapes), over the calls that launched GPU work:

    flops, bytes        per call, from the shapes (model.flops); totals = per call x calls
    achieved_flops      total flops / GPU time (FLOP/s); achieved_bandwidth = bytes / time
    intensity           flops / bytes (FLOP/B)
    roofline_time       calls x max(flops / peak FLOP/s, bytes / peak B/s): the least time the
                        device allows; `bound` says which term is larger (compute or memory)
    pct_of_roofline     roofline_time / GPU time x 100
    time_left           GPU time - roofline_time: the ranking key ("time left on the table")

Copies between host and device memory are left out (their limit is the host link, which
the device table does not hold); "coverage" reports their time. The peak FLOP/s is the
device's for the call's precision, on matrix units for GEMMs, convolutions and attention
(model.devices.Device.peak_flops; TF32 for FP32 GEMMs whose kernels are TF32 kernels, with
allow_tf32="auto"). Per kernel name, an
operator's flops and bytes are split over its kernels by their share of its GPU time.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...costs.above_peak import uncertain_rows
from ...costs.cat_sizes import cat_extras
from ...costs.devices import Device, DeviceTable, trace_device, trace_device_note
from ...costs.flops import op_costs
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.graph_attribution import graph_replay_notes, operator_launch_pairs
from ...frame.launches import enclosing
from ...frame.result import Result
from ...trace import Trace
from ...traceset import TraceSet
from .op_table import SHAPE_COLUMNS, group_stats, op_groups

__all__ = ["roofline"]

FLOPS_S = {"unit": "FLOP/s"}
BYTES_S = {"unit": "B/s"}

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        *[pa.field(c, pa.string()) for c in SHAPE_COLUMNS],
        pa.field("family", pa.string()),
        pa.field("precision", pa.string()),
        pa.field("device", pa.string()),
        pa.field("calls", pa.int64()),
        pa.field("gpu_time", pa.int64(), metadata=NS),
        pa.field("flops", pa.float64(), metadata={"unit": "FLOP", "description": "per call"}),
        pa.field("bytes", pa.float64(), metadata={"unit": "B", "description": "per call"}),
        pa.field("achieved_flops", pa.float64(), metadata=FLOPS_S),
        pa.field("achieved_bandwidth", pa.float64(), metadata=BYTES_S),
        pa.field("intensity", pa.float64(), metadata={"unit": "FLOP/B"}),
        pa.field("peak_flops", pa.float64(), metadata=FLOPS_S),
        pa.field("peak_bandwidth", pa.float64(), metadata=BYTES_S),
        pa.field("bound", pa.string()),
        pa.field("roofline_time", pa.float64(), metadata=NS),
        pa.field("pct_of_roofline", pa.float64(), metadata=PCT),
        pa.field("time_left", pa.float64(), metadata=NS),
        pa.field(
            "uncertain",
            pa.bool_(),
            metadata={
                "description": "the model assumed what the trace does not record, or the "
                "row runs above its roofline (uncertain_why says which)"
            },
        ),
        pa.field("uncertain_why", pa.string()),
        pa.field("example_row", pa.int64()),
    ]
)

KERNEL_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("kernel", pa.string()),
        pa.field("count", pa.int64()),
        pa.field("gpu_time", pa.int64(), metadata=NS),
        pa.field("flops", pa.float64(), metadata={"unit": "FLOP"}),
        pa.field("bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("achieved_flops", pa.float64(), metadata=FLOPS_S),
        pa.field("achieved_bandwidth", pa.float64(), metadata=BYTES_S),
        pa.field("intensity", pa.float64(), metadata={"unit": "FLOP/B"}),
        pa.field("roofline_time", pa.float64(), metadata=NS),
        pa.field("pct_of_roofline", pa.float64(), metadata=PCT),
        pa.field("uncertain", pa.bool_()),
        pa.field("uncertain_why", pa.string()),
    ]
)

COVERAGE_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("device", pa.string()),
        pa.field("gpu_time", pa.int64(), metadata=NS),
        pa.field("host_transfer_time", pa.int64(), metadata=NS),
        pa.field("modelled_time", pa.int64(), metadata=NS),
        pa.field("modelled_pct", pa.float64(), metadata=PCT),
    ]
)


class ChargedGroups:
    """One rank's operator groups with their costs and the GPU events charged to them."""

    def __init__(self, trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]):
        self.trace = trace
        g = self.groups = op_groups(trace, mask, op_prefix)
        keys = g.keys
        head = pa.table(
            {
                "name": trace.strings_at(keys[:, 0]),
                **{c: trace.strings_at(keys[:, 1 + j]) for j, c in enumerate(SHAPE_COLUMNS)},
            }
        )
        self.head = head
        self.costs = op_costs(head, cat_extras(trace, g.rows))
        flops = as_numpy(self.costs["flops"])
        nbytes = as_numpy(self.costs["bytes"])
        self.flops = np.nan_to_num(flops.astype(np.float64))
        self.bytes = np.nan_to_num(nbytes.astype(np.float64))
        self.uncertain = np.asarray(as_numpy(self.costs["uncertain"].fill_null(False)), bool)
        has_work = (self.flops > 0) | (self.bytes > 0)
        n_events = len(trace.column("events", "ts"))
        # charge each GPU event to the innermost enclosing operator that has work
        group_of_row = np.full(n_events, -1, np.int64)
        group_of_row[g.rows] = g.group
        target = np.zeros(n_events, bool)
        target[g.rows] = has_work[g.group]
        _, gpu, by = operator_launch_pairs(trace, mask, include_memory_events=True)
        host = host_transfer_names(trace)[trace.column("events", "name")[gpu]]
        self.host_time = int(np.maximum(trace.column("events", "dur"), 0)[gpu[host]].sum())
        gpu, by = gpu[~host], by[~host]
        # a replayed kernel is charged from the launch that captured it, where known
        op = enclosing(trace, by, target)
        self.gpu = gpu  # every selected GPU event
        self.op_row = op  # its operator row, or -1
        self.event_group = np.where(op >= 0, group_of_row[np.maximum(op, 0)], -1)
        dur = np.maximum(trace.column("events", "dur"), 0)
        self.dur = dur[gpu]
        charged = op >= 0
        ng = g.num_groups
        self.gpu_time = np.bincount(
            self.event_group[charged], weights=self.dur[charged], minlength=ng
        ).astype(np.int64)
        # calls = instances with at least one charged event
        calls_rows = np.unique(op[charged])
        self.calls = np.bincount(group_of_row[calls_rows], minlength=ng).astype(np.int64)
        # the time of each charged event's operator instance, for splitting over kernels
        inst_time = np.zeros(n_events, np.float64)
        np.add.at(inst_time, op[charged], self.dur[charged])
        self.share = np.zeros(len(gpu))
        ok = charged & (inst_time[np.maximum(op, 0)] > 0)
        self.share[ok] = self.dur[ok] / inst_time[op[ok]]
        # groups whose kernels are TF32 tensor-core kernels, by name
        tf32_kernel = tf32_kernel_names(trace)[trace.column("events", "name")[gpu]] & charged
        self.tf32_seen = np.bincount(self.event_group[tf32_kernel], minlength=ng) > 0

    def tf32(self, allow_tf32: Union[bool, str]) -> np.ndarray:
        """Per group: whether FP32 matrix work runs at TF32 peaks. "auto": where the group's
        kernels are TF32 kernels by name; True/False: for every group."""
        if allow_tf32 == "auto":
            return self.tf32_seen
        return np.full(self.groups.num_groups, bool(allow_tf32))


# TF32 tensor-core kernels: cuBLAS/CUTLASS names carry "tf32" or the TF32 MMA shape s1688
# (Ampere and later; Volta's s884 kernels are FP16 inputs).
TF32_KERNEL = r"tf32|s1688"


def tf32_kernel_names(trace: Trace) -> np.ndarray:
    """Per string id: the name of a TF32 tensor-core kernel."""
    return as_numpy(pc.match_substring_regex(trace.strings, TF32_KERNEL, ignore_case=True))


def host_transfer_names(trace: Trace) -> np.ndarray:
    """Per string id: a copy to or from host memory ("Memcpy HtoD (Pinned -> Device)"),
    bound by the host link, which the device table does not hold."""
    return as_numpy(pc.match_substring_regex(trace.strings, r"^Memcpy (HtoD|DtoH|HtoH)"))


def _peaks(device: Optional[Device], costs: pa.Table, tf32: np.ndarray) -> tuple[np.ndarray, float]:
    n = costs.num_rows
    if device is None:
        return np.full(n, np.nan), np.nan
    prec = costs["precision"].to_pylist()
    matrix = costs["matrix"].to_pylist()
    peak = np.array(
        [
            device.peak_flops(p, bool(m), bool(t)) if p else np.nan
            for p, m, t in zip(prec, matrix, tf32)
        ],
        np.float64,
    )
    return np.where(peak > 0, peak, np.nan), device.memory_bytes_per_s


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / b, np.nan)


def _rank_tables(
    rank: int,
    trace: Trace,
    mask: Optional[np.ndarray],
    device: Optional[Device],
    op_prefix: Optional[str],
    allow_tf32: Union[bool, str],
) -> tuple[pa.Table, pa.Table, pa.Table]:
    cg = ChargedGroups(trace, mask, op_prefix)
    peak, bw = _peaks(device, cg.costs, cg.tf32(allow_tf32))
    table = _operator_table(rank, cg, peak, bw, device)
    kernels = _kernel_table(rank, trace, cg, peak, bw, device)
    coverage = _coverage_table(rank, cg, device.key if device else None, table)
    return table, kernels, coverage


def _operator_table(
    rank: int, cg: ChargedGroups, peak: np.ndarray, bw: float, device: Optional[Device]
) -> pa.Table:
    """The main table: one row per operator group that ran and has a family, with its
    achieved rates, roofline time and bound."""
    calls, time = cg.calls, cg.gpu_time
    tflops, tbytes = cg.flops * calls, cg.bytes * calls
    secs = time / 1e9
    compute_s = _ratio(tflops, peak)
    memory_s = tbytes / bw if bw == bw else np.full(len(time), np.nan)
    roof = np.fmax(compute_s, memory_s) * 1e9
    bound = np.where(
        np.isnan(roof), np.array(None, object), np.where(compute_s >= memory_s, "compute", "memory")
    )
    s = group_stats(cg.groups)
    family = cg.costs["family"]
    dev_name = device.key if device else None
    pct = _ratio(roof, time.astype(np.float64)) * 100
    uncertain, why = uncertain_rows(
        pct,
        bound.tolist(),
        cg.bytes,
        _ratio(time.astype(np.float64), calls.astype(np.float64)),
        cg.costs["uncertain_why"].to_pylist(),
        device,
    )
    table = pa.table(
        [
            np.full(len(time), rank, np.int64),
            cg.head["name"],
            *[cg.head[c] for c in SHAPE_COLUMNS],
            family,
            cg.costs["precision"],
            array_of([dev_name] * len(time), pa.string()),
            calls,
            time,
            cg.costs["flops"],
            cg.costs["bytes"],
            pa.array(_ratio(tflops, secs), from_pandas=True),
            pa.array(_ratio(tbytes, secs), from_pandas=True),
            pa.array(_ratio(cg.flops, cg.bytes), from_pandas=True),
            pa.array(peak, from_pandas=True),
            pa.array(np.full(len(time), bw), from_pandas=True),
            array_of(bound, pa.string()),
            pa.array(roof, from_pandas=True),
            pa.array(pct, from_pandas=True),
            pa.array(time - roof, from_pandas=True),
            uncertain,
            array_of(why, pa.string()),
            s["example"].astype(np.int64),
        ],
        schema=SCHEMA,
    )
    keep = (calls > 0) & np.asarray(family.is_valid())
    table = table.filter(array_of(keep))
    return table


def _kernel_table(
    rank: int,
    trace: Trace,
    cg: ChargedGroups,
    peak: np.ndarray,
    bw: float,
    device: Optional[Device],
) -> pa.Table:
    """Per kernel name: charged events with their share of their operator's flops and
    bytes, their roofline time and bound."""
    charged = cg.event_group >= 0
    ev_group = cg.event_group[charged]
    share = cg.share[charged]
    k_flops = cg.flops[ev_group] * share
    k_bytes = cg.bytes[ev_group] * share
    k_roof = np.fmax(_ratio(k_flops, peak[ev_group]), k_bytes / bw if bw == bw else np.nan) * 1e9
    names = trace.column("events", "name")[cg.gpu[charged]]
    uniq, inv = np.unique(names, return_inverse=True)
    nk = len(uniq)
    k_time = np.bincount(inv, weights=cg.dur[charged], minlength=nk)
    kf = np.bincount(inv, weights=k_flops, minlength=nk)
    kb = np.bincount(inv, weights=k_bytes, minlength=nk)
    kr = np.bincount(inv, weights=np.nan_to_num(k_roof), minlength=nk)
    if device is None:
        kr = np.full(nk, np.nan)
    k_pct = _ratio(kr, k_time) * 100
    k_count = np.bincount(inv, minlength=nk).astype(np.float64)
    k_assumed = np.bincount(inv, weights=cg.uncertain[ev_group], minlength=nk) > 0
    k_bound = np.where(
        np.bincount(inv, weights=k_bytes / bw if bw == bw else 0 * k_bytes, minlength=nk)
        >= np.bincount(inv, weights=np.nan_to_num(_ratio(k_flops, peak[ev_group])), minlength=nk),
        "memory",
        "compute",
    )
    k_uncertain, k_why = uncertain_rows(
        k_pct,
        k_bound.tolist(),
        _ratio(kb, k_count),
        _ratio(k_time, k_count),
        [
            "an operator it ran for is costed on an assumption (see the operator rows)"
            if a
            else None
            for a in k_assumed
        ],
        device,
    )
    return pa.table(
        [
            np.full(nk, rank, np.int64),
            trace.strings_at(uniq),
            np.bincount(inv, minlength=nk).astype(np.int64),
            k_time.astype(np.int64),
            kf,
            kb,
            pa.array(_ratio(kf, k_time / 1e9), from_pandas=True),
            pa.array(_ratio(kb, k_time / 1e9), from_pandas=True),
            pa.array(_ratio(kf, kb), from_pandas=True),
            pa.array(kr, from_pandas=True),
            pa.array(k_pct, from_pandas=True),
            k_uncertain,
            array_of(k_why, pa.string()),
        ],
        schema=KERNEL_SCHEMA,
    )


def _coverage_table(
    rank: int, cg: ChargedGroups, dev_name: Optional[str], table: pa.Table
) -> pa.Table:
    """How much of the rank's GPU time the operator table models."""
    total = int(cg.dur.sum()) + cg.host_time
    modelled = int(as_numpy(table["gpu_time"]).sum()) if table.num_rows else 0
    return pa.table(
        [
            [rank],
            [dev_name],
            [total],
            [cg.host_time],
            [modelled],
            [100.0 * modelled / total if total else None],
        ],
        schema=COVERAGE_SCHEMA,
    )


def resolve_device(
    trace: Trace, device: Union[str, Device, None], table: DeviceTable
) -> Optional[Device]:
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        return table.get(device)
    return trace_device(trace, table)


def roofline(
    traces: Union[Trace, TraceSet],
    *,
    device: Union[str, Device, None] = None,
    devices_file: Optional[str] = None,
    allow_tf32: Union[bool, str] = "auto",
    op_prefix: Optional[str] = None,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Operator groups with a cost model and GPU work, ranked by time_left (descending).
    `device`: a device table key or name (default: each trace's own deviceProperties);
    `devices_file`: a user device table tried before the built-in one; `allow_tf32`: whether
    FP32 GEMMs run at TF32 peaks ("auto": where their kernels' names say so). Side tables:
    "kernels" (per kernel name), "coverage" (GPU time charged to modelled operators)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    dev_table = DeviceTable.load(devices_file)
    parts, kparts, cparts, notes = [], [], [], []
    for rank, trace, mask in select.each_rank(traces, sel):
        dev = resolve_device(trace, device, dev_table)
        how = trace_device_note(trace, dev_table) if device is None else None
        if device is not None and dev is not None and dev.stands_in:
            how = f"{dev.key} {dev.stands_in}"
        if how:
            notes.append(f"rank {rank}: device {how}")
        if dev is None:
            names = [d.get("name") for d in trace.meta.devices if isinstance(d, dict)]
            notes.append(
                f"rank {rank}: device {names[0] if names else 'unknown'!r} is not in "
                "the device table: roofline columns are null (pass device=)"
            )
        t, k, c = _rank_tables(rank, trace, mask, dev, op_prefix, allow_tf32)
        parts.append(t)
        kparts.append(k)
        cparts.append(c)
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    table = table.sort_by([("time_left", "descending"), ("gpu_time", "descending")])
    kernels = pa.concat_tables(kparts) if kparts else KERNEL_SCHEMA.empty_table()
    kernels = kernels.sort_by([("rank", "ascending"), ("gpu_time", "descending")])
    coverage = pa.concat_tables(cparts) if cparts else COVERAGE_SCHEMA.empty_table()
    if not table.num_rows:
        notes.append("no operator with recorded shapes and a cost model launched GPU work")
    notes += graph_replay_notes(traces, sel)
    return Result(
        "roofline",
        table,
        tables={"kernels": kernels, "coverage": coverage},
        notes=notes,
        params=dict(device=device, allow_tf32=allow_tf32, op_prefix=op_prefix, selection=sel),
    )
