"""Predict each kernel's time on another GPU from a trace recorded on this one.

Kernels charged to an operator with a cost model (see analysis.ops.roofline) follow their
family's kernel model (costs.kernel_model): each call's time less its launch latency (the
part at the trace's launch floor) is its work, which scales by the ratio of the operator's
roofline times on the two devices, corrected by the trace's own efficiency curve for the
family and held between 1 and that ratio; the latency keeps its time, unless the target's
launch floor is given (`device_floor_ns`, e.g. `launch_floor_of` a trace recorded there).
Other compute kernels are assumed bound by memory bandwidth: their work scales by the ratio
of the two devices' bandwidths, their latency as above. Two kinds take the one-ratio
baseline instead (dur x the target's peak over the source's, by the operator's bound; the
bandwidth ratio without one), which the events table carries for every event
(`ratio_predicted`): the families the kernel model does not beat it on over the measured
GPU-swap pairs (RATIO_FAMILIES), and the work of graph replays no capture explains. Communication kernels and host
transfers keep their measured time: they depend on the network and the host link, not on
the GPU.

Result: per family the measured and predicted GPU time (main table), per operator group
("ops"), and per GPU event its predicted duration ("events": row, dur, predicted), which a
schedule replay can use for "this step on another GPU".
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..analysis.ops.roofline import ChargedGroups, resolve_device
from ..costs.devices import Device, DeviceTable
from ..costs.kernel_model import (
    KernelModels,
    fit_models,
    latency_part,
    launch_floor,
    scale_kernels,
)
from ..frame import select
from ..frame.fields import NS
from ..frame.graph_attribution import replay_match
from ..frame.graph_replays import graph_replays, has_graph_launches
from ..frame.result import Result
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from .predict_errors import family_band, no_change_closer

__all__ = ["predict", "launch_floor_of", "RATIO_FAMILIES"]

UNMODELLED, COMM, HOST = "(unmodelled compute)", "(communication)", "(host transfer)"
REPLAYED = "(graph replay, no capture)"

# Families whose kernel model loses to the one-ratio baseline on the shared GPU-swap pairs
# (pairs/gpu_swap, both directions: the summed |error| of each family's kernel time per step,
# benchmarks/eval_predict.py --kernel-time; docs/ops.md has the table): they are predicted
# by the ratio. conv: model 118 % and 52 %, ratio 79 % and 44 % (Falconsai, both ways).
# tests/model/test_predict_pairs.py recomputes the errors and checks this set against them.
RATIO_FAMILIES = frozenset({"conv"})

BAND = {
    "description": "the band of the prediction: where B's kernel time fell around the "
    "model's on the measured pairs, per family (hta_fast.model.predict_errors)"
}

SUMMARY_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("family", pa.string()),
        pa.field("source_device", pa.string()),
        pa.field("device", pa.string()),
        pa.field("events", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("predicted", pa.float64(), metadata=NS),
        pa.field("predicted_low", pa.float64(), metadata={**NS, **BAND}),
        pa.field("predicted_high", pa.float64(), metadata={**NS, **BAND}),
    ]
)
OPS_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("input_dims", pa.string()),
        pa.field("input_type", pa.string()),
        pa.field("family", pa.string()),
        pa.field("calls", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("roofline_source", pa.float64(), metadata=NS),
        pa.field("roofline_device", pa.float64(), metadata=NS),
        pa.field("predicted", pa.float64(), metadata=NS),
    ]
)
EVENTS_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("row", pa.int64()),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("predicted", pa.float64(), metadata=NS),
        pa.field("family", pa.string()),
        pa.field(
            "ratio_predicted",
            pa.float64(),
            metadata={
                **NS,
                "description": "the one-ratio baseline: dur x the target's peak over the "
                "source's by the operator's bound (the bandwidth ratio without a roofline)",
            },
        ),
        pa.field("predicted_low", pa.float64(), metadata={**NS, **BAND}),
        pa.field("predicted_high", pa.float64(), metadata={**NS, **BAND}),
    ]
)


def _roofline_ns(
    dev: Device,
    flops: np.ndarray,
    nbytes: np.ndarray,
    precision: Sequence[Optional[str]],
    matrix: Sequence[Optional[bool]],
    tf32: Union[Sequence[bool], np.ndarray],
) -> np.ndarray:
    peak = np.array(
        [
            dev.peak_flops(p, bool(m), bool(t)) if p else 0.0
            for p, m, t in zip(precision, matrix, tf32)
        ],
        np.float64,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = np.where(peak > 0, flops / peak, 0.0)
    return np.maximum(compute, nbytes / dev.memory_bytes_per_s) * 1e9


def _unmodelled_ns(
    dur: np.ndarray,
    models: KernelModels,
    src: Device,
    dst: Device,
    floor_dst_ns: Optional[float],
) -> np.ndarray:
    """Compute kernels outside any costed operator: one kernel each, bound by memory
    bandwidth (their work scales by the ratio of bandwidths), with the same latency part
    and floor as the costed ones."""
    ones = np.ones(len(dur))
    latency = latency_part(dur, None, ones, models.latency_ns)
    bw_ratio = np.full(len(dur), src.memory_bytes_per_s / dst.memory_bytes_per_s)
    pred = scale_kernels(dur, latency, bw_ratio, models.latency_ratio(floor_dst_ns))
    floor = models.floor_ns if floor_dst_ns is None else floor_dst_ns
    return np.maximum(pred, np.minimum(dur, floor))


def _uncaptured_replays(trace: Trace, gpu: np.ndarray) -> np.ndarray:
    """Per GPU event row in `gpu`: whether it ran in a graph replay that matched no capture."""
    if not has_graph_launches(trace):
        return np.zeros(len(gpu), bool)
    replays = graph_replays(trace)
    unmatched = replay_match(trace).capture < 0
    rows = replays.gpu[unmatched[replays.replay_of_each()]]
    return np.isin(gpu, rows)


def _predict_rank(
    rank: int,
    trace: Trace,
    mask: Optional[np.ndarray],
    src: Device,
    dst: Device,
    allow_tf32: Union[bool, str],
    op_prefix: Optional[str],
    curves_on: bool,
    curve_weights: str = "groups",
    floor_dst_ns: Optional[float] = None,
    ratio_families: frozenset = RATIO_FAMILIES,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    cg = ChargedGroups(trace, mask, op_prefix)
    fam = cg.costs["family"].to_pylist()
    prec, mat = cg.costs["precision"].to_pylist(), cg.costs["matrix"].to_pylist()
    # the same PyTorch settings on both devices: TF32 where the source ran TF32 and the
    # destination has it (peak_flops falls back to FP32 on a device without TF32)
    tf32 = cg.tf32(allow_tf32)
    r_src = _roofline_ns(src, cg.flops, cg.bytes, prec, mat, tf32)
    r_dst = _roofline_ns(dst, cg.flops, cg.bytes, prec, mat, tf32)
    calls = np.maximum(cg.calls, 1)
    per_call = cg.gpu_time / calls
    charged = cg.event_group >= 0
    k_per_call = np.bincount(cg.event_group[charged], minlength=len(calls)) / calls
    families = sorted({f for f, c in zip(fam, cg.calls) if f and c})
    fam_arr = np.array([f or "" for f in fam], dtype=object)
    # each operator group counts once in its family's curve ("groups"), or by its calls
    weight = cg.calls if curve_weights == "calls" else (cg.calls > 0).astype(np.int64)
    models = fit_models(fam_arr, r_src, per_call, k_per_call, weight, cg.dur, curves_on)
    pred_call = np.array(per_call, np.float64)
    for f in families:
        sel = (fam_arr == f) & (cg.calls > 0)
        pred_call[sel] = models.predict_call(
            f, per_call[sel], r_src[sel], r_dst[sel], k_per_call[sel], floor_dst_ns
        )
    # per event: charged events scale with their group; the rest by class
    scale = np.where(per_call > 0, pred_call / np.where(per_call > 0, per_call, 1), 1.0)
    is_comm = trace.column("events", "kernel_class")[cg.gpu] == KernelClass.COMM
    ev_pred = np.where(
        charged,
        cg.dur * scale[np.maximum(cg.event_group, 0)],
        np.where(is_comm, cg.dur, _unmodelled_ns(cg.dur, models, src, dst, floor_dst_ns)),
    )
    ev_fam = np.where(
        charged, fam_arr[np.maximum(cg.event_group, 0)], np.where(is_comm, COMM, UNMODELLED)
    ).astype(object)
    # the one-ratio baseline: the target's peak over the source's by the bound term of the
    # event's operator, the bandwidth ratio where it has none; communication keeps its time
    bw_ratio = src.memory_bytes_per_s / dst.memory_bytes_per_s
    with np.errstate(divide="ignore", invalid="ignore"):
        group_ratio = np.where((r_src > 0) & (r_dst > 0), r_dst / r_src, bw_ratio)
    ev_ratio = np.where(
        charged,
        cg.dur * group_ratio[np.maximum(cg.event_group, 0)],
        np.where(is_comm, cg.dur, cg.dur * bw_ratio),
    )
    # families the model does not beat the ratio on, and replayed work whose operators are
    # unknown (no capture matched its replay: it counts for the graph launch's operators,
    # which say nothing of its shapes), take the ratio
    by_ratio = np.isin(ev_fam, list(ratio_families)) & ~is_comm
    uncaptured = _uncaptured_replays(trace, cg.gpu) & ~is_comm
    ev_fam[uncaptured] = REPLAYED
    by_ratio |= uncaptured
    ev_pred = np.where(by_ratio, ev_ratio, ev_pred)
    events = _events_table(rank, cg, ev_pred, ev_fam, ev_ratio)
    summary = _summary_table(rank, events, cg.host_time, src, dst)
    ops = _ops_table(rank, cg, fam, r_src, r_dst, pred_call)
    return summary, ops, events


def _events_table(
    rank: int, cg: ChargedGroups, ev_pred: np.ndarray, ev_fam: np.ndarray, ev_ratio: np.ndarray
) -> pa.Table:
    """The rank's GPU events with their predicted time, its band, family and the one-ratio
    baseline's time."""
    band = {f: family_band(f) for f in set(ev_fam.tolist())}
    low = ev_pred * np.array([band[f][0] for f in ev_fam], np.float64)
    high = ev_pred * np.array([band[f][1] for f in ev_fam], np.float64)
    return pa.table(
        [
            np.full(len(cg.gpu), rank, np.int64),
            cg.gpu,
            cg.dur.astype(np.int64),
            ev_pred,
            pa.array(list(ev_fam), pa.string()),
            ev_ratio,
            low,
            high,
        ],
        schema=EVENTS_SCHEMA,
    )


