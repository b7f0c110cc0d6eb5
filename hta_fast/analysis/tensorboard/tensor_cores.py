"""Tensor cores in the TensorBoard profiler plugin's overview, per rank: how much of the
kernel time ran on tensor cores, and how much was launched by operators that could use them.

Over the kernels launched inside a CPU operator (each belongs to the innermost operator
around its launch: frame.launches.enclosing):

    tc_kernel_pct              the share of their time in kernels that use tensor cores
                               (by name: costs.tensor_cores.uses_tensor_cores)
    tc_eligible_ops_kernel_pct the share of their time launched by the own code of a
                               tensor-core eligible operator (costs.tensor_cores) that
                               encloses no other eligible one: an aten::conv2d's own launches
                               do not count when it calls an eligible aten::cudnn_convolution,
                               whose launches do

A rank without such kernels has no share (null, with a note).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...costs.tensor_cores import tensor_core_eligible, uses_tensor_cores
from ...frame import derived, select
from ...frame.fields import NS, PCT
from ...frame.launches import ancestor_pairs, enclosing, launch_pairs
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind
from ...trace import Trace
from ...traceset import TraceSet
from .columns import pct, table_of

__all__ = ["tensor_cores"]

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("kernels", pa.int64()),
        pa.field("kernel_time", pa.int64(), metadata={**NS, "description": "launched in ops"}),
        pa.field("tc_kernel_time", pa.int64(), metadata=NS),
        pa.field("tc_eligible_ops_kernel_time", pa.int64(), metadata=NS),
        pa.field("tc_kernel_pct", pa.float64(), metadata=PCT),
        pa.field("tc_eligible_ops_kernel_pct", pa.float64(), metadata=PCT),
    ]
)


def tensor_cores(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: the kernels launched inside CPU operators (count, time in int64 ns), the
    part of their time on tensor cores and the part launched by the innermost eligible
    operators, and both as percentages (null without such kernels)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        total, tc, eligible, n = _rank(trace, mask)
        for name, value in (
            ("rank", rank),
            ("kernels", n),
            ("kernel_time", total),
            ("tc_kernel_time", tc),
            ("tc_eligible_ops_kernel_time", eligible),
            ("tc_kernel_pct", pct(tc, total)),
            ("tc_eligible_ops_kernel_pct", pct(eligible, total)),
        ):
            cols[name].append(value)
        if not total:
            notes.append(f"rank {rank}: no kernel time launched inside an operator: no shares")
    return Result("tensor_cores", table_of(cols, SCHEMA), notes=notes, params={"selection": sel})


def _rank(trace: Trace, mask: Optional[np.ndarray]) -> tuple[int, int, int, int]:
    """(kernel time, on tensor cores, by the innermost eligible ops, kernels) in ns."""
    launch, kernel = launch_pairs(trace, mask, include_memory_events=False)
    is_op = derived.kind_mask(trace, [EventKind.cpu_op])
    owner = enclosing(trace, launch, is_op)
    inside = owner >= 0
    kernel, owner = kernel[inside], owner[inside]
    if not len(kernel):
        return 0, 0, 0, 0
    dur = np.maximum(trace.column("events", "dur")[kernel], 0).astype(np.int64)
    names = trace.column("events", "name")
    on_tc = uses_tensor_cores(trace.strings_at(names[kernel]).to_pylist())
    ops = np.flatnonzero(is_op)
    is_eligible = np.zeros(len(is_op), bool)
    is_eligible[ops[tensor_core_eligible(trace.strings_at(names[ops]).to_pylist())]] = True
    # An eligible operator inside another makes that other one no innermost eligible op.
    _, outer = ancestor_pairs(trace, np.flatnonzero(is_eligible), is_eligible)
    innermost = is_eligible.copy()
    innermost[outer] = False
    return int(dur.sum()), int(dur[on_tc].sum()), int(dur[innermost[owner]].sum()), len(kernel)
