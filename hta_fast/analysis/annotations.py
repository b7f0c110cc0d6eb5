"""User annotations (torch.profiler.record_function ranges): which annotation each GPU
event ran under, and how long each annotation took.

GPU-side annotations (kind gpu_user_annotation) are GPU timeline ranges: the profiler
draws them on the stream of the kernels they cover. They are not GPU work and not CPU
events. Under a Selection that drops the last profiler step they are kept when they start
before that step's CPU start (they have no launch to follow).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .. import _arrow
from .._arrow import array_of
from ..frame import select
from ..frame.fields import NS, duration_stats
from ..frame.result import Result
from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["kernels_with_user_annotations", "user_annotation_breakdown"]

KIND_NAMES = np.array([k.name for k in EventKind], dtype=object)

KERNEL_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("cat", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("stream", pa.int32()),
        pa.field("correlation", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("annotation", pa.string()),
    ]
)
BREAKDOWN_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        *duration_stats(),
    ]
)


def selected_rows(trace: Trace, sel: select.Selection, kind: EventKind) -> np.ndarray:
    """Rows of `kind` kept by the selection; GPU annotations by their own start (above)."""
    kinds = trace.column("events", "kind")
    rows = np.flatnonzero(kinds == kind)
    if kind != EventKind.gpu_user_annotation or not sel.before_last_step:
        mask = sel.event_mask(trace)
        return rows if mask is None else rows[mask[rows]]
    mask = dataclasses.replace(sel, before_last_step=False).event_mask(trace)
    if mask is not None:
        rows = rows[mask[rows]]
    cut = select.last_step_start(trace)
    if cut is not None:
        rows = rows[trace.column("events", "ts")[rows] < cut]
    return rows


def _nesting_depth(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval (sorted by ts ascending, end descending): how many earlier ones are
    still open at its start."""
    ends = np.sort(end)
    return np.arange(len(ts)) - np.searchsorted(ends, ts, side="right")


def innermost_annotation(
    ann_ts: np.ndarray, ann_end: np.ndarray, k_ts: np.ndarray, k_end: np.ndarray
) -> np.ndarray:
    """Index into the annotations of one track of the innermost annotation overlapping
    each [k_ts, k_end) (-1: none). Overlap: a.ts < k_end and k_ts < a.end (a zero-length
    event overlaps an annotation that holds its start)."""
    order = np.lexsort((-ann_end, ann_ts))
    a_ts, a_end = ann_ts[order], ann_end[order]
    depth = _nesting_depth(a_ts, a_end)
    out = np.full(len(k_ts), -1, np.int64)
    probe = np.maximum(k_end, k_ts + 1)
    for d in np.unique(depth):  # one pass per nesting level, outermost first
        level = np.flatnonzero(depth == d)
        j = np.searchsorted(a_ts[level], probe, side="left") - 1
        ok = j >= 0
        ok[ok] = a_end[level[j[ok]]] > k_ts[ok]
        out[ok] = order[level[j[ok]]]
    return out


def _kernel_table(rank: int, trace: Trace, sel: select.Selection) -> pa.Table:
    col = trace.column
    kinds = col("events", "kind")
    mask = sel.event_mask(trace)
    gpu = np.flatnonzero(np.isin(kinds, GPU_WORK_KINDS))
    if mask is not None:
        gpu = gpu[mask[gpu]]
    ann = selected_rows(trace, sel, EventKind.gpu_user_annotation)
    ts, dur = col("events", "ts"), col("events", "dur")
    pid, tid = col("events", "pid"), col("events", "tid")
    gpu = gpu[np.lexsort((ts[gpu], tid[gpu], pid[gpu]))]
    which = np.full(len(gpu), -1, np.int64)
    if len(ann):
        tracks = np.unique(np.stack([pid[ann], tid[ann]], 1), axis=0)
        for p, t in tracks:  # one pass per GPU track holding annotations
            a = ann[(pid[ann] == p) & (tid[ann] == t)]
            on = np.flatnonzero((pid[gpu] == p) & (tid[gpu] == t))
            got = innermost_annotation(
                ts[a], ts[a] + dur[a], ts[gpu[on]], ts[gpu[on]] + dur[gpu[on]]
            )
            hit = got >= 0
            which[on[hit]] = a[got[hit]]
    names = col("events", "name")
    strings = trace.strings.cast(pa.string())
    ann_name = strings.take(
        _arrow.masked(np.where(which >= 0, names[np.maximum(which, 0)], 0), which < 0, pa.int32())
    )
    return pa.table(
        [
            np.full(len(gpu), rank, np.int64),
            strings.take(array_of(names[gpu], pa.int32())),
            strings.take(array_of(col("events", "cat")[gpu], pa.int32())),
            array_of(KIND_NAMES[kinds[gpu]], pa.string()),
            pid[gpu],
            tid[gpu],
            col("events", "stream")[gpu].astype(np.int32),
            col("events", "correlation")[gpu].astype(np.int64),
            ts[gpu],
            dur[gpu],
            ann_name,
        ],
        schema=KERNEL_SCHEMA,
    )


