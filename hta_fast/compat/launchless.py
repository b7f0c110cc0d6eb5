"""GPU events without a launch in the facade's default view, and the warning that says how
many its GPU-time methods leave out.

The default view (include_last_profiler_step=False) drops the last profiler step and
everything from its start on, GPU work by its launch's start, as the reference does. A GPU
event whose launch the trace does not hold (a kernel from a thread the profiler did not
trace, a graph replay, a vendor that links no launch) has no launch to place it by, and the
reference's loader drops every such row that has a correlation id. The facade matches it
there, and warns with the count, so that the GPU time the breakdowns do not show is not lost
silently; include_last_profiler_step=True and hta_fast.analysis count those events
(docs/differences.md). A GPU event with no correlation id but an External id a CPU operator
has (AMD microbenchmark kernels) is placed by that operator's start, as the reference matches
it (frame.select.launch_start).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, NamedTuple, Optional, Sequence

from ..frame.gpu_work import gpu_work
from ..frame.select import external_id_op, last_step_start

if TYPE_CHECKING:
    from .trace_analysis import TraceAnalysis


class LeftOut(NamedTuple):
    """GPU events of one rank left out for want of a launch: how many, of how many GPU
    events (kernels, memcpy, memset) the rank has, and their GPU time (ns)."""

    events: int
    of: int
    gpu_ns: int


def launchless_left_out(
    analysis: TraceAnalysis, ranks: Optional[Sequence[int]] = None
) -> dict[int, LeftOut]:
    """rank -> what the facade's view leaves out only because the event has no launch (an
    event that starts at or after the last step's start would be left out anyway), over
    these ranks (None: all)."""
    if not analysis.selection.before_last_step:
        return {}
    out = {}
    for rank in analysis.traces.ranks if ranks is None else ranks:
        trace = analysis.traces[rank]
        cut = last_step_start(trace)
        if cut is None:  # under two steps nothing is cut
            continue
        w = gpu_work(trace, None)
        lost = trace.column("events", "partner")[w.rows] < 0
        lost[lost] = external_id_op(trace, w.rows[lost]) < 0
        gone = lost & (w.starts < cut)
        n = int(gone.sum())
        if n:
            out[rank] = LeftOut(n, len(w.rows), int((w.ends - w.starts)[gone].sum()))
    return out


def warn_launchless(
    analysis: TraceAnalysis, method: str, ranks: Optional[Sequence[int]] = None
) -> None:
    """Warns (UserWarning) when the view leaves GPU events without a launch out of `method`
    (called by the facade's method of that name, so the warning points at the caller)."""
    left = launchless_left_out(analysis, ranks)
    if not left:
        return
    per_rank = "; ".join(
        f"rank {r}: {x.events:,} of {x.of:,} GPU events ({x.gpu_ns / 1e6:.3f} ms of GPU time)"
        for r, x in sorted(left.items())
    )
    warnings.warn(
        f"{method}: GPU events without a launch in the trace are left out ({per_rank}): "
        "the default view (include_last_profiler_step=False) places GPU work before the last "
        "step by its launch, and the reference drops GPU events without one; "
        "include_last_profiler_step=True, or hta_fast.analysis.temporal.temporal_breakdown, "
        "counts them",
        stacklevel=4,
    )
