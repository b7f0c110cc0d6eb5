"""Time-weighted SM occupancy per profiler step, from the kernels' arguments.

Kineto records each kernel's estimated achieved occupancy (`est. achieved occupancy %`).
A step's occupancy is the mean over its kernels weighted by their durations, over the
kernels that carry the value (NaN when none does).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from .. import udf
from ..frame.result import Result
from ..trace import Trace
from ..traceset import TraceSet


@udf.metric(name="occupancy")
def weighted_occupancy(dur: np.ndarray, est_achieved_occupancy: np.ndarray) -> float:
    """Duration-weighted mean of est_achieved_occupancy (%) over kernels that have it."""
    weighted = 0.0
    total = 0.0
    for i in range(len(dur)):
        occ = est_achieved_occupancy[i]
        if occ == occ:  # NaN (no value recorded) is not equal to itself
            weighted += dur[i] * occ
            total += dur[i]
    return weighted / total if total > 0 else np.nan


def occupancy_per_step(traces: Union[Trace, TraceSet], **selection: Any) -> Result:
    """Per rank and step: kernels and their time-weighted occupancy (%)."""
    return udf.apply(weighted_occupancy, traces, by="step", kinds="kernels", **selection)
