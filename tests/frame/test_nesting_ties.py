"""Nesting at one instant: zero-length calls that share a timestamp.

The profiler records fast launches and tiny ops with zero duration, so several events can
start and end at one instant. Time alone cannot tell who encloses whom there: a launch
must never become the parent of another launch, and the External id names the op a launch
belongs to. Answers are known by construction.
"""

import json

import hta_fast


def _load(events):
    return hta_fast.load(json.dumps({"traceEvents": events}).encode())


def _x(name, cat, ts, dur=0, ext=None, tid=1, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if ext is not None:
        args["External id"] = ext
    if args:
        ev["args"] = args
    return ev


def _parents(trace):
    names = trace.events.column("name").to_pylist()
    parents = trace.column("events", "parent").tolist()
    return {names[i]: (names[p] if p >= 0 else None) for i, p in enumerate(parents)}


def test_two_zero_length_launches_at_one_instant_are_siblings():
    t = _load(
        [
            _x("op", "cpu_op", 10, 5, ext=1),
            _x("launch_a", "cuda_runtime", 12, 0, ext=1, correlation=7),
            _x("launch_b", "cuda_runtime", 12, 0, ext=1, correlation=8),
        ]
    )
    assert _parents(t) == {"op": None, "launch_a": "op", "launch_b": "op"}


def test_external_id_decides_between_zero_length_ops_at_one_instant():
    t = _load(
        [
            _x("outer", "cpu_op", 0, 100),
            _x("op_a", "cpu_op", 50, 0, ext=5),
            _x("launch_a", "cuda_runtime", 50, 0, ext=5, correlation=1),
            _x("op_b", "cpu_op", 50, 0, ext=6),
            _x("launch_b", "cuda_runtime", 50, 0, ext=6, correlation=2),
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k_a",
                "pid": 0,
                "tid": 7,
                "ts": 60,
                "dur": 3,
                "args": {"correlation": 1, "stream": 7, "device": 0},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k_b",
                "pid": 0,
                "tid": 7,
                "ts": 70,
                "dur": 3,
                "args": {"correlation": 2, "stream": 7, "device": 0},
            },
        ]
    )
    p = _parents(t)
    assert p["op_a"] == "outer" and p["op_b"] == "outer"
    assert p["launch_a"] == "op_a" and p["launch_b"] == "op_b"


def test_a_zero_length_op_still_holds_its_launch_without_external_ids():
    t = _load(
        [
            _x("op", "cpu_op", 20, 0),
            _x("launch", "cuda_runtime", 20, 0, correlation=3),
        ]
    )
    assert _parents(t) == {"op": None, "launch": "op"}


def test_a_zero_length_launch_at_its_inner_ops_start_goes_to_the_op_its_id_names():
    """aten::matmul (External id 1) launches at the microsecond its aten::mm (id 2) starts;
    the launch's id names matmul: its kernel counts for matmul, not mm. A launch with mm's
    id at that instant, and one of matmul's a microsecond later inside mm, nest by time as
    before (the id agrees, or the instant is not a tie)."""
    t = _load(
        [
            _x("aten::matmul", "cpu_op", 10, 50, ext=1),
            _x("aten::mm", "cpu_op", 20, 30, ext=2),
            _x("launch_matmul", "cuda_runtime", 20, 0, ext=1, correlation=1),
            _x("launch_mm", "cuda_runtime", 20, 0, ext=2, correlation=2),
            _x("launch_later", "cuda_runtime", 21, 0, ext=1, correlation=3),
        ]
    )
    assert _parents(t) == {
        "aten::matmul": None,
        "aten::mm": "aten::matmul",
        "launch_matmul": "aten::matmul",
        "launch_mm": "aten::mm",
        "launch_later": "aten::mm",
    }


def test_the_op_table_charges_the_tied_launchs_kernel_to_the_op_its_id_names():
    from hta_fast.analysis.ops.op_table import op_table

    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "gemm",
        "pid": 0,
        "tid": 7,
        "ts": 30,
        "dur": 8,
        "args": {"correlation": 1, "stream": 7, "device": 0, "External id": 1},
    }
    t = _load(
        [
            _x("aten::matmul", "cpu_op", 10, 50, ext=1),
            _x("aten::mm", "cpu_op", 20, 30, ext=2),
            _x("cudaLaunchKernel", "cuda_runtime", 20, 0, ext=1, correlation=1),
            kernel,
        ]
    )
    rows = {r["name"]: r for r in op_table(t)["by_name"].to_pylist()}
    assert rows["aten::matmul"]["self_gpu_time_sum"] == 8_000
    assert rows["aten::mm"]["gpu_time_sum"] == 0
