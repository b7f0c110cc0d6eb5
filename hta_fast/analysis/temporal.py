"""Temporal breakdown: how a rank's GPU time splits into idle, compute and other busy time.

Per rank, over the span from the first GPU work's start to the last one's end
(`kernel_time`):

    idle_time         time when no GPU work runs on any stream
    compute_time      time when at least one compute kernel runs
    non_compute_time  busy time without any compute kernel (copies, fills, collectives)

so idle + compute + non_compute = kernel_time. GPU work is kernels, memcpy and memset
events (frame.gpu_work); synchronisation events (the span a CPU waits on a stream) and GPU
user annotations are not GPU work. The reference tool counts stream syncs as busy time.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from .._arrow import array_of
from ..frame import select
from ..frame.fields import NS, PCT
from ..frame.gpu_work import gpu_work
from ..frame.result import Result
from ..frame.select import Ranks, Steps, Streams, Window
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["temporal_breakdown"]


_FIELDS = [
    pa.field("rank", pa.int64()),
    pa.field("idle_time", pa.int64(), metadata=NS),
    pa.field("compute_time", pa.int64(), metadata=NS),
    pa.field("non_compute_time", pa.int64(), metadata=NS),
    pa.field("kernel_time", pa.int64(), metadata=NS),
    pa.field("idle_time_pctg", pa.float64(), metadata=PCT),
    pa.field("compute_time_pctg", pa.float64(), metadata=PCT),
    pa.field("non_compute_time_pctg", pa.float64(), metadata=PCT),
]
SCHEMA = pa.schema(_FIELDS)


def temporal_breakdown(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: idle_time, compute_time, non_compute_time, kernel_time (int64 ns) and the
    first three as percentages of kernel_time.

    A rank without GPU work gets zero times and null percentages, and a note.
    """
    sel = select.selection_of(selection, ranks, steps, window, streams)
    cols: dict[str, list] = {f.name: [] for f in _FIELDS}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w = gpu_work(trace, mask, sel.window)
        if len(w.rows) == 0:
            kernel_time = busy = compute = 0
            notes.append(f"rank {rank}: no GPU work (kernels, memcpy, memset)")
        else:
            kernel_time = int(w.ends.max() - w.starts.min())
            busy = ops.total_length(w.starts, w.ends)
            comp = w.kclass == KernelClass.COMP
            compute = ops.total_length(w.starts[comp], w.ends[comp])
        idle = kernel_time - busy
        non_compute = busy - compute
        cols["rank"].append(rank)
        for name, v in (
            ("idle_time", idle),
            ("compute_time", compute),
            ("non_compute_time", non_compute),
            ("kernel_time", kernel_time),
        ):
            cols[name].append(v)
            if name != "kernel_time":
                cols[name + "_pctg"].append(100.0 * v / kernel_time if kernel_time else None)
    table = pa.table({f.name: array_of(cols[f.name], f.type) for f in _FIELDS}, schema=SCHEMA)
    return Result("temporal_breakdown", table, notes=notes, params={"selection": sel})


# --- GPU busy share over time, per rank (the report's rank x time heatmap) ---------------
# The temporal breakdown gives one number per rank; a heatmap over time needs the busy
# share of each time bin. The busy time up to any instant is read off the union of the
# rank's GPU work (the intervals the breakdown starts from) with one sorted search per rank.
class BusyBins(NamedTuple):
    ranks: np.ndarray  # int64, sorted
    start_ns: int  # the first GPU work on any rank (ns since the epoch): where the bins start
    edges: np.ndarray  # float ns since start_ns, bins + 1 edges shared by every rank
    busy: np.ndarray  # float, ranks x bins: share of the bin (0..1) with GPU work running


def _busy_before(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Busy ns before each instant in `at`, for a normalised interval set."""
    done = np.r_[0, np.cumsum(ends - starts)]
    k = np.searchsorted(ends, at, side="right")  # intervals ended by then count whole
    partial = np.where(k < len(starts), at - starts[np.minimum(k, len(starts) - 1)], 0)
    return done[k] + np.clip(partial, 0, None)


def busy_bins(traces: TraceSet, selection: select.Selection, bins: int) -> BusyBins:
    """Per selected rank, the share of each of `bins` equal time bins (shared by every rank,
    from the first GPU work to the last on any rank) with GPU work running; NaN for a rank
    with none."""
    unions = {}
    for rank, trace, mask in select.each_rank(traces, selection):
        w = gpu_work(trace, mask, selection.window)
        unions[rank] = ops.union(w.starts, w.ends)
    spans = [(int(u.starts[0]), int(u.ends[-1])) for u in unions.values() if len(u.starts)]
    ranks = np.array(sorted(unions), np.int64)
    if not spans:
        return BusyBins(ranks, 0, np.zeros(0), np.zeros((len(ranks), 0)))
    # Times as offsets from the first work before they become floats: ns since the epoch
    # (~1.7e18) would keep only 256 ns of precision in a float64.
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    edges = np.linspace(0.0, float(max(hi - lo, 1)), bins + 1)
    busy = np.full((len(ranks), bins), np.nan)
    for i, r in enumerate(ranks):
        u = unions[int(r)]
        if len(u.starts):
            before = _busy_before((u.starts - lo).astype(float), (u.ends - lo).astype(float), edges)
            busy[i] = np.diff(before) / np.diff(edges)
    return BusyBins(ranks, lo, edges, busy)