def _summary_table(
    rank: int, events: pa.Table, host_time: int, src: Device, dst: Device
) -> pa.Table:
    """The rank's events summed per family, and a "(host transfer)" row for the host
    transfers' time (ns), which keeps its time on the other device."""
    if host_time:
        host = float(host_time)
        ev_summary_extra = [(HOST, -1, host_time, host, host, host)]
    else:
        ev_summary_extra = []
    g = events.group_by("family", use_threads=False).aggregate(
        [("row", "count"), ("dur", "sum"), ("predicted", "sum")]
        + [("predicted_low", "sum"), ("predicted_high", "sum")]
    )
    rows = list(
        zip(
            g["family"].to_pylist(),
            g["row_count"].to_pylist(),
            g["dur_sum"].to_pylist(),
            g["predicted_sum"].to_pylist(),
            g["predicted_low_sum"].to_pylist(),
            g["predicted_high_sum"].to_pylist(),
        )
    )
    rows += ev_summary_extra
    return pa.table(
        [
            [rank] * len(rows),
            [r[0] for r in rows],
            [src.key] * len(rows),
            [dst.key] * len(rows),
            [r[1] if r[1] >= 0 else None for r in rows],
            [int(r[2]) for r in rows],
            [float(r[3]) for r in rows],
            [float(r[4]) for r in rows],
            [float(r[5]) for r in rows],
        ],
        schema=SUMMARY_SCHEMA,
    )


