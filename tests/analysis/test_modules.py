"""The module view: time per nn.Module, forward and backward, host and GPU, nested; on a
synthetic trace with answers known by construction and on a shared trace that records
module frames."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.tensorboard.modules import modules
from hta_fast.cli import cli

US = 1000


def _x(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _launch(ts, corr, kernel_ts, kernel_dur, tid=1):
    return [
        _x("cudaLaunchKernel", "cuda_runtime", ts, 5, tid=tid, correlation=corr),
        {"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": kernel_ts,
         "dur": kernel_dur, "args": {"correlation": corr, "stream": 7, "device": 0}},
    ]  # fmt: skip


def _net() -> list:
    """Net_0 [0, 1000) holds Linear_0 [100, 400) (aten::mm, sequence number 7: a 50 µs
    kernel) and ReLU_0 [500, 700) (aten::relu, 8: 20 µs). The backward thread runs
    MmBackward0 (sequence number 7: 300 µs, an 80 µs kernel) and ReluBackward0 (8: 100 µs, a
    10 µs kernel)."""
    frame = "python_function"
    bwd = "autograd::engine::evaluate_function: "
    return [
        _x("nn.Module: Net_0", frame, 0, 1000),
        _x("nn.Module: Linear_0", frame, 100, 300),
        _x("aten::mm", "cpu_op", 150, 150, **{"Sequence number": 7, "Fwd thread id": 0}),
        *_launch(160, 1, 200, 50),
        _x("nn.Module: ReLU_0", frame, 500, 200),
        _x("aten::relu", "cpu_op", 550, 100, **{"Sequence number": 8, "Fwd thread id": 0}),
        *_launch(560, 2, 600, 20),
        _x(
            bwd + "MmBackward0",
            "cpu_op",
            2000,
            300,
            tid=2,
            **{"Sequence number": 7, "Fwd thread id": 1},
        ),  # fmt: skip
        *_launch(2010, 3, 2050, 80, tid=2),
        _x(
            bwd + "ReluBackward0",
            "cpu_op",
            2400,
            100,
            tid=2,
            **{"Sequence number": 8, "Fwd thread id": 1},
        ),  # fmt: skip
        *_launch(2410, 4, 2450, 10, tid=2),
    ]


def test_forward_and_backward_time_per_module_nested():
    t = hta_fast.load(json.dumps({"traceEvents": _net()}).encode())
    rows = {r["path"]: r for r in modules(t).table.to_pylist()}
    assert list(rows) == ["Net_0", "Net_0/Linear_0", "Net_0/ReLU_0"]  # tree order

    def times(path):
        r = rows[path]
        return tuple(
            r[k] // US for k in ("forward_host", "forward_gpu", "backward_host", "backward_gpu")
        )

    assert times("Net_0/Linear_0") == (300, 50, 300, 80)
    assert times("Net_0/ReLU_0") == (200, 20, 100, 10)
    assert times("Net_0") == (1000, 70, 400, 90)  # inclusive of its submodules
    assert [rows[p]["depth"] for p in rows] == [0, 1, 1]


def test_repeated_calls_add_up_and_a_trace_without_modules_says_how_to_record_them():
    events = _net()
    again = [{**e, "ts": e["ts"] + 10_000} for e in events if e["cat"] == "python_function"]
    t = hta_fast.load(json.dumps({"traceEvents": events + again}).encode())
    rows = {r["path"]: r for r in modules(t).table.to_pylist()}
    assert rows["Net_0/Linear_0"]["calls"] == 2 and rows["Net_0"]["forward_host"] == 2000 * US
    bare = hta_fast.load(json.dumps({"traceEvents": [_x("aten::mm", "cpu_op", 0, 10)]}).encode())
    res = modules(bare)
    assert res.table.num_rows == 0 and "with_stack=True" in res.notes[0]


def test_a_shared_trace_with_module_frames(traces_dir):
    path = traces_dir / "pairs/gpu_swap/Qwen_Qwen1.5-0.5B-Chat.h100.json.gz"
    t = modules(hta_fast.load(str(path))).table.to_pylist()
    top = t[0]
    assert top["path"] == "Qwen2Model_0" and top["depth"] == 0
    layers = [r for r in t if r["depth"] == 1 and r["module"].startswith("Qwen2DecoderLayer_")]
    assert len(layers) == 24
    # a module's GPU time holds its submodules': the layers' sum is within the model's
    assert sum(r["forward_gpu"] for r in layers) <= top["forward_gpu"]
    assert top["forward_gpu"] == pytest.approx(31_905_473, rel=0.01)


def test_analyze_modules_on_the_command_line(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"traceEvents": _net()}))
    res = CliRunner().invoke(cli, ["-q", "analyze", "-a", "modules", "--format", "json", str(f)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["tables"]["modules"]
    assert [r["path"] for r in rows] == ["Net_0", "Net_0/Linear_0", "Net_0/ReLU_0"]
