"""A host that polls is waiting, not working (model.graph.poll_runs): a run of event or
stream queries until GPU work is done reads as one wait for that work, so the critical path
runs through the GPU and a faster GPU shortens the step; a burst of queries that waits for
nothing (the caching allocator's) is left as it is."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast.model.graph.poll_runs import poll_runs
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import CPU_PID, CPU_TID, KinetoBuilder
from tests.support.synthetic_traces import (
    POLL_KERNEL_US,
    POLL_KERNELS,
    POLL_STEP_US,
    polling_host_builder,
)

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


@pytest.mark.parametrize("api", ["cudaEventQuery", "cudaStreamQuery", "hipEventQuery"])
def test_a_polling_run_is_one_wait_for_the_gpu(api):
    trace = polling_host_builder(api=api).load()
    runs = poll_runs(trace)
    assert len(runs.last) == 3  # one per step
    names = trace.strings_at(trace.column("events", "name")[runs.target]).to_pylist()
    assert names == [GEMM] * 3
    # each step's last kernel, the one its last query saw done
    ends = trace.column("events", "ts")[runs.target] + trace.column("events", "dur")[runs.target]
    assert (np.diff(ends) == POLL_STEP_US * 1000).all()
    assert (trace.column("events", "ts")[runs.last] >= ends).all()
    path = critical_path(trace).to_pandas()
    assert (path.gpu_compute_bound > 95).all() and (path.untraced_host == 0).all()
    t = what_if(trace, name={"gemm": 0.5})["totals"].to_pylist()[0]
    saved = (t["replayed"] - t["predicted"]) / t["steps"]
    assert saved == pytest.approx(POLL_KERNELS * POLL_KERNEL_US * 1000 / 2, rel=0.05)


def test_queries_wrapped_in_python_frames_are_one_run():
    """`torch.cuda.Event.query()` with Python tracing: each query inside its own frame."""
    b = KinetoBuilder()
    b.step(0, 0, 5_000)
    b.kernel(GEMM, 10, 100, 4_000)
    for k in range(21):  # the last at 4.1 ms sees the kernel done
        at = 100 + 200 * k
        b._x("python_function", "torch/cuda/streams.py(95): query", at, 5, CPU_PID, CPU_TID, {})
        b.event_query(at + 1, 3)
    trace = b.load()
    runs = poll_runs(trace)
    assert len(runs.last) == 1 and len(runs.moved) == 2  # the last query and its frame
    path = critical_path(trace).to_pandas()
    assert path.gpu_compute_bound.iloc[0] > 75 and path.untraced_host.iloc[0] == 0


def test_a_burst_that_waits_for_nothing_is_not_a_run():
    """The caching allocator asks a few events once each, microseconds apart."""
    b = KinetoBuilder()
    b.step(0, 0, 1_000)
    b.kernel(GEMM, 10, 100, 13)
    for k in range(6):
        b.event_query(100 + 2 * k, 1)
    b.kernel(GEMM, 200, 210, 500)
    assert len(poll_runs(b.load()).last) == 0


def test_a_launch_between_queries_breaks_the_run():
    b = polling_host_builder(steps=1)
    b.kernel(GEMM, 5_001, 20_200, 10)  # launched in the middle of the polling
    runs = poll_runs(b.load())
    assert len(runs.last) == 1  # only the queries after the launch: still a long wait
    ts = b.load().column("events", "ts")
    assert ts[runs.last[0]] - runs.start[0] < 16_000_000
