"""Est. SM Efficiency, as the TensorBoard profiler plugin estimates it: how much of the
GPU's streaming multiprocessors the kernels' grids could fill.

A kernel's share is blocks / SMs (blocks = grid_x * grid_y * grid_z, from the kernel's
arguments or, where it has none, its launch call's, as ROCm traces write them); kernels running at
once add their shares, and the sum counts at most 1. The metric is that step function's
integral over the steps' windows (step_windows) divided by their time, in percent: per
rank (the main table), per step (side table "steps") and, as the counter track the plugin
draws, its values over time (side table "timeline": each row's value holds from its ts to
the next row's).

The SM count is the trace's (deviceProperties numSms / multiProcessorCount); where the
header has none, a kernel's own `blocks per SM` (Kineto's blocks / SMs), else the count its
`warps per SM` implies (frame.kernel_args.sm_counts_from_warps), with a note. Kernels
without a grid add nothing; a rank whose SM count is unknown gets nulls and a note.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ... import ops
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work
from ...frame.kernel_args import (
    kernel_arg,
    kernel_blocks,
    locate,
    sm_counts,
    sm_counts_from_warps,
)
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind
from ...steps.step_windows import step_windows, window_notes, window_totals
from ...trace import Trace
from ...traceset import TraceSet
from .columns import pcts, table_of

__all__ = ["sm_efficiency", "kernel_sm_shares"]

_WHAT = "the TensorBoard profiler plugin's Est. SM Efficiency"
RANKS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("steps_time", pa.int64(), metadata=NS),
        pa.field("sm_efficiency_pct", pa.float64(), metadata={**PCT, "description": _WHAT}),
        pa.field("sm_count", pa.int64()),
        pa.field("sm_count_from", pa.string()),
        pa.field("kernels", pa.int64()),
        pa.field("kernels_unestimated", pa.int64()),
    ]
)
STEPS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("sm_efficiency_pct", pa.float64(), metadata={**PCT, "description": _WHAT}),
    ]
)
TIMELINE = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("sm_efficiency_pct", pa.float64(), metadata=PCT),
    ]
)
# A sum of shares this close to zero is zero (adding and removing floats leaves dust).
_DUST = 1e-9


def kernel_sm_shares(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, Optional[int], str]:
    """(share, sm_count, sources) for kernel rows. share: blocks / SMs per kernel (NaN
    without a grid or an SM count). sm_count: the header's (the first device's), else the
    one the kernels' blocks per SM or warps per SM imply, else None. sources: where the shares' SM counts
    come from, in order of use ("deviceProperties", "blocks per SM", "warps per SM"), or
    "unknown" when no kernel has a share."""
    where = locate(trace, rows)
    blocks = kernel_blocks(trace, rows).astype(np.float64)
    blocks[blocks <= 0] = np.nan
    sms = sm_counts(trace, rows)
    share = np.where(sms > 0, blocks / np.where(sms > 0, sms, 1), np.nan)
    sources = ["deviceProperties"] if np.any(~np.isnan(share)) else []
    count = int(sms[sms > 0][0]) if np.any(sms > 0) else None
    todo = np.isnan(share)
    if todo.any():
        per_sm = kernel_arg(trace, rows, "blocks_per_sm", where).astype(np.float64)
        use = todo & (per_sm > 0)
        if use.any():
            share[use] = per_sm[use]
            sources.append("blocks per SM")
            implied = blocks[use] / per_sm[use]
            implied = implied[~np.isnan(implied)]
            if count is None and len(implied):
                count = int(round(float(np.median(implied))))
        todo = np.isnan(share) & ~np.isnan(blocks)
    if todo.any():
        inferred = sm_counts_from_warps(trace, rows, where)
        if inferred is not None:
            share[todo] = blocks[todo] / inferred
            sources.append("warps per SM")
            count = inferred if count is None else count
    return share, count, ", ".join(sources) or "unknown"


def sm_efficiency(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: steps_time (ns), sm_efficiency_pct, sm_count and where it comes from,
    kernels and kernels_unestimated (no grid or SM count: they add nothing). Side tables
    "steps" (rank, step, ts, dur of its window, sm_efficiency_pct) and "timeline" (rank,
    ts, sm_efficiency_pct: the counter track, each value holding from its ts to the next
    row of the rank)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    per_rank: dict[str, list] = {f.name: [] for f in RANKS}
    per_step: dict[str, list] = {f.name: [] for f in STEPS}
    timeline: dict[str, list] = {f.name: [] for f in TIMELINE}
    notes: list[str] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        sw = step_windows(trace, mask, sel.window)
        notes += window_notes(rank, sw, trace, mask)
        w = gpu_work(trace, mask, sel.window)
        kernel = trace.column("events", "kind")[w.rows] == EventKind.kernel
        rows, starts, ends = w.rows[kernel], w.starts[kernel], w.ends[kernel]
        share, sms, source = kernel_sm_shares(trace, rows)
        known = ~np.isnan(share)
        lo, hi = sw.span
        ts, value = _capped_sum(starts[known], ends[known], share[known])
        piece_end = np.r_[ts[1:], ts[-1:]]
        whole = (
            float(window_totals(np.array([lo]), np.array([hi]), ts, piece_end, value)[0])
            if hi > lo
            else 0.0
        )
        unknown = not known.any()
        without = int(np.count_nonzero(~known))
        if unknown and len(rows):
            notes.append(
                f"rank {rank}: no kernel has both a grid and an SM count (deviceProperties "
                "numSms, or blocks per SM / warps per SM in its arguments): SM efficiency is "
                "null"
            )
        elif not source.startswith("deviceProperties") and len(rows):
            notes.append(
                f"rank {rank}: no SM count in deviceProperties; the kernels' {source} give "
                "it" + (f" ({sms} SMs)" if sms is not None else "")
            )
        elif source != "deviceProperties" and len(rows):
            notes.append(
                f"rank {rank}: some kernels' devices have no SM count in deviceProperties; "
                f"those take it from their {source.removeprefix('deviceProperties, ')}"
            )
        if without and not unknown:
            notes.append(
                f"rank {rank}: {without} of {len(rows)} kernels have no grid or SM count "
                "and add nothing"
            )
        per_rank["rank"].append(rank)
        per_rank["steps_time"].append(hi - lo)
        per_rank["sm_efficiency_pct"].append(
            None if unknown or hi <= lo else 100.0 * whole / (hi - lo)
        )
        per_rank["sm_count"].append(sms)
        per_rank["sm_count_from"].append(source)
        per_rank["kernels"].append(len(rows))
        per_rank["kernels_unestimated"].append(without)
        if len(sw.step):
            in_step = window_totals(sw.ts, sw.end, ts, piece_end, value)
            dur = np.where(unknown, 0, sw.dur)
            per_step["rank"].append(np.full(len(sw.step), rank, np.int64))
            per_step["step"].append(sw.step)
            per_step["ts"].append(sw.ts)
            per_step["dur"].append(sw.dur)
            per_step["sm_efficiency_pct"].append(pcts(in_step, dur))
        timeline["rank"].append(np.full(len(ts), rank, np.int64))
        timeline["ts"].append(ts)
        timeline["sm_efficiency_pct"].append(100.0 * value)
    return Result(
        "sm_efficiency",
        table_of(per_rank, RANKS),
        tables={"steps": table_of(per_step, STEPS), "timeline": table_of(timeline, TIMELINE)},
        notes=notes,
        params={"selection": sel},
    )


def _capped_sum(
    starts: np.ndarray, ends: np.ndarray, share: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The sum of the shares of the kernels running at each instant, capped at 1, as a step
    function: (ts, value), value holding from ts to the next ts (the last is 0)."""
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    series = ops.step_counter(
        np.zeros(2 * len(starts), np.int64), np.r_[starts, ends], np.r_[share, -share]
    )
    value = np.minimum(series.value, 1.0)
    value[np.abs(value) < _DUST] = 0.0
    return series.ts, value
