"""Communication/computation overlap: how much of a rank's communication time is hidden
behind computation.

    comp_comm_overlap_pctg = |union(COMP) ∩ union(COMM)| / |union(COMM)| × 100

over the rank's GPU kernels (kernel_class COMP and COMM). A rank without communication has
no such share: its percentage is null and a note says so.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from ..frame import select
from ..frame.fields import NS, PCT
from ..frame.gpu_work import gpu_work
from ..frame.result import Result
from ..frame.select import Ranks, Steps, Streams, Window
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["comm_comp_overlap"]

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("comp_comm_overlap_pctg", pa.float64(), metadata=PCT),
        pa.field("comm_time", pa.int64(), metadata=NS),
        pa.field("overlap_time", pa.int64(), metadata=NS),
    ]
)


def comm_comp_overlap(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: comp_comm_overlap_pctg (float64, null without communication), comm_time
    (length of the union of communication kernels) and overlap_time (the part of it during
    which computation runs), in int64 ns."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w = gpu_work(trace, mask, sel.window)
        cls = np.full(len(w.rows), 255, np.uint8)
        cls[w.kclass == KernelClass.COMP] = 0
        cls[w.kclass == KernelClass.COMM] = 1
        on = cls != 255
        times = ops.class_sweep(w.starts[on], w.ends[on], cls[on], 2)
        comm, both = int(times[2] + times[3]), int(times[3])
        out["rank"].append(rank)
        out["comm_time"].append(comm)
        out["overlap_time"].append(both)
        out["comp_comm_overlap_pctg"].append(100.0 * both / comm if comm else None)
        if not comm:
            notes.append(f"rank {rank}: no communication kernels, so no overlap percentage")
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    return Result("comm_comp_overlap", table, notes=notes, params={"selection": sel})
