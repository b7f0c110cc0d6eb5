"""hta_fast.sync_calls.host_wait_rows: the calls that held the host until GPU work was done,
on a trace built with each kind of call."""

from __future__ import annotations

from hta_fast import sync_calls
from tests.support.kineto_builder import KinetoBuilder


def test_the_calls_that_held_the_host():
    b = KinetoBuilder()
    b.step(1, 0, 1_000)
    b.kernel("gemm", 10, 20, 300)  # queues work: no wait
    b.memcpy("DtoH", 30, 330, 10, 4096, launch_dur=320)  # pageable, returned after its copy
    b.memcpy("DtoH", 400, 700, 10, 4096, launch_dur=5)  # pageable, returned before it
    b.memcpy("DtoH", 420, 430, 10, 4096, pageable=False, launch_dur=30)  # pinned: async
    b.runtime("cudaStreamSynchronize", 450, 270)  # blocking by name
    b.runtime("cudaMalloc", 800, 5)
    trace = b.load()
    rows = sync_calls.host_wait_rows(trace)
    names = trace.strings_at(trace.column("events", "name")[rows]).to_pylist()
    starts = (trace.column("events", "ts")[rows] - trace.column("events", "ts").min()) // 1000
    assert list(zip(names, starts.tolist())) == [
        ("cudaMemcpyAsync", 30),
        ("cudaStreamSynchronize", 450),
    ]


def test_sync_kinds_by_name_from_both_eras_of_kineto():
    """kineto's own names (earlier traces) and, since 2026, CUPTI's callback names with the
    _vNNNN suffix cut: `_v2` kept, per-thread default-stream variants `_ptds` / `_ptsz`."""
    names = {
        "cudaStreamSynchronize": sync_calls.STREAM,
        "cudaStreamSynchronize_ptsz": sync_calls.STREAM,
        "cuStreamSynchronize": sync_calls.STREAM,
        "cudaEventSynchronize": sync_calls.EVENT,
        "cudaDeviceSynchronize": sync_calls.DEVICE,
        "cuCtxSynchronize": sync_calls.DEVICE,
        "cudaMemcpy": sync_calls.OWN_COPY,
        "cudaMemcpy_ptds": sync_calls.OWN_COPY,
        "cudaMemcpy2D_ptds": sync_calls.OWN_COPY,
        "cuMemcpyDtoH_v2": sync_calls.OWN_COPY,
        "cuMemcpyDtoH_v2_ptds": sync_calls.OWN_COPY,
        "cudaMemcpyAsync": sync_calls.NONE,
        "cudaMemcpyAsync_ptsz": sync_calls.NONE,
        "cuMemcpyHtoDAsync_v2_ptsz": sync_calls.NONE,
        "cudaStreamWaitEvent_ptsz": sync_calls.STREAM_WAIT,
        "cudaLaunchKernel_ptsz": sync_calls.NONE,
        "INVALID": sync_calls.NONE,
    }
    got = sync_calls.sync_kind_of_names(list(names))
    assert dict(zip(names, got.tolist())) == {k: int(v) for k, v in names.items()}
