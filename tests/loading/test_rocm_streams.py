"""ROCm traces before and after Kineto put GPU work on its HIP stream (kineto #1424, June
2026) and kept the HSA queue as args.hsa_queue (#1425, RocprofActivity_inl.h: `"device": {},
"stream": {}, "hsa_queue": {}`): the queue loads as kernel_args.hsa_queue, slice writes it
back, and `info` and queue_length say which era a trace is."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.queue_length import queue_length
from hta_fast.cli import cli
from hta_fast.loading.rank_info import stream_source


def rocm_trace(new_era: bool) -> bytes:
    """Six kernels from three HIP streams of one device: the new era writes each on its
    stream with its HSA queue (streams 1 and 3 share queue 0); the old era writes the
    queue as the stream."""
    events = []
    queue_of = {1: 0, 2: 1, 3: 0}
    for i in range(6):
        stream = 1 + i % 3
        corr = 100 + i
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 7, "tid": 7,
             "ts": 10 * i, "dur": 4, "args": {"correlation": corr, "External id": i}}
        )  # fmt: skip
        args = {"device": 0, "correlation": corr, "kind": "Dispatch Kernel", "grid": [1, 1, 1],
                "block": [64, 1, 1]}  # fmt: skip
        if new_era:
            args |= {"stream": stream, "hsa_queue": queue_of[stream]}
            tid = stream
        else:
            args |= {"stream": queue_of[stream]}
            tid = queue_of[stream]
        events.append(
            {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": tid,
             "ts": 10 * i + 6, "dur": 3, "args": args}
        )  # fmt: skip
        events.append({"ph": "s", "id": corr, "pid": 7, "tid": 7, "ts": 10 * i, "cat": "ac2g",
                       "name": "ac2g"})  # fmt: skip
        events.append({"ph": "f", "id": corr, "pid": 0, "tid": tid, "ts": 10 * i + 6,
                       "cat": "ac2g", "name": "ac2g", "bp": "e"})  # fmt: skip
    doc = {"schemaVersion": 1, "roctracer_version": 4.1, "hip_runtime_version": 70253211,
           "traceEvents": events}  # fmt: skip
    return json.dumps(doc).encode()


def kernel_queues(trace: hta_fast.Trace) -> list[int]:
    return trace.column("kernel_args", "hsa_queue").tolist()


def test_the_new_era_keeps_streams_and_queues(tmp_path):
    trace = hta_fast.load(rocm_trace(new_era=True))
    kinds = trace.column("events", "kind")
    kernels = np.flatnonzero(kinds == hta_fast.EventKind.kernel)
    assert trace.column("events", "stream")[kernels].tolist() == [1, 2, 3, 1, 2, 3]
    assert kernel_queues(trace) == [0, 1, 0, 0, 1, 0]
    assert stream_source(trace).startswith("ROCm: GPU work on its HIP streams")
    notes = queue_length(trace).notes
    assert any("HIP streams" in n for n in notes)
    # slice writes the queue back
    path = tmp_path / "new.json"
    path.write_bytes(rocm_trace(new_era=True))
    out = tmp_path / "slice.json"
    res = CliRunner().invoke(
        cli, ["-q", "slice", str(path), "--window", "0:100000", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert kernel_queues(hta_fast.load(out)) == kernel_queues(trace)


def test_the_old_era_says_its_streams_are_queues(tmp_path):
    trace = hta_fast.load(rocm_trace(new_era=False))
    assert set(kernel_queues(trace)) == {-1}  # not recorded
    assert "HSA queues, as Kineto before June 2026" in stream_source(trace)
    path = tmp_path / "old.json"
    path.write_bytes(rocm_trace(new_era=False))
    res = CliRunner().invoke(cli, ["-q", "info", str(path)])
    assert res.exit_code == 0, res.output
    assert "streams of 1 rank(s): ROCm: GPU work on its HSA queues" in res.output
    res = CliRunner().invoke(cli, ["-q", "info", "--json", str(path)])
    assert "HSA queues" in json.loads(res.output)["stream_source"]["0"]


def test_a_cuda_trace_says_nothing(traces_dir):
    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    assert stream_source(trace) is None
    res = CliRunner().invoke(
        cli, ["-q", "info", str(traces_dir / "hta/trace_diff/control/control.json.gz")]
    )
    assert "streams of" not in res.output


def test_the_shared_mi300_trace_is_of_the_old_era(traces_dir):
    trace = hta_fast.load(traces_dir / "modern/mi300_ddp_resnet18/train_resnet18.json.gz")
    assert "HSA queues" in stream_source(trace)
