"""The what-if edit "the interconnect is faster (or slower)": by how much each collective's
time moving data changes, from the collective cost model fitted to the trace's own
collectives (hta_fast.model.comm.collective_cost).

A collective of b bytes whose curve is latency + b / bandwidth changes by
(latency + b / (s × bandwidth)) / (latency + b / bandwidth) when the bandwidth is scaled by s:
small collectives, latency bound, barely change, large ones approach 1 / s. A bus bandwidth
in GB/s sets each curve's bandwidth instead (nccl-tests' bus factor converts it).

Without recorded sizes there is no curve: a scale then changes every collective's data time
by 1 / s (bandwidth bound, the upper limit of the change), and the notes say so; a bus
bandwidth cannot be turned into a time without sizes and is refused.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..comm.collective_cost import CostModel, collective_time_factors, fit_collectives
from ..comm.collective_links import MatchedCollectives


def check_bandwidth(scale: Optional[float], busbw_gbps: Optional[float]) -> None:
    """A bandwidth edit is one of a scale or a bus bandwidth, a positive number."""
    if (scale is None) == (busbw_gbps is None):
        raise ValueError("a bandwidth what-if takes one of a scale or a bus bandwidth (GB/s)")
    value = scale if scale is not None else busbw_gbps
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and value > 0 and math.isfinite(value)
    ):
        raise ValueError(f"collective bandwidth must be a positive number, got {value!r}")


def collective_bandwidth_factors(
    matched: MatchedCollectives,
    *,
    scale: Optional[float] = None,
    busbw_gbps: Optional[float] = None,
    cost: Optional[CostModel] = None,
) -> tuple[np.ndarray, list[str]]:
    """Per matched collective (the rows of matched.result), the factor its time moving data
    is multiplied by; and notes on how it was found. `cost`: a fitted model to use instead
    of fitting one to these collectives."""
    check_bandwidth(scale, busbw_gbps)
    table = matched.result.table
    n = table.num_rows
    if n == 0:
        return np.ones(0), ["no communication kernels: the bandwidth edit changes nothing"]
    cost = cost if cost is not None else fit_collectives(matched.result)
    if not cost.fits:
        if busbw_gbps is not None:
            raise ValueError(
                "the trace records no collective sizes, so a bus bandwidth cannot "
                "be turned into a time; give a scale (e.g. 2.0) instead"
            )
        assert scale is not None
        return np.full(n, 1.0 / scale), [
            f"no collective records its size, so there is no cost curve: every collective's "
            f"time moving data is scaled by 1/{scale:g} (as if all were bandwidth bound)"
        ]
    changed = cost.with_bandwidth(scale, busbw_gbps=busbw_gbps)
    factors = collective_time_factors(matched.result, cost, changed)
    factor = np.asarray(factors["factor"].to_numpy(), np.float64).copy()
    modelled = np.isfinite(
        np.asarray(factors["changed_ns"].to_numpy(zero_copy_only=False), np.float64)
    )
    notes = [f"{int(modelled.sum())} of {n} collectives changed through the fitted cost model"]
    if not modelled.all():
        missing = int((~modelled).sum())
        if scale is not None:
            factor[~modelled] = 1.0 / scale
            notes.append(
                f"{missing} collective(s) without a size or curve: their time moving "
                f"data is scaled by 1/{scale:g}"
            )
        else:
            notes.append(f"{missing} collective(s) without a size or curve keep their time")
    return factor, notes
