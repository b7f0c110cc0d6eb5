"""Time-weighted SM occupancy per profiler step: the achieved_occupancy analysis's per-step
numbers (hta_fast.analysis.tensorboard.achieved_occupancy), in this recipe's columns.

Kineto records each kernel's estimated achieved occupancy (`est. achieved occupancy %`).
A step's occupancy is the mean over the kernels that carry the value, each weighted by its
time inside the step's window (the step extended to the end of its GPU work, as the
TensorBoard profiler plugin times it); NaN when no kernel in the step has one. The
cookbook (docs/cookbook.md) writes the same kind of mean as a udf metric.
"""

from __future__ import annotations

from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from ..analysis.tensorboard.achieved_occupancy import achieved_occupancy
from ..frame.result import Result
from ..trace import Trace
from ..traceset import TraceSet


def occupancy_per_step(traces: Union[Trace, TraceSet], **selection: Any) -> Result:
    """Per rank and step: events (kernels with a value that start in the step's window)
    and their time-weighted occupancy (%)."""
    res = achieved_occupancy(traces, **selection)
    steps = res["steps"]
    events = pc.subtract(steps["kernels"], steps["kernels_without_value"])
    occupancy = pc.fill_null(steps["achieved_occupancy_pct"], float("nan"))
    table = pa.table(
        {
            "rank": steps["rank"],
            "step": steps["step"].cast(pa.int32()),
            "events": events,
            "occupancy": occupancy,
        }
    )
    return Result("occupancy_per_step", table, notes=res.notes, params=res.params)