def kernels_with_user_annotations(
    traces: Union[Trace, TraceSet],
    rank: Optional[int] = None,
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per GPU work event (kernel, memcpy, memset), ordered by track and start,
    with `annotation`: the name of the innermost GPU annotation on its track (pid, tid)
    that overlaps it, null when none does. `rank` picks one rank (same as ranks=[rank])."""
    if rank is not None:
        ranks = [rank]
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [_kernel_table(r, trace, sel) for r, trace, _ in select.each_rank(traces, sel)]
    table = pa.concat_tables(parts) if parts else KERNEL_SCHEMA.empty_table()
    notes = []
    if table.num_rows and table.column("annotation").null_count == table.num_rows:
        notes.append("no GPU event runs under a GPU user annotation")
    return Result("kernels_with_user_annotations", table, notes=notes, params=dict(selection=sel))


def _fold(
    names: np.ndarray, sums: np.ndarray, num_kernels: int, duration_ratio: float, allow: np.ndarray
) -> np.ndarray:
    """Which names (given in descending-sum order) fold into "others": only when there are
    more than num_kernels names, those past position num_kernels or once the names before
    them already hold duration_ratio of the total time; allow-listed names never fold."""
    if len(names) <= num_kernels:
        return np.zeros(len(names), bool)
    before = np.cumsum(sums) - sums
    fold = (np.arange(len(names)) >= num_kernels) | (before >= duration_ratio * sums.sum())
    return fold & ~allow


def user_annotation_breakdown(
    traces: Union[Trace, TraceSet],
    *,
    use_gpu_annotation: bool = True,
    duration_ratio: float = 0.8,
    num_kernels: int = 1000,
    allowlist_patterns: Optional[Sequence[str]] = None,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank and annotation name: count, sum, max, min, mean, stddev (sample, 0 for one
    occurrence) of the annotations' durations (ns), GPU-side annotations by default, CPU
    ones with use_gpu_annotation=False. Nested annotations each count in full.

    With more than num_kernels names on a rank, names past the first num_kernels by total
    time, or past the first duration_ratio of the total, are folded into one "others" row
    whose statistics are over the folded annotations; names containing any of
    allowlist_patterns are never folded. Sorted by rank, then name."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    kind = EventKind.gpu_user_annotation if use_gpu_annotation else EventKind.user_annotation
    parts = []
    for rank, trace, _ in select.each_rank(traces, sel):
        rows = selected_rows(trace, sel, kind)
        if not len(rows):
            continue
        ids = trace.column("events", "name")[rows]
        dur = trace.column("events", "dur")[rows]
        uniq, inv = np.unique(ids, return_inverse=True)
        sums = np.bincount(inv, weights=dur, minlength=len(uniq))
        names = np.array(trace.strings.take(array_of(uniq, pa.int32())).to_pylist(), object)
        order = np.argsort(-sums, kind="stable")
        allow = np.array(
            [any(p in n for p in allowlist_patterns or ()) for n in names[order]], bool
        )
        fold_sorted = _fold(names[order], sums[order], num_kernels, duration_ratio, allow)
        label = names.copy()
        label[order[fold_sorted]] = "others"
        labels, linv = np.unique(label[inv].astype(str), return_inverse=True)
        parts.append(_stats(rank, labels, linv, dur))
    table = (pa.concat_tables(parts) if parts else BREAKDOWN_SCHEMA.empty_table()).sort_by(
        [("rank", "ascending"), ("name", "ascending")]
    )
    notes = [] if table.num_rows else [f"no {kind.name} event on the selected ranks"]
    return Result(
        "user_annotation_breakdown",
        table,
        notes=notes,
        params=dict(
            use_gpu_annotation=use_gpu_annotation,
            duration_ratio=duration_ratio,
            num_kernels=num_kernels,
            allowlist_patterns=allowlist_patterns,
            selection=sel,
        ),
    )


def _stats(rank: int, labels: np.ndarray, inv: np.ndarray, dur: np.ndarray) -> pa.Table:
    n = len(labels)
    count = np.bincount(inv, minlength=n)
    total = np.bincount(inv, weights=dur, minlength=n)
    mean = total / count
    dev = dur - mean[inv]
    ss = np.bincount(inv, weights=dev * dev, minlength=n)
    std = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1, 1)), 0.0)
    order = np.argsort(inv, kind="stable")
    starts = np.r_[0, np.cumsum(count)[:-1]]
    dmax = np.maximum.reduceat(dur[order], starts) if len(dur) else np.zeros(0, np.int64)
    dmin = np.minimum.reduceat(dur[order], starts) if len(dur) else np.zeros(0, np.int64)
    return pa.table(
        [
            np.full(n, rank, np.int64),
            array_of(labels.tolist(), pa.string()),
            count.astype(np.int64),
            np.rint(total).astype(np.int64),
            dmax,
            dmin,
            mean,
            std,
        ],
        schema=BREAKDOWN_SCHEMA,
    )
