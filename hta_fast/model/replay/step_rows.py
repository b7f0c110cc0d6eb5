"""replay_steps' rows of one chain (hta_fast.model.graph.chain; a window is a chain of one step):
the chain replayed once, each step's measured and replayed span, its own GPU events' start
errors and the ablations (hta_fast.model.replay.ablations), cut back into steps."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...frame.fields import NS
from ..graph.chain import Chain
from .ablations import ABLATIONS, ablations

GPU_EVENTS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("row", pa.int64()),
        pa.field("measured_start", pa.int64(), metadata=NS),
        pa.field("replayed_start", pa.int64(), metadata=NS),
        pa.field("start_error", pa.int64(), metadata=NS),
    ]
)


def error_pct(predicted: int, measured: int) -> Optional[float]:
    """|predicted - measured| / measured × 100 (None for an empty step)."""
    return 100.0 * abs(predicted - measured) / measured if measured > 0 else None


def _median_max(values: np.ndarray, group: np.ndarray, n: int) -> tuple[list, list]:
    """Per group 0..n-1, the median and max of values (None where empty)."""
    med: list = [None] * n
    top: list = [None] * n
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n + 1))
    for k in range(n):
        v = values[order[bounds[k] : bounds[k + 1]]]
        if len(v):
            med[k], top[k] = float(np.median(v)), int(v.max())
    return med, top


def chain_step_rows(chain: Chain) -> tuple[list[dict[str, Any]], pa.Table]:
    """replay_steps' rows of this chain's steps and its "gpu_events" side table."""
    g = chain.graph
    n_steps = len(chain.steps)
    times = g.replay()
    measured = chain.spans(chain.measured_times())
    replayed = chain.spans(times)
    ev = chain.own_gpu
    replayed_start = times[2 * ev] + g.window_start
    measured_start = g.core.measured[2 * ev]
    err = replayed_start - measured_start
    med, top = _median_max(np.abs(err), chain.own_gpu_step, n_steps)
    events = pa.table(
        {
            "rank": array_of(np.full(len(ev), chain.rank), pa.int64()),
            "step": array_of(chain.steps, pa.int64()).take(array_of(chain.own_gpu_step)),
            "row": array_of(g.rows[ev], pa.int64()),
            "measured_start": array_of(measured_start, pa.int64()),
            "replayed_start": array_of(replayed_start, pa.int64()),
            "start_error": array_of(err, pa.int64()),
        },
        schema=GPU_EVENTS,
    )
    ablated = ablations(chain)
    n_gpu = np.bincount(chain.own_gpu_step, minlength=n_steps)
    rows = []
    for k, step in enumerate(chain.steps):
        m, r = int(measured[k]), int(replayed[k])
        row = {
            "rank": chain.rank,
            "step": step,
            "measured": m,
            "replayed": r,
            "error_pct": error_pct(r, m),
            "gpu_events": int(n_gpu[k]),
            "gpu_start_error_max": top[k],
            "gpu_start_error_median": med[k],
        }
        for name in ABLATIONS:
            row[name] = int(ablated[name][k])
            row[name + "_error_pct"] = error_pct(row[name], m)
        rows.append(row)
    return rows, events
