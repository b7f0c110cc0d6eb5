"""A real prediction beside the replay's exact one: each step predicted from the step before it.

The replay meets every measured step by construction (measured durations on the measured
order), so its 0 % error says the graph holds the trace, not that it predicts anything. Here
each step's events take the durations their counterparts had in the previous step (paired as
durations_from pairs them, hta_fast.model.whatif.durations_from: the same name and shapes in
order, else one for one in order, else a share of the previous step's total), the graph of
the step itself is kept, and the replay of its window alone says how long the step would have been: the error is
how far a step's own timeline is from the one its predecessor's durations predict, the
question "is the next step like this one?" that any extrapolation from a profile relies on.
A rank's first step has nothing before it and no prediction.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from .durations_from import pair_durations
from .edits import Edits
from .steps import what_if

# Every CPU event but the step annotation: so the outermost matches are the step's own
# children (and other threads' top-level events), each carrying what runs under it.
NEXT_STEP_MATCH = r"^(?!ProfilerStep#)"


def next_step_predictions(
    traces: Union[Trace, TraceSet], sel: select.Selection
) -> dict[tuple[int, Optional[int]], Optional[int]]:
    """(rank, step) -> the step's time predicted from the previous step's durations (None
    for a rank's first step, or a rank without steps)."""
    op_change, gpu_change = {}, {}
    first_step = {}
    for rank, trace, _ in select.each_rank(traces, sel):
        steps = trace.column("steps", "step")
        if len(steps) < 2:
            continue  # no step has one before it
        first_step[rank] = int(steps.min())
        pairing = pair_durations(rank, trace, trace, NEXT_STEP_MATCH, step_shift=1, mean=False)
        op_change[rank], gpu_change[rank] = pairing.ops, pairing.gpu
    if not first_step:
        return {}
    edits = Edits(duration_change=gpu_change, op_change=op_change)
    # Window by window: each step from its predecessor's durations alone, its carried-over
    # GPU work as measured, so no step carries an earlier step's prediction. Chained, one
    # mispaired call on a thread that waits (a backward thread's AccumulateGrad, 18 us
    # taking the 2 ms of its counterpart) moves every later step: on ns_resolution_trace
    # 20-33 % a step against 0.0-0.1 % window by window.
    rows = what_if(
        traces,
        edits,
        selection=dataclasses.replace(sel, ranks=sorted(first_step)),
        cross_rank=False,
        chained=False,
    ).table
    return {
        (rank, step): None if step is None or step == first_step[rank] else predicted
        for rank, step, predicted in zip(
            rows["rank"].to_pylist(), rows["step"].to_pylist(), rows["predicted"].to_pylist()
        )
    }
