"""Est. Achieved Occupancy, as the TensorBoard profiler plugin averages it: the kernels'
estimated achieved occupancy, weighted by the time each runs inside the steps' windows.

Kineto records per kernel `est. achieved occupancy %`: min(warps per SM / the SM's most
resident warps, the kernel's theoretical occupancy), the occupancy its grid could reach
capped by what its block size, registers and shared memory allow. The metric is the mean of
that value over the kernels that carry it, each weighted by its time inside the windows
(step_windows), in percent: per rank over all the steps (the main table) and per step (side
table "steps"). Kernels without the value are left out (kernels_without_value counts those
that start in the windows); where no kernel has it, the mean is null.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work
from ...frame.kernel_args import kernel_arg
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind
from ...steps.step_windows import step_windows, window_counts, window_notes, window_totals
from ...trace import Trace
from ...traceset import TraceSet
from .columns import pcts, table_of

__all__ = ["achieved_occupancy"]

_WHAT = "the TensorBoard profiler plugin's Est. Achieved Occupancy"
_COMMON = [
    pa.field("kernels", pa.int64()),
    pa.field("kernels_without_value", pa.int64()),
    pa.field("kernel_time_with_value", pa.int64(), metadata=NS),
    pa.field("achieved_occupancy_pct", pa.float64(), metadata={**PCT, "description": _WHAT}),
]
RANKS = pa.schema([pa.field("rank", pa.int64()), *_COMMON])
STEPS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        *_COMMON,
    ]
)


def achieved_occupancy(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: kernels (that start inside the windows), kernels_without_value,
    kernel_time_with_value (ns inside the windows) and achieved_occupancy_pct. Side table
    "steps": the same per step (rank, step, ts, dur of its window)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    per_rank: dict[str, list] = {f.name: [] for f in RANKS}
    per_step: dict[str, list] = {f.name: [] for f in STEPS}
    notes: list[str] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        sw = step_windows(trace, mask, sel.window)
        notes += window_notes(rank, sw, trace, mask)
        w = gpu_work(trace, mask, sel.window)
        kernel = trace.column("events", "kind")[w.rows] == EventKind.kernel
        rows, starts, ends = w.rows[kernel], w.starts[kernel], w.ends[kernel]
        occ = kernel_arg(trace, rows, "est_achieved_occupancy").astype(np.float64)
        has = ~np.isnan(occ) & (occ >= 0)
        lo, hi = sw.span
        # Per window, then once over the whole span (the gaps between steps count too).
        wins = [(sw.ts, sw.end), (np.array([lo]), np.array([hi]))]
        parts = []
        for win_ts, win_end in wins:
            count = window_counts(win_ts, win_end, starts)
            count_with = window_counts(win_ts, win_end, starts[has])
            time_with = window_totals(win_ts, win_end, starts[has], ends[has])
            weighted = window_totals(win_ts, win_end, starts[has], ends[has], occ[has])
            parts.append((count, count_with, time_with, weighted))
        if len(rows) and not has.any():
            notes.append(
                f"rank {rank}: no kernel records est. achieved occupancy %: "
                "achieved occupancy is null"
            )
        elif not has.all():
            notes.append(
                f"rank {rank}: {int(np.count_nonzero(~has))} of {len(rows)} kernels record no "
                "est. achieved occupancy % and are left out"
            )
        for cols, (count, count_with, time_with, weighted), extra in (
            (per_step, parts[0], {"step": sw.step, "ts": sw.ts, "dur": sw.dur}),
            (per_rank, parts[1], {}),
        ):
            n = len(count)
            cols["rank"].append(np.full(n, rank, np.int64))
            for name, v in extra.items():
                cols[name].append(v)
            cols["kernels"].append(count)
            cols["kernels_without_value"].append(count - count_with)
            cols["kernel_time_with_value"].append(time_with)
            cols["achieved_occupancy_pct"].append(pcts(weighted / 100.0, time_with))
    return Result(
        "achieved_occupancy",
        table_of(per_rank, RANKS),
        tables={"steps": table_of(per_step, STEPS)},
        notes=notes,
        params={"selection": sel},
    )
