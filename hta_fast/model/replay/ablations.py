"""The replay's ablations, per step of a chain (hta_fast.model.graph.chain), each a predicted
step time (ns): sum_kernels (the step's own GPU work durations added up), busiest_stream (the
stream with the most of it, back to back), no_cross_stream (the graph without cross-stream
edges) and gpu_only (the step's own GPU work with its stream order and cross-stream edges
only, from the step's measured start, nothing from another step holding it: no CPU, no
launches, no host syncs)."""

from __future__ import annotations

import numpy as np

from ..graph.chain import Chain
from ..graph.dependency_graph import skip_mask
from ..graph.dropped import DROPPED

ABLATIONS = ["sum_kernels", "busiest_stream", "no_cross_stream", "gpu_only"]

GPU_ONLY_SKIP = skip_mask(
    "release",
    "cpu_self",
    "cpu_nest_down",
    "cpu_nest_up",
    "cpu_sibling",
    "launch",
    "sync_wait",
    "sync_self",
    "cross_thread",
    "thread_join",
    "join_tail",
)


def _gpu_only(chain: Chain) -> np.ndarray:
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
    t = g.replay(w, skip=GPU_ONLY_SKIP, floor=floor)
    end = measured_start.copy()
    np.maximum.at(end, chain.own_gpu_step, t[2 * chain.own_gpu + 1])
    return end - measured_start


def ablations(chain: Chain) -> dict[str, np.ndarray]:
    """Each ablation's predicted time of each step of the chain (ns)."""
    g, trace = chain.graph, chain.trace
    n_steps = len(chain.steps)
    rows = g.rows[chain.own_gpu]
    dur = np.maximum(trace.column("events", "dur")[rows], 0)
    sum_kernels = np.bincount(chain.own_gpu_step, weights=dur, minlength=n_steps)
    stream = trace.column("events", "stream")[rows].astype(np.int64)
    _, stream_code = np.unique(stream, return_inverse=True)
    per_stream = np.zeros((n_steps, int(stream_code.max(initial=-1)) + 1))
    np.add.at(per_stream, (chain.own_gpu_step, stream_code.reshape(-1)), dur)
    return {
        "sum_kernels": sum_kernels.astype(np.int64),
        "busiest_stream": per_stream.max(axis=1, initial=0).astype(np.int64),
        "no_cross_stream": chain.spans(g.replay(skip=skip_mask("cross_stream"))),
        "gpu_only": _gpu_only(chain),
    }
