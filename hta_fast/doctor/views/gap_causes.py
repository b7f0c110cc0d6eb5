"""Why the GPU sat idle in each gap: what the host was doing when it went idle.

Every GPU-wide idle gap of a rank (context.Gaps) is split between causes, in this order:

    one_off         the part of a host-wait gap (below) that a one-off stall covers
                    (doctor.views.stalls: a first launch loading modules, a compile, one blocking
                    copy, ...): it happens once, and the per-step causes below are not
                    charged with it
    input_pipeline  the part of the gap during which a data-loader call runs on the host
                    (frame.derived.DATALOADER: `enumerate(DataLoader)#...__next__`, a
                    DataPipe graph's `enumerate(DataPipe)#...` and the like)
    memory_sync     the rest of a host-wait gap (below), when the GPU went idle while the
                    host was blocked in a synchronising call (cudaStreamSynchronize,
                    cudaDeviceSynchronize, cudaEventSynchronize, synchronous cudaMemcpy,
                    hipMemcpyWithStream, aten::item, aten::_local_scalar_dense): the host could
                    not queue more work until the GPU had drained; else the part of it such
                    a call covers (a blocking copy entered after the GPU went idle); then the
                    part of the rest that an allocator call (cudaMalloc, cudaFree, ...)
                    covers. A gap ended by work queued before it began is not the sync's:
                    the GPU was still working through what the host had queued before it
                    blocked (the launch machinery's gaps between those kernels are
                    parallelism's, below)
    untraced        the part of the rest of a host-wait gap during which the threads that
                    launch GPU work recorded no event for UNTRACED_MIN (100 µs) or more
                    (ProfilerStep spans aside; the critical path's rule): the host
                    ran code the profiler did not record, or waited outside it (a server
                    before its first request). No cause is charged with it: the trace
                    cannot say what the host did
    launch_bound    the rest, when the event that ends the gap had not been launched yet when
                    the gap began (the idle_time analysis' host_wait): the host was busy in
                    recorded work and too slow to queue the next
    parallelism     the rest, when the next work was already queued and the gap is shorter than
                    Thresholds.kernel_wait_us: the launch machinery's gap between back-to-back
                    kernels, which many tiny kernels multiply
    other           anything else (work queued behind a cross-stream dependency, ...)

The order is the rule: each part takes what the parts before it left, so a part is not a
cause's own measure that another cause could be added beside. A cause names the parts
charged to it in its record (Cause.gap_parts: memory_sync's are memory_sync and allocator);
untraced and other are charged to no cause.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ... import ops, sync_calls
from ...frame.derived import DATALOADER, name_flags, rows_named
from ...model.path.bounds import UNTRACED_MIN
from ...schema import EventKind
from ...trace import Trace
from .context import Gaps, RankView
from .intervals import covered_length, touches
from .stalls import NAME_PATTERNS as STALL_PATTERNS
from .stalls import find_stalls, launching_rows
from .thresholds import Thresholds

HOST_OPS = (EventKind.cpu_op, EventKind.user_annotation, EventKind.python_function)
HOST_CALLS = (EventKind.runtime, EventKind.driver)

# The calls that hold the host until GPU work is done (sync_calls, the one list of them) and
# the operators that read a GPU value back (and so wait for it).
BLOCKING_SYNC = rf"{sync_calls.BLOCKING_NAMES}|^(aten::item|aten::_local_scalar_dense)$"
PROFILER_STEP = r"^ProfilerStep#"
ALLOCATOR = (
    r"^(cudaMalloc|cudaFree|cudaMallocHost|cudaFreeHost|cudaHostAlloc|cuMemAlloc(_v2)?"
    r"|cuMemFree(_v2)?|hipMalloc|hipFree|hipHostMalloc|hipHostFree)$"
)
# The name patterns the split matches (with the one-off stalls'), matched for all ranks at once.
NAME_PATTERNS = (DATALOADER, BLOCKING_SYNC, ALLOCATOR, PROFILER_STEP, *STALL_PATTERNS)


@dataclasses.dataclass
class GapSplit:
    """Per gap of view.gaps: ns charged to each part (they add up to the gap's length), and
    the host rows behind the first ones (sync_rows: the outermost sync calls, one per
    sync the program made: aten::item's aten::_local_scalar_dense and
    cudaStreamSynchronize inside it are that one sync)."""

    one_off: np.ndarray
    input_pipeline: np.ndarray
    memory_sync: np.ndarray
    allocator: np.ndarray
    untraced: np.ndarray
    launch_bound: np.ndarray
    parallelism: np.ndarray
    other: np.ndarray
    loader_rows: np.ndarray
    sync_rows: np.ndarray
    alloc_rows: np.ndarray

    def charged(self, parts: Sequence[str]) -> np.ndarray:
        """ns per gap of these parts together (a cause's Cause.gap_parts)."""
        unknown = [p for p in parts if p not in PARTS]
        if unknown:
            raise ValueError(f"no such part of the gap split: {unknown}; parts: {PARTS}")
        out = np.zeros_like(self.other)
        for p in parts:
            out = out + getattr(self, p)
        return out


# The parts of GapSplit, in the order they are taken (its fields but the rows behind them).
PARTS = tuple(f.name for f in dataclasses.fields(GapSplit) if not f.name.endswith("_rows"))
# The parts charged to no cause.
UNCHARGED = ("untraced", "other")


def host_rows(view: RankView, pattern: str, kinds: Sequence[EventKind]) -> np.ndarray:
    """Rows of host events matching pattern that overlap the view's window."""
    trace = view.trace
    rows = rows_named(trace, pattern, kinds)
    ts = trace.column("events", "ts")[rows]
    end = ts + np.maximum(trace.column("events", "dur")[rows], 0)
    return rows[(ts <= view.hi) & (end >= view.lo)]


def _union_of(view: RankView, rows: np.ndarray) -> ops.Intervals:
    ts = view.trace.column("events", "ts")[rows]
    return ops.union(ts, ts + np.maximum(view.trace.column("events", "dur")[rows], 0))


def split_gaps(view: RankView, th: Thresholds) -> GapSplit:
    """The split of every gap of the view (remembered on the view)."""
    memo = view.__dict__.setdefault("_gap_split", {})
    key = (th.kernel_wait_us, th.one_off_min_us, th.one_off_ratio, th.one_off_max_repeats)
    if key in memo:
        return memo[key]
    g = view.gaps
    length = g.lengths
    trace = view.trace
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    loader_rows = host_rows(view, DATALOADER, HOST_OPS)
    sync_rows = outermost(trace, host_rows(view, BLOCKING_SYNC, HOST_CALLS + HOST_OPS))
    alloc_rows = host_rows(view, ALLOCATOR, HOST_CALLS)

    stalls = find_stalls(view, th)
    stall = ops.union(stalls.starts, stalls.ends)
    one_off_ns = np.where(
        g.host_wait, covered_length(stall.starts, stall.ends, g.starts, g.ends), 0
    )
    rest = length - one_off_ns
    loader = _union_of(view, loader_rows)
    loader_ns = np.minimum(rest, covered_length(loader.starts, loader.ends, g.starts, g.ends))
    rest = rest - loader_ns
    # A sync holding the host when the GPU went idle (its interval holds the gap's start).
    sync_ts = ts[sync_rows]
    sync_end = sync_ts + dur[sync_rows]
    # Only where the host had not queued the work that ends the gap: blocked, it could not.
    sync_hit = g.host_wait & _holds(sync_ts, sync_end, g.starts)
    syncs = ops.union(sync_ts, sync_end)
    sync_ns = np.where(
        sync_hit,
        rest,
        np.where(
            g.host_wait,
            np.minimum(rest, covered_length(syncs.starts, syncs.ends, g.starts, g.ends)),
            0,
        ),
    )
    rest = rest - sync_ns
    alloc = _union_of(view, alloc_rows)
    alloc_ns = np.where(
        g.host_wait,
        np.minimum(rest, covered_length(alloc.starts, alloc.ends, g.starts, g.ends)),
        0,
    )
    rest = rest - alloc_ns
    untraced_ns = np.where(g.host_wait, np.minimum(rest, _absent(view, g)), 0)
    rest = rest - untraced_ns
    launch_ns = np.where(g.host_wait, rest, 0)
    rest = rest - launch_ns
    short = length < th.kernel_wait_us * 1000.0
    par_ns = np.where(short & (g.next_row >= 0), rest, 0)
    other = rest - par_ns
    out = GapSplit(
        one_off_ns,
        loader_ns,
        sync_ns,
        alloc_ns,
        untraced_ns,
        launch_ns,
        par_ns,
        other,
        loader_rows,
        sync_rows,
        alloc_rows,
    )
    memo[key] = out
    return out


def _absent(view: RankView, g: Gaps) -> np.ndarray:
    """Per gap: how long the launching threads recorded no event in it, in stretches of
    UNTRACED_MIN or more (a shorter one between two calls is the interpreter's own time
    between operators, host work like any other; a ProfilerStep's span, which holds the
    whole step, does not count as recorded work)."""
    trace = view.trace
    rows = launching_rows(view)
    names = np.maximum(trace.column("events", "name")[rows], 0)
    rows = rows[~name_flags(trace, PROFILER_STEP)[names]]
    recorded = _union_of(view, rows)
    # The stretches between recorded work, from the window's start to its end.
    hole_starts = np.concatenate([[view.lo], recorded.ends])
    hole_ends = np.concatenate([recorded.starts, [view.hi]])
    long = hole_ends - hole_starts >= UNTRACED_MIN
    return covered_length(hole_starts[long], hole_ends[long], g.starts, g.ends)


def outermost(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The rows (sorted) that no other of them encloses, by the CPU nesting (`parent`), at
    any depth."""
    rows = np.asarray(rows, np.int64)
    if len(rows) == 0:
        return rows
    parent = trace.column("events", "parent")
    member = np.zeros(len(parent), bool)
    member[rows] = True
    inner = np.zeros(len(rows), bool)
    cur = parent[rows].astype(np.int64)
    live = cur >= 0
    while live.any():  # one vectorised step per nesting level
        inner |= live & member[np.maximum(cur, 0)]
        cur = np.where(live, parent[np.maximum(cur, 0)], -1).astype(np.int64)
        live = (cur >= 0) & ~inner
    return rows[~inner]


def _holds(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether some interval [starts[i], ends[i]] holds each point."""
    u = ops.union(starts, ends + 1)  # closed intervals as half-open ones one ns longer
    return touches(u.starts, u.ends - 1, points, points)
