"""replay_steps' rows for chained steps (hta_fast.model.graph.chains): the chain replayed once, each
step's measured and replayed span, its own GPU events' start errors and the ablations, cut back
into steps. The ablations keep their per-step meaning (hta_fast.model.replay.steps): gpu_only runs a
step's own GPU work from the step's measured start, with nothing from another step holding it."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..graph.chains import Chain
from ..graph.dependency_graph import skip_mask

DROPPED = -(1 << 50)  # a weight no path through it can win with


def _median_max(values: np.ndarray, group: np.ndarray, n: int) -> tuple[list, list]:
    """Per group 0..n-1, the median and max of values (None where empty)."""
    med: list = [None] * n
    top: list = [None] * n
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n + 1))
    for k in range(n):
        v = values[order[bounds[k]:bounds[k + 1]]]
        if len(v):
            med[k], top[k] = float(np.median(v)), int(v.max())
    return med, top


def _gpu_only(chain: Chain, gpu_only_skip: int) -> np.ndarray:
    """Per step: its own GPU work alone, from its measured start (the module doc)."""
    g = chain.graph
    n = len(g.rows)
    step_of = np.full(n + 1, -1, np.int64)  # the last entry: the chain's start
    step_of[chain.own_gpu] = chain.own_gpu_step
    w = g.weight.copy()
    w[step_of[g.src // 2] != step_of[g.dst // 2]] = DROPPED
    measured_start = chain.start - g.window_start
    floor = np.zeros(2 * n + 1, np.int64)
    floor[2 * chain.own_gpu] = measured_start[chain.own_gpu_step]
    t = g.replay(w, skip=gpu_only_skip, floor=floor)
    end = measured_start.copy()
    np.maximum.at(end, chain.own_gpu_step, t[2 * chain.own_gpu + 1])
    return end - measured_start


def chain_step_rows(chain: Chain, gpu_only_skip: int, gpu_events_schema: pa.Schema
                    ) -> tuple[list[dict[str, Any]], pa.Table]:
    """replay_steps' rows of this chain's steps and its "gpu_events" side table."""
    g, trace = chain.graph, chain.trace
    n_steps = len(chain.step)
    times = g.replay()
    measured = chain.spans(chain.measured_times())
    replayed = chain.spans(times)
    ev = chain.own_gpu
    replayed_start = times[2 * ev] + g.window_start
    measured_start = g.core.measured[2 * ev]
    err = replayed_start - measured_start
    med, top = _median_max(np.abs(err), chain.own_gpu_step, n_steps)
    events = pa.table({
        "rank": pa.array(np.full(len(ev), chain.rank), pa.int64()),
        "step": pa.array(chain.step[chain.own_gpu_step], pa.int64()),
        "row": pa.array(g.rows[ev], pa.int64()),
        "measured_start": pa.array(measured_start, pa.int64()),
        "replayed_start": pa.array(replayed_start, pa.int64()),
        "start_error": pa.array(err, pa.int64()),
    }, schema=gpu_events_schema)
    dur = np.maximum(trace.column("events", "dur")[g.rows[ev]], 0)
    sum_kernels = np.bincount(chain.own_gpu_step, weights=dur, minlength=n_steps)
    stream = trace.column("events", "stream")[g.rows[ev]].astype(np.int64)
    _, stream_code = np.unique(stream, return_inverse=True)
    per_stream = np.zeros((n_steps, int(stream_code.max(initial=-1)) + 1))
    np.add.at(per_stream, (chain.own_gpu_step, stream_code.reshape(-1)), dur)
    busiest = per_stream.max(axis=1, initial=0)
    no_cross = chain.spans(g.replay(skip=skip_mask("cross_stream")))
    gpu_only = _gpu_only(chain, gpu_only_skip)
    n_gpu = np.bincount(chain.own_gpu_step, minlength=n_steps)
    rows = []
    for k, step in enumerate(chain.step.tolist()):
        rows.append({"rank": chain.rank, "step": step, "measured": int(measured[k]),
                     "replayed": int(replayed[k]), "gpu_events": int(n_gpu[k]),
                     "gpu_start_error_max": top[k], "gpu_start_error_median": med[k],
                     "sum_kernels": int(sum_kernels[k]), "busiest_stream": int(busiest[k]),
                     "no_cross_stream": int(no_cross[k]), "gpu_only": int(gpu_only[k])})
    return rows, events