def _ops_table(
    rank: int,
    cg: ChargedGroups,
    fam: list,
    r_src: np.ndarray,
    r_dst: np.ndarray,
    pred_call: np.ndarray,
) -> pa.Table:
    """The rank's operator groups that ran and belong to a family: their GPU time, roofline
    times on both devices and predicted time."""
    calls = np.maximum(cg.calls, 1)
    keep = cg.calls > 0
    keep &= np.array([f is not None for f in fam])
    return pa.table(
        [
            np.full(len(calls), rank, np.int64),
            cg.head["name"],
            cg.head["input_dims"],
            cg.head["input_type"],
            cg.costs["family"],
            cg.calls,
            cg.gpu_time,
            r_src * cg.calls,
            r_dst * cg.calls,
            pred_call * cg.calls,
        ],
        schema=OPS_SCHEMA,
    ).filter(pa.array(keep))


def predict(
    traces: Union[Trace, TraceSet],
    device: Union[str, Device],
    *,
    source_device: Union[str, Device, None] = None,
    devices_file: Optional[str] = None,
    allow_tf32: Union[bool, str] = False,
    efficiency_curves: bool = True,
    curve_weights: str = "groups",
    op_prefix: Optional[str] = None,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
    device_floor_ns: Optional[float] = None,
    ratio_families: Optional[Iterable[str]] = None,
) -> Result:
    """Predicted GPU time per family on `device` (a device table key or name).
    ratio_families: the families predicted by the one-ratio baseline (default
    RATIO_FAMILIES; () for the kernel model everywhere, as the evaluation compares them);
    `source_device` names the trace's own GPU when its deviceProperties do not;
    device_floor_ns: the launch floor of `device` (`launch_floor_of` a trace recorded on it,
    any workload; default: the device table's `launch_floor_ns` where it has one): the
    launch latency in each kernel's time then moves to it; where neither says, it keeps
    its time;
    efficiency_curves=False scales the work by the roofline ratio alone (no size
    correction);
    curve_weights: "groups" (each operator group counts once in its family's curve, so a
    few groups called many times do not set it) or "calls" (each call counts);
    allow_tf32 (False, True or "auto": where the kernels' names say TF32) picks the peaks of
    FP32 GEMMs on both devices. False by default: on the one cross-GPU pair we have, TF32
    GEMMs reached a small fraction of the TF32 peak, and the ratio of TF32 to FP32 peaks
    overstated the gap (see docs/ops.md)."""
    if curve_weights not in ("groups", "calls"):
        raise ValueError(f"curve_weights must be 'groups' or 'calls', not {curve_weights!r}")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    table = DeviceTable.load(devices_file)
    dst = device if isinstance(device, Device) else table.get(device)
    parts: list[tuple] = []
    sources: list[Device] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        src = _source_device(trace, source_device, table)
        sources.append(src)
        parts.append(
            _predict_rank(
                rank,
                trace,
                mask,
                src,
                dst,
                allow_tf32,
                op_prefix,
                efficiency_curves,
                curve_weights,
                dst.launch_floor_ns if device_floor_ns is None else device_floor_ns,
                RATIO_FAMILIES if ratio_families is None else frozenset(ratio_families),
            )
        )
    summary = pa.concat_tables([p[0] for p in parts]) if parts else SUMMARY_SCHEMA.empty_table()
    ops = pa.concat_tables([p[1] for p in parts]) if parts else OPS_SCHEMA.empty_table()
    events = pa.concat_tables([p[2] for p in parts]) if parts else EVENTS_SCHEMA.empty_table()
    summary = summary.sort_by([("rank", "ascending"), ("measured", "descending")])
    ops = ops.sort_by([("rank", "ascending"), ("measured", "descending")])
    notes = _predict_notes(summary, dst, sources, ratio_families)
    return Result(
        "predict",
        summary,
        tables={"ops": ops, "events": events},
        notes=notes,
        params=dict(
            device=dst.key,
            allow_tf32=allow_tf32,
            curve_weights=curve_weights,
            device_floor_ns=dst.launch_floor_ns if device_floor_ns is None else device_floor_ns,
            selection=sel,
        ),
    )


