"""Differences from the reference and the TensorBoard plugin that docs/differences.md writes
down, each pinned here by construction (the others' tests are named there)."""

from __future__ import annotations

import json

import hta_fast
from hta_fast.analysis.ops.op_table import op_table


def _load(events) -> hta_fast.Trace:
    return hta_fast.load(json.dumps({"traceEvents": events}).encode())


def test_a_kernel_without_a_stream_argument_takes_its_tid_and_is_counted():
    # an AMD microbenchmark kernel: pid/tid and an External id, no stream, no launch
    t = _load(
        [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 3, "ts": 1, "dur": 4,
             "args": {"External id": 5}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 3, "ts": 9, "dur": 4,
             "args": {"External id": 6, "stream": 7}},
        ]
    )  # fmt: skip
    assert t.column("events", "stream").tolist() == [3, 7]
    assert t.stat("gpu_stream_from_tid") == 1


def test_the_plugins_operator_view_is_an_option_of_the_op_table():
    # as the plugin's own samples record them (PyTorch 1.8): all of category Operator
    annotation = {"ph": "X", "cat": "Operator", "pid": 1, "tid": 1, "dur": 100}
    op = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 10}
    events = [
        {**annotation, "name": "ProfilerStep#3", "ts": 0},
        {
            **annotation,
            "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "ts": 0,
            "dur": 20,
        },
        {**annotation, "name": "Optimizer.step#SGD.step", "ts": 30, "dur": 20},
        {**op, "name": "DataParallel.forward", "ts": 60},
        {**op, "name": "aten::mm", "ts": 80},
    ]
    kept = {r["name"] for r in op_table(_load(events))["by_name"].to_pylist()}
    plugin = {r["name"] for r in op_table(_load(events), plugin_view=True)["by_name"].to_pylist()}
    assert {"ProfilerStep#3", "Optimizer.step#SGD.step", "aten::mm"} <= kept
    assert plugin == {"aten::mm"}
