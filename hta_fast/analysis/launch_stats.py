"""How long each launch call took on the CPU, how long its GPU work ran, and how long the
GPU work waited after the call returned.

One row per (launch, GPU event) pair, for every launch API the loader links to GPU work:
runtime and driver calls alike (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel,
cudaGraphLaunch, cudaMemcpyAsync, hipLaunchKernel, hipExtModuleLaunchKernel, ...). A graph
launch that queued several kernels gives one row per kernel: its launch is the graph
launch, and a note says how many of them count for the operators that captured the graph
(hta_fast.frame.graph_attribution).

    launch_delay = max(0, gpu start - (launch start + launch duration))
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .. import _arrow
from .._arrow import array_of, as_numpy
from ..frame import select
from ..frame.fields import NS
from ..frame.graph_attribution import graph_replay_notes
from ..frame.launches import LAUNCH_KINDS as LAUNCH_KINDS
from ..frame.launches import launch_pairs
from ..frame.result import Result
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["launch_stats"]
# launch_pairs and LAUNCH_KINDS moved to frame.launches; imported above, they keep this
# module path working for older callers.

_COLUMNS = [
    pa.field("rank", pa.int64()),
    pa.field("correlation", pa.int64()),
    pa.field("launch_name", pa.dictionary(pa.int32(), pa.large_string())),
    pa.field("gpu_name", pa.dictionary(pa.int32(), pa.large_string())),
    pa.field("gpu_kind", pa.dictionary(pa.uint8(), pa.string())),
    pa.field("stream", pa.int32()),
    pa.field("launch_ts", pa.int64(), metadata=NS),
    pa.field("gpu_ts", pa.int64(), metadata=NS),
    pa.field("cpu_duration", pa.int64(), metadata=NS),
    pa.field("gpu_duration", pa.int64(), metadata=NS),
    pa.field("launch_delay", pa.int64(), metadata=NS),
]
SCHEMA = pa.schema(_COLUMNS)


def launch_timing(
    trace: Trace, mask: Optional[np.ndarray], include_memory_events: bool = True
) -> dict[str, np.ndarray]:
    """The numbers of every launch/GPU-event pair (see launch_pairs), as numpy columns:
    launch, gpu (rows), correlation, launch_ts, gpu_ts, cpu_duration, gpu_duration,
    launch_delay (ns)."""
    launch, gpu = launch_pairs(trace, mask, include_memory_events)
    col = trace.column
    ts, dur = col("events", "ts"), col("events", "dur")
    launch_ts, gpu_ts, cpu_dur = ts[launch], ts[gpu], dur[launch]
    return dict(
        launch=launch,
        gpu=gpu,
        correlation=col("events", "correlation")[gpu].astype(np.int64),
        launch_ts=launch_ts,
        gpu_ts=gpu_ts,
        cpu_duration=cpu_dur,
        gpu_duration=dur[gpu],
        launch_delay=np.maximum(gpu_ts - (launch_ts + cpu_dur), 0),
    )


def _rank_table(
    rank: int, trace: Trace, mask: Optional[np.ndarray], include_memory_events: bool
) -> pa.Table:
    t = launch_timing(trace, mask, include_memory_events)
    launch, gpu = t["launch"], t["gpu"]
    col = trace.column

    def strings(name: str, rows: np.ndarray) -> pa.Array:  # dictionary-encoded, no copy of text
        return _arrow.column("events", name, col("events", name)[rows], trace.strings)

    return pa.table(
        [
            np.full(len(gpu), rank, np.int64),
            t["correlation"],
            strings("name", launch),
            strings("name", gpu),
            strings("kind", gpu),
            col("events", "stream")[gpu].astype(np.int32),
            t["launch_ts"],
            t["gpu_ts"],
            t["cpu_duration"],
            t["gpu_duration"],
            t["launch_delay"],
        ],
        schema=SCHEMA,
    )


def launch_stats(
    traces: Union[Trace, TraceSet],
    *,
    runtime_cutoff: int = 50_000,
    launch_delay_cutoff: int = 100_000,
    include_memory_events: bool = True,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per launch/GPU-event pair: correlation, launch and GPU names, stream, starts,
    cpu_duration (the launch call), gpu_duration, launch_delay (all ns).

    include_memory_events  also pair memcpy/memset GPU events with their calls
    runtime_cutoff         side table "long_runtime": pairs whose cpu_duration > this (ns)
    launch_delay_cutoff    side table "long_delay": pairs whose launch_delay > this (ns)
    """
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [
        _rank_table(rank, trace, mask, include_memory_events)
        for rank, trace, mask in select.each_rank(traces, sel)
    ]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    notes = []
    if table.num_rows == 0:
        notes.append("no launch is linked to GPU work on the selected ranks")
    notes += graph_replay_notes(traces, sel)
    cpu = as_numpy(table.column("cpu_duration"))
    delay = as_numpy(table.column("launch_delay"))
    return Result(
        "launch_stats",
        table,
        tables={
            "long_runtime": table.filter(array_of(cpu > runtime_cutoff)),
            "long_delay": table.filter(array_of(delay > launch_delay_cutoff)),
        },
        notes=notes,
        params=dict(
            runtime_cutoff=runtime_cutoff,
            launch_delay_cutoff=launch_delay_cutoff,
            include_memory_events=include_memory_events,
            selection=sel,
        ),
    )
