"""Kernel type breakdown: how GPU busy time splits among computation, communication and
memory work, and which kernels take it.

Main table, per rank: the time during which exactly a given set of kernel types runs
("COMPUTATION", "COMMUNICATION overlapping MEMORY", ...), as measured over the union of
each type's intervals, so the rows of a rank add up to its GPU busy time. Types come from
the kernel_class column (COMP, COMM, MEM); sync events are not GPU work.

Side table "kernels", per (rank, type, kernel name): count, sum, max, min, mean and
stddev of the durations. When a type has more than num_kernels names, the names taking the
most time are kept, in order, until they cover duration_ratio of the type's time (at most
num_kernels of them); the others are folded into one row named "others", whose statistics
are those of all their events.

Side table "distribution", per (type, kernel name): how the kernel's total time varies
across ranks (number of ranks running it, min, max, mean of the per-rank totals).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from .._arrow import array_of, texts_at
from ..frame import select
from ..frame.fields import NS, PCT, duration_stats
from ..frame.gpu_work import gpu_work
from ..frame.result import Result
from ..frame.select import Ranks, Steps, Streams, Window
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["kernel_breakdown"]

TYPE_NAMES = ("COMPUTATION", "COMMUNICATION", "MEMORY")
_TYPE_CLASSES = (KernelClass.COMP, KernelClass.COMM, KernelClass.MEM)
OTHERS = "others"

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("kernel_type", pa.string()),
        pa.field("time", pa.int64(), metadata=NS),
        pa.field("percentage", pa.float64(), metadata=PCT),
    ]
)
KERNELS_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("kernel_type", pa.string()),
        pa.field("name", pa.string()),
        *duration_stats(),
    ]
)
DISTRIBUTION_SCHEMA = pa.schema(
    [
        pa.field("kernel_type", pa.string()),
        pa.field("name", pa.string()),
        pa.field("ranks", pa.int64()),
        pa.field("min", pa.int64(), metadata=NS),
        pa.field("max", pa.int64(), metadata=NS),
        pa.field("mean", pa.float64(), metadata=NS),
    ]
)


def type_label(mask: int, n_types: int) -> str:
    """ "COMPUTATION overlapping MEMORY" for the set bits of mask (bit i: TYPE_NAMES[i])."""
    return " overlapping ".join(TYPE_NAMES[i] for i in range(n_types) if mask >> i & 1)


def group_stats(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per distinct key (ascending): count, sum, max, min, mean, stddev (ddof=1; NaN for
    one value) of int64 values."""
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.empty(0, np.int64)
    uniq = k[starts]
    count = np.diff(np.r_[starts, len(k)])
    total = np.add.reduceat(v, starts) if len(k) else np.empty(0, np.int64)
    vmax = np.maximum.reduceat(v, starts) if len(k) else np.empty(0, np.int64)
    vmin = np.minimum.reduceat(v, starts) if len(k) else np.empty(0, np.int64)
    mean = total / np.maximum(count, 1)
    dev = v - np.repeat(mean, count)
    ss = np.add.reduceat(dev * dev, starts) if len(k) else np.empty(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1, 1)), np.nan)
    return uniq, count, total, vmax, vmin, mean, std


def kept_names(sums: np.ndarray, duration_ratio: float, num_kernels: int) -> np.ndarray:
    """Positions (in the given order, largest sum first) of the names shown on their own:
    all when there are at most num_kernels; else the first ones until their cumulative sum
    reaches duration_ratio of the total, at most num_kernels."""
    n = len(sums)
    if n <= num_kernels:
        return np.ones(n, bool)
    before = np.r_[0, np.cumsum(sums)[:-1]]
    return (np.arange(n) < num_kernels) & (before < duration_ratio * sums.sum())