def _source_device(
    trace: Trace, source_device: Union[str, Device, None], table: DeviceTable
) -> Device:
    """The trace's own GPU (source_device where given); ValueError when the device table
    does not hold it."""
    src = resolve_device(trace, source_device, table)
    if src is None:
        names = [d.get("name") for d in trace.meta.devices if isinstance(d, dict)]
        raise ValueError(
            f"{trace.meta.path or 'trace'}: its device "
            f"{names[0] if names else '(none recorded)'!r} is not in the "
            "device table; pass source_device="
        )
    return src


def _predict_notes(
    summary: pa.Table, dst: Device, sources: list[Device], ratio_families: Optional[Iterable[str]]
) -> list[str]:
    """The notes on a prediction: the totals and their band, the directions where no change
    did better, the families predicted by a ratio of peaks or bandwidths."""
    m = summary["measured"].to_numpy().sum() if summary.num_rows else 0
    p, lo, hi = (
        (summary[c].to_numpy().sum() if summary.num_rows else 0.0)
        for c in ("predicted", "predicted_low", "predicted_high")
    )
    notes = [
        f"GPU time measured {m / 1e6:.3f} ms, predicted on {dst.key} {p / 1e6:.3f} ms "
        f"(band {lo / 1e6:.3f}-{hi / 1e6:.3f} ms: each family's band summed, where B's kernel "
        "time fell around the model's on the measured pairs; predicted_low, predicted_high)"
    ]
    notes += _no_change_notes(sorted({dev.key for dev in sources}), dst.key)
    families = set(summary["family"].to_pylist()) if summary.num_rows else set()
    fallback = sorted(
        families & (RATIO_FAMILIES if ratio_families is None else set(ratio_families))
    )
    if fallback:
        notes.append(
            f"{', '.join(fallback)}: predicted by the ratio of the two devices' peaks (by the "
            "operator's bound), which beats the kernel model for these families on the "
            "measured GPU-swap pairs (docs/ops.md)"
        )
    if REPLAYED in families:
        notes.append(
            f"{REPLAYED}: GPU work of graph replays that matched no capture has no operator "
            "shapes: predicted by the ratio of the two devices' memory bandwidths (give the "
            "capture, --capture, to predict it by its operators)"
        )
    return notes


def _no_change_notes(sources: Sequence[str], target: str) -> list[str]:
    """A note per source GPU where, on the measured pairs of that direction, no change came
    closer to the target's kernel time per step than the model."""
    out = []
    for source in sources:
        closer = no_change_closer(source, target)
        if closer:
            each = "; ".join(
                f"{pair}: the model {100 * model:.1f} % off, no change {100 * same:.1f} %"
                for pair, model, same in closer
            )
            out.append(
                f"{source} -> {target}: on the measured pairs of this direction the "
                f"no-change answer (the kernels as recorded) was closer than the model ({each}; "
                "kernel time per step, docs/ops.md): read the prediction with that in mind"
            )
    return out


def launch_floor_of(trace: Trace) -> float:
    """The launch floor of the GPU `trace` was recorded on (ns), measured as predict
    measures its source's: for `device_floor_ns` when predicting another trace onto it."""
    return launch_floor(ChargedGroups(trace, None, None).dur)
