"""A real prediction beside the replay's exact one: each step predicted from the step before it.

The replay meets every measured step by construction (measured durations on the measured
order), so its 0 % error says the graph holds the trace, not that it predicts anything. Here
each step's events take the durations their counterparts had in the previous step (paired as
durations_from pairs them, hta_fast.model.whatif.durations_from: the same name and shapes in
order, else one for one in order, else a share of the previous step's total), the graph of
the step itself is kept, and the replay of its window alone says how long the step would
have been: the error is how far a step's own timeline is from the one its predecessor's
durations predict, the question "is the next step like this one?" that any extrapolation
from a profile relies on. Beside it, the naive forecast: the previous step's measured time.
A rank's first step has nothing before it and no prediction.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union

import pyarrow as pa

from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..replay.step_rows import error_pct
from .durations_from import pair_durations
from .edits import Edits
from .steps import what_if

# Every CPU event but the step annotation: so the outermost matches are the step's own
# children (and other threads' top-level events), each carrying what runs under it.
NEXT_STEP_MATCH = r"^(?!ProfilerStep#)"

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("predicted", pa.int64(), metadata=NS),
        pa.field("error_pct", pa.float64(), metadata=PCT),
        pa.field("previous_step_error_pct", pa.float64(), metadata=PCT),
    ]
)


def _error(predicted: Optional[int], measured: int) -> Optional[float]:
    return None if predicted is None else error_pct(predicted, measured)


def next_step(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per (rank, step): its measured time (its window alone), its time predicted from the
    previous step's durations, the error |predicted - measured| / measured × 100, and the
    same error of the previous selected step's measured time (the naive forecast); null for
    a rank's first step (the module doc)."""
    sel = select.selection_of(selection, ranks, steps)
    op_change, gpu_change = {}, {}
    first_step = {}
    too_few = []
    for rank, trace, _ in select.each_rank(traces, sel):
        step_ids = trace.column("steps", "step")
        if len(step_ids) < 2:
            too_few.append(rank)  # no step has one before it
            continue
        first_step[rank] = int(step_ids.min())
        pairing = pair_durations(rank, trace, trace, NEXT_STEP_MATCH, step_shift=1, mean=False)
        op_change[rank], gpu_change[rank] = pairing.ops, pairing.gpu
    rows: list[dict[str, Any]] = []
    if first_step:
        # Window by window: each step from its predecessor's durations alone, its carried-
        # over GPU work as measured, so no step carries an earlier step's prediction.
        # Chained, one mispaired call on a thread that waits (a backward thread's
        # AccumulateGrad, 18 us taking the 2 ms of its counterpart) moves every later step:
        # on ns_resolution_trace 20-33 % a step against 0.0-0.1 % window by window.
        table = what_if(
            traces,
            Edits(duration_change=gpu_change, op_change=op_change),
            selection=dataclasses.replace(sel, ranks=sorted(first_step)),
            cross_rank=False,
            chained=False,
        ).table
        previous: dict[int, int] = {}
        for rank, step, measured, predicted in zip(
            *(table[c].to_pylist() for c in ("rank", "step", "measured", "predicted"))
        ):
            first = step is None or step == first_step[rank]
            before = previous.get(rank)
            previous[rank] = measured
            rows.append(
                {
                    "rank": rank,
                    "step": step,
                    "measured": measured,
                    "predicted": None if first else predicted,
                    "error_pct": None if first else _error(predicted, measured),
                    "previous_step_error_pct": None if first else _error(before, measured),
                }
            )
    out = pa.table(
        {f.name: pa.array([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA
    )
    notes = (
        [f"rank(s) {', '.join(map(str, too_few))}: fewer than two profiler steps, none predicted"]
        if too_few
        else []
    )
    return Result("next_step", out, notes=notes, params={"selection": sel})
