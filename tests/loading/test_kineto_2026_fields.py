"""What Kineto writes since 2026 beside the names (kineto libkineto/src): `channel` and
`channel_type` on kernels, copies and fills (CuptiActivity.h addChannelTypedMetadata,
kineto #1420), and event names whose double quotes are escaped (output_json.cpp
escapeQuotesForJSON, kineto #1459/#1508; earlier traces wrote them bare, and were not JSON).
Each loads: the events kept, their other arguments read, nothing counted as bad."""

from __future__ import annotations

import json

import pytest

import hta_fast
from hta_fast.schema import EventKind

BASE_US = 1_700_000_000_000_000
# channel_type: CUpti_ChannelType (1 compute, 2 async memcpy)
GPU_WORK = [
    ("kernel", "gemm", {"grid": [4, 1, 1], "block": [128, 1, 1], "channel": 3, "channel_type": 1}),
    (
        "gpu_memcpy",
        "Memcpy HtoD (Pinned -> Device)",
        {"bytes": 4096, "channel": 5, "channel_type": 2},
    ),
    ("gpu_memset", "Memset (Device)", {"bytes": 512, "channel": 6, "channel_type": 2}),
]


def x(cat: str, name: str, ts: float, dur: float, pid: int, tid: int, args: dict) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": BASE_US + ts,
            "dur": dur, "args": args}  # fmt: skip


def channel_trace() -> bytes:
    events = []
    for i, (cat, name, args) in enumerate(GPU_WORK):
        corr = 10 + i
        events.append(
            x(
                "cuda_runtime",
                "cudaLaunchKernel",
                i * 100,
                5,
                1,
                1,
                {"cbid": 211, "correlation": corr},
            )
        )
        gpu = {"device": 0, "context": 1, "stream": 7, "correlation": corr, **args}
        events.append(x(cat, name, i * 100 + 10, 20, 0, 7, gpu))
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def test_channel_arguments_load():
    trace = hta_fast.load(channel_trace())
    assert sum(trace.stats["count"].to_pylist()) == 0, trace.stats
    kind = trace.column("events", "kind")
    gpu = [int(r) for r in range(len(kind)) if kind[r] != EventKind.runtime]
    assert kind[gpu].tolist() == [EventKind.kernel, EventKind.memcpy, EventKind.memset]
    # each linked to its launch, on its stream, its other arguments read
    partner = trace.column("events", "partner")
    assert (partner[gpu] >= 0).all() and (trace.column("events", "stream")[gpu] == 7).all()
    args = trace.to_arrow("kernel_args").to_pydict()
    assert args["row"] == gpu
    assert (args["grid_x"][0], args["block_x"][0]) == (4, 128)
    assert args["bytes"] == [None, 4096, 512]


# kineto #1459's case: a with_stack frame named after a dynamo-generated co_filename.
QUOTED = '{"device": "cpu", "dtype": "float32"}(12): run'


@pytest.mark.parametrize("indent", [None, 2])
def test_escaped_quotes_in_names_load(indent):
    events = [
        x("python_function", QUOTED, 0, 100, 1, 1, {"Python id": 1}),
        x("cpu_op", 'aten::add "x"', 10, 20, 1, 1, {"External id": 1, "Input Dims": [[2]]}),
    ]
    text = json.dumps({"traceEvents": events}, indent=indent)
    assert '\\"device\\"' in text  # the quotes escaped, as Kineto writes them since 2026
    trace = hta_fast.load(text.encode())
    assert sum(trace.stats["count"].to_pylist()) == 0, trace.stats
    names = trace.strings_at(trace.column("events", "name")).to_pylist()
    assert names == [QUOTED, 'aten::add "x"']
    assert trace.column("events", "parent").tolist() == [-1, 0]
    assert json.loads(trace.to_arrow("op_args").to_pydict()["input_dims"][0]) == [[2]]


def test_log_arrays_of_earlier_traces_stay_in_the_header():
    """Kineto before #1460 (July 2026, output_json.cpp finalizeTrace) wrote the LOG(WARNING)
    and LOG(ERROR) messages of non-glog builds as top-level "WARNING" / "ERROR" arrays after
    traceEvents; since then it writes none. Both layouts load the same events, and the
    earlier one keeps its messages in the header."""
    events = json.loads(channel_trace())["traceEvents"]
    later = {"schemaVersion": 1, "traceEvents": events, "traceName": "t"}
    earlier = {**later, "WARNING": ["CUPTI: x 'y' /z"], "ERROR": ["Error 1", "Error 2"]}
    old = hta_fast.load(json.dumps(earlier).encode())
    new = hta_fast.load(json.dumps(later).encode())
    for col in ("ts", "dur", "name", "kind", "stream"):
        assert old.column("events", col).tolist() == new.column("events", col).tolist()
    assert old.meta.header["WARNING"] == ["CUPTI: x 'y' /z"]
    assert old.meta.header["ERROR"] == ["Error 1", "Error 2"]
    assert "WARNING" not in new.meta.header
