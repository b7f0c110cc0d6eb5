"""Which profiler steps each rank recorded.

A step is a CPU event named ``ProfilerStep#N`` (the profiler's own step marker); GPU-side
copies of the marker (gpu_user_annotation rows) are not steps. Beside each step's host span
(ts, dur) stands its device-aware span: from the later of its host start and the end of the
previous step's GPU work to the later of its host end and the end of the GPU work it
launched, as the TensorBoard profiler times steps (hta_fast.steps.step_windows):
where the host runs ahead of the GPU, the GPU iteration.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .._arrow import array_of, as_numpy
from ..frame import select
from ..frame.fields import NS
from ..frame.result import Result
from ..steps.step_windows import step_windows
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["profiler_steps"]

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("span", pa.int64(), metadata=NS),
    ]
)


def _rank_table(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    # The loader lists the step events (Trace.steps) as it assigns steps.
    rows = trace.column("steps", "row")
    step = trace.column("steps", "step").astype(np.int64)
    ts, dur = trace.column("steps", "ts"), trace.column("steps", "dur")
    if mask is not None:
        keep = mask[rows]
        rows, step, ts, dur = rows[keep], step[keep], ts[keep], dur[keep]
    order = np.lexsort((ts, step))
    win = step_windows(trace, None)  # one window a step: a few hundred at most
    span_of = dict(zip(win.step.tolist(), win.dur.tolist()))
    span = np.array([span_of.get(s, d) for s, d in zip(step.tolist(), dur.tolist())], np.int64)
    return pa.table(
        [np.full(len(rows), rank, np.int64), step[order], ts[order], dur[order], span[order]],
        schema=SCHEMA,
    )


def profiler_steps(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per ProfilerStep#N event: rank, step, ts, dur (its host span), span (the
    device-aware step, the module doc) in ns, sorted by rank and step.
    Side table "steps": the distinct step numbers over all selected ranks, sorted."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [_rank_table(rank, trace, mask) for rank, trace, mask in select.each_rank(traces, sel)]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    distinct = np.unique(as_numpy(table.column("step")))
    notes = [] if table.num_rows else ["no ProfilerStep#N event on the selected ranks"]
    return Result(
        "profiler_steps",
        table,
        tables={"steps": pa.table({"step": array_of(distinct, pa.int64())})},
        notes=notes,
        params=dict(selection=sel),
    )