def kernel_breakdown(
    traces: Union[Trace, TraceSet],
    *,
    duration_ratio: float = 0.8,
    num_kernels: int = 10,
    include_memory_kernels: bool = True,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: time per exact set of running kernel types and its percentage of the
    rank's GPU busy time (types COMPUTATION, COMMUNICATION, and MEMORY unless
    include_memory_kernels=False); side tables "kernels" and "distribution" (see the
    module's description). Times int64 ns."""
    if not 0.0 <= duration_ratio <= 1.0:
        raise ValueError(f"duration_ratio must be in [0, 1], got {duration_ratio}")
    if num_kernels < 0:
        raise ValueError(f"num_kernels must be >= 0, got {num_kernels}")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    n_types = 3 if include_memory_kernels else 2
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    kern: dict[str, list] = {f.name: [] for f in KERNELS_SCHEMA}
    # (kernel_type, name, rank, sum) of every kernel, before folding
    full: list[tuple[str, str, int, int]] = []
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w = gpu_work(trace, mask, sel.window)
        type_of = np.full(len(w.rows), -1, np.int64)
        for i, kc in enumerate(_TYPE_CLASSES[:n_types]):
            type_of[w.kclass == kc] = i
        on = type_of >= 0
        if not on.any():
            notes.append(f"rank {rank}: no GPU kernels of the types analysed")
            continue
        starts, ends, types = w.starts[on], w.ends[on], type_of[on]
        times = ops.class_sweep(starts, ends, types.astype(np.uint8), n_types)
        busy = int(times[1:].sum())
        for m in np.argsort(-times[1:], kind="stable") + 1:
            if times[m] > 0:
                out["rank"].append(rank)
                out["kernel_type"].append(type_label(int(m), n_types))
                out["time"].append(int(times[m]))
                out["percentage"].append(100.0 * times[m] / busy)

        names = trace.column("events", "name")[w.rows[on]]
        dur = ends - starts
        strings = trace.strings
        for i in range(n_types):
            sel_i = types == i
            if not sel_i.any():
                continue
            ids, count, total, vmax, vmin, mean, std = group_stats(names[sel_i], dur[sel_i])
            label = np.array(texts_at(strings, ids), dtype=object)
            # Largest sum first; equal sums by name, so the order is reproducible.
            order = np.lexsort((label.astype(str), -total))
            full.extend((TYPE_NAMES[i], label[j], rank, int(total[j])) for j in order)
            keep = kept_names(total[order], duration_ratio, num_kernels)
            for j in order[keep]:
                _add_kernel(
                    kern,
                    rank,
                    TYPE_NAMES[i],
                    label[j],
                    count[j],
                    total[j],
                    vmax[j],
                    vmin[j],
                    mean[j],
                    std[j],
                )
            if not keep.all():
                folded = np.isin(names[sel_i], ids[order[~keep]])
                _, c, t, mx, mn, me, sd = group_stats(
                    np.zeros(int(folded.sum()), np.int64), dur[sel_i][folded]
                )
                _add_kernel(
                    kern, rank, TYPE_NAMES[i], OTHERS, c[0], t[0], mx[0], mn[0], me[0], sd[0]
                )
    table = pa.table({f.name: array_of(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    kernels = pa.table(
        {f.name: array_of(kern[f.name], f.type) for f in KERNELS_SCHEMA}, schema=KERNELS_SCHEMA
    )
    return Result(
        "kernel_breakdown",
        table,
        tables={"kernels": kernels, "distribution": _distribution(full)},
        notes=notes,
        params={
            "duration_ratio": duration_ratio,
            "num_kernels": num_kernels,
            "include_memory_kernels": include_memory_kernels,
            "selection": sel,
        },
    )


def _add_kernel(
    kern: dict,
    rank: int,
    kernel_type: str,
    name: str,
    count: Any,
    total: Any,
    vmax: Any,
    vmin: Any,
    mean: Any,
    std: Any,
) -> None:
    kern["rank"].append(rank)
    kern["kernel_type"].append(kernel_type)
    kern["name"].append(name)
    kern["count"].append(int(count))
    kern["sum"].append(int(total))
    kern["max"].append(int(vmax))
    kern["min"].append(int(vmin))
    kern["mean"].append(float(mean))
    kern["stddev"].append(None if np.isnan(std) else float(std))


def _distribution(full: list) -> pa.Table:
    """Per (type, name): spread of the per-rank total time across the ranks that run it."""
    if not full:
        return DISTRIBUTION_SCHEMA.empty_table()
    t = pa.table(
        {
            "kernel_type": [r[0] for r in full],
            "name": [r[1] for r in full],
            "sum": array_of([r[3] for r in full], pa.int64()),
        }
    )
    g = t.group_by(["kernel_type", "name"], use_threads=False).aggregate(
        [("sum", "count"), ("sum", "min"), ("sum", "max"), ("sum", "mean")]
    )
    g = g.sort_by([("kernel_type", "ascending"), ("sum_max", "descending"), ("name", "ascending")])
    return pa.table(
        {
            "kernel_type": g["kernel_type"],
            "name": g["name"],
            "ranks": g["sum_count"].cast(pa.int64()),
            "min": g["sum_min"],
            "max": g["sum_max"],
            "mean": g["sum_mean"],
        },
        schema=DISTRIBUTION_SCHEMA,
    )
