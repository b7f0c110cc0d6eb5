"""Which profiler steps each rank recorded.

A step is a CPU event named ``ProfilerStep#N`` (the profiler's own step marker); GPU-side
copies of the marker (gpu_user_annotation rows) are not steps.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .fields import NS
from ..trace import Trace
from ..traceset import TraceSet
from . import select
from .result import Result

SCHEMA = pa.schema([
    pa.field("rank", pa.int64()),
    pa.field("step", pa.int64()),
    pa.field("ts", pa.int64(), metadata=NS),
    pa.field("dur", pa.int64(), metadata=NS),
])
_STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def step_number(name: str) -> int:
    """N of "ProfilerStep#N", -1 when the name holds no number."""
    m = _STEP.match(name)
    return int(m.group(1)) if m else -1


def _rank_table(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    rows = select.profiler_step_rows(trace)
    if mask is not None:
        rows = rows[mask[rows]]
    name_ids = trace.column("events", "name")[rows]
    uniq, inv = np.unique(name_ids, return_inverse=True)
    nums = np.array([step_number(trace.strings[int(i)].as_py()) for i in uniq], np.int64)
    step = nums[inv] if len(rows) else np.zeros(0, np.int64)
    keep = step >= 0
    rows, step = rows[keep], step[keep]
    ts = trace.column("events", "ts")[rows]
    order = np.lexsort((ts, step))
    return pa.table([np.full(len(rows), rank, np.int64), step[order], ts[order],
                     trace.column("events", "dur")[rows][order]], schema=SCHEMA)


def profiler_steps(traces: Union[Trace, TraceSet], *, ranks: Optional[Sequence[int]] = None,
                   steps: Optional[Sequence[int]] = None,
                   window: Optional[tuple[int, int]] = None,
                   streams: Optional[Sequence[int]] = None,
                   selection: Optional[select.Selection] = None) -> Result:
    """One row per ProfilerStep#N event: rank, step, ts, dur (ns), sorted by rank and step.
    Side table "steps": the distinct step numbers over all selected ranks, sorted."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [_rank_table(rank, trace, mask) for rank, trace, mask in select.each_rank(traces, sel)]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    distinct = np.unique(table.column("step").to_numpy())
    notes = [] if table.num_rows else ["no ProfilerStep#N event on the selected ranks"]
    return Result("profiler_steps", table,
                  tables={"steps": pa.table({"step": pa.array(distinct, pa.int64())})},
                  notes=notes, params=dict(selection=sel))
