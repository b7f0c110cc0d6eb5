"""Every analysis takes the same selection keywords (ranks, steps, window, streams) and
honours them: a narrower selection never sees more, a rank left out is absent, and an
analysis of the selected events equals the analysis of a trace holding only them."""

import numpy as np
import pytest

import hta_fast
from hta_fast import ops
from hta_fast.analysis import (
    annotations,
    idle_time,
    kernel_breakdown,
    launch_stats,
    memory_bw,
    overlap,
    queue_length,
    steps,
    stragglers,
    temporal,
)
from hta_fast.analysis.ops import op_kernels
from hta_fast.analysis.tensorboard import (
    achieved_occupancy,
    gpu_utilization,
    sm_efficiency,
    step_breakdown,
)

ANALYSES = {
    "temporal": lambda t, **k: temporal.temporal_breakdown(t, **k),
    "idle_time": lambda t, **k: idle_time.idle_time_breakdown(t, **k),
    "kernel_breakdown": lambda t, **k: kernel_breakdown.kernel_breakdown(t, **k),
    "overlap": lambda t, **k: overlap.comm_comp_overlap(t, **k),
    "queue_length": lambda t, **k: queue_length.queue_length(t, **k),
    "memory_bw": lambda t, **k: memory_bw.memory_bandwidth(t, **k),
    "launch_stats": lambda t, **k: launch_stats.launch_stats(t, **k),
    "op_kernels": lambda t, **k: op_kernels.op_kernels(t, **k),
    "annotations": lambda t, **k: annotations.user_annotation_breakdown(t, **k),
    "steps": lambda t, **k: steps.profiler_steps(t, **k),
    "stragglers": lambda t, **k: stragglers.stragglers(t, **k),
    "gpu_utilization": lambda t, **k: gpu_utilization.gpu_utilization(t, **k),
    "sm_efficiency": lambda t, **k: sm_efficiency.sm_efficiency(t, **k),
    "achieved_occupancy": lambda t, **k: achieved_occupancy.achieved_occupancy(t, **k),
    "step_breakdown": lambda t, **k: step_breakdown.step_breakdown(t, **k),
}


@pytest.fixture(scope="module")
def ranks(traces_dir):
    return hta_fast.load_dir(traces_dir / "hta" / "trace_filter")


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_every_selection_keyword_is_accepted_and_narrows(name, ranks):
    fn = ANALYSES[name]
    full = fn(ranks)
    t0 = ranks[0]
    ts = t0.column("events", "ts")
    mid = int(np.median(ts))
    step_numbers = t0.column("steps", "step").tolist()
    streams = sorted(set(t0.column("events", "stream").tolist()) - {-1})
    for kw in (
        dict(ranks=[1]),
        dict(steps=step_numbers[:1]),
        dict(window=(int(ts.min()), mid)),
        dict(streams=streams[:1]),
    ):
        part = fn(ranks, **kw)
        assert part.table.num_rows <= max(full.table.num_rows, 1) or name in {"idle_time"}, kw
        if "rank" in part.table.column_names and "ranks" in kw:
            assert set(part.table.column("rank").to_pylist()) <= {1}, kw


def test_temporal_window_equals_the_window_cut(ranks):
    # Busy time inside a window = the union of GPU intervals clipped to it.
    t0 = ranks[0]
    kind = t0.column("events", "kind")
    gpu = np.isin(
        kind, [hta_fast.EventKind.kernel, hta_fast.EventKind.memcpy, hta_fast.EventKind.memset]
    )
    s = t0.column("events", "ts")[gpu]
    e = s + t0.column("events", "dur")[gpu]
    lo, hi = int(np.quantile(s, 0.25)), int(np.quantile(s, 0.75))
    got = temporal.temporal_breakdown(ranks, ranks=[0], window=(lo, hi)).to_pandas()
    starts, ends = ops.union(np.clip(s, lo, hi), np.clip(e, lo, hi))
    busy = int((ends - starts).sum())
    row = got.iloc[0]
    assert row["kernel_time"] - row["idle_time"] == busy
