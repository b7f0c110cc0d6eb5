"""The what-if edit "the interconnect is faster (or slower)": by how much each collective's
time moving data changes, from the collective cost model of the trace
(hta_fast.model.comm.collective_cost: the recorded machine calibrated on the trace's own
collectives).

A scale s multiplies every link's bandwidth; latencies stay and NCCL's algorithm and
protocol are chosen again at each size, so a collective's time changes by
model(links x s) / model(links): small collectives, latency bound, barely change, large ones
approach 1 / s. A bus bandwidth in GB/s sets the links so that each collective reaches it
at large sizes (nccl-tests' bus factor converts it).

Without recorded sizes nothing is calibrated: a scale then changes every collective's data
time by 1 / s (bandwidth bound, the upper limit of the change), and the notes say so; a bus
bandwidth cannot be turned into a time without sizes and is refused.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Union

import numpy as np

from ...._arrow import as_numpy
from ....trace import Trace
from ....traceset import TraceSet
from ...comm.collective_cost import CostModel, collective_time_factors, cost_model
from ...comm.collective_links import MatchedCollectives
from ...comm.recorded_topology import recorded_machine
from .declaration import EditDeclaration, Option, OptionError


def check_bandwidth(scale: Optional[float], busbw_gbps: Optional[float]) -> None:
    """A bandwidth edit is one of a scale or a bus bandwidth, a positive number."""
    if (scale is None) == (busbw_gbps is None):
        raise ValueError("a bandwidth what-if takes one of a scale or a bus bandwidth (GB/s)")
    value = scale if scale is not None else busbw_gbps
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and value > 0 and math.isfinite(value)
    ):
        raise ValueError(f"collective bandwidth must be a positive number, got {value!r}")


def bandwidth_text(text: Optional[str]) -> tuple[Optional[float], Optional[float]]:
    """--comm-bandwidth: "2" or "2x" -> (scale, None); "150GB/s" -> (None, bus GB/s)."""
    if text is None:
        return None, None
    t = text.strip().lower().replace(" ", "")
    busbw = t.endswith("gb/s") or t.endswith("gbps")
    number = t.removesuffix("gb/s").removesuffix("gbps").removesuffix("x")
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise OptionError(
            f"{text!r}: expected a positive scale (2, 2x) or a bus bandwidth (150GB/s)",
            "--comm-bandwidth",
        )
    return (None, value) if busbw else (value, None)


def _build(values: Mapping[str, Any]) -> dict[str, Any]:
    scale, busbw = bandwidth_text(values["comm_bandwidth"])
    return {"collective_bandwidth": scale, "collective_busbw_gbps": busbw}


EDIT = EditDeclaration(
    key="bandwidth",
    options=(
        Option(
            "--comm-bandwidth",
            "comm_bandwidth",
            "Interconnect bandwidth through the collective cost model fitted to the "
            "trace: a scale (2 or 2x: twice as fast) or a bus bandwidth (150GB/s).",
            metavar="S|GBPS",
        ),
    ),
    keywords=("collective_bandwidth", "collective_busbw_gbps", "collective_cost"),
    build=_build,
    doc="A faster or slower interconnect: each collective's time moving data changes by the "
    "factor the collective cost model (`collective_cost`, default: fitted to the traces) "
    "gives at its size; its wait for the other ranks is kept.",
)


def collective_bandwidth_factors(
    traces: Union[Trace, TraceSet],
    matched: MatchedCollectives,
    *,
    scale: Optional[float] = None,
    busbw_gbps: Optional[float] = None,
    cost: Optional[CostModel] = None,
) -> tuple[np.ndarray, list[str]]:
    """Per matched collective (the rows of matched.result), the factor its time moving data
    is multiplied by; and notes on how it was found. `cost`: a model to use instead of the
    one calibrated on these collectives (fit_collectives)."""
    check_bandwidth(scale, busbw_gbps)
    table = matched.result.table
    n = table.num_rows
    if n == 0:
        return np.ones(0), ["no communication kernels: the bandwidth edit changes nothing"]
    if cost is None:
        groups = [int(g) for g in as_numpy(table["group_size"]) if g == g]
        recorded = recorded_machine(traces, groups)
        cost = cost_model(table, recorded.topology, recorded.how, matched.result.notes)
    if not cost.observed.num_rows:
        if busbw_gbps is not None:
            raise ValueError(
                "the trace records no collective sizes, so a bus bandwidth cannot "
                "be turned into a time; give a scale (e.g. 2.0) instead"
            )
        assert scale is not None
        return np.full(n, 1.0 / scale), [
            f"no collective records its size, so the model has nothing to tell latency from "
            f"bandwidth by: every collective's "
            f"time moving data is scaled by 1/{scale:g} (as if all were bandwidth bound)"
        ]
    changed = cost.with_bandwidth(scale, busbw_gbps=busbw_gbps)
    factors = collective_time_factors(matched.result, cost, changed)
    factor = as_numpy(factors["factor"]).astype(np.float64)
    modelled = np.isfinite(as_numpy(factors["changed_ns"]).astype(np.float64))
    notes = [
        f"{int(modelled.sum())} of {n} collectives changed through the collective model",
        *cost.notes,
    ]
    if not modelled.all():
        missing = int((~modelled).sum())
        if scale is not None:
            factor[~modelled] = 1.0 / scale
            notes.append(
                f"{missing} collective(s) without a size, or that the model does not know,: their time moving "
                f"data is scaled by 1/{scale:g}"
            )
        else:
            notes.append(
                f"{missing} collective(s) without a size, or that the model does not know, keep their time"
            )
    return factor, notes
