"""Self CPU and self GPU time per operator, tensor cores, and kernels by launch
configuration, on traces whose answers are known by construction, and on real traces."""

from __future__ import annotations

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.launch_stats import launch_pairs
from hta_fast.analysis.ops.op_kernels import enclosing, kernel_launch_configs
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.analysis.registry import ANALYSES
from hta_fast.costs.tensor_cores import tensor_core_eligible, uses_tensor_cores
from hta_fast.frame import derived
from hta_fast.frame.select import Selection
from hta_fast.schema import EventKind
from tests.support.op_traces import OpTraceBuilder

US = 1000
TC_GEMM = "ampere_s16816gemm_128x128_ldg8_stages_32x5_tn"


def _rows(t) -> dict:
    return {r["name"]: r for r in op_table(t).table.to_pylist()}


def _parent_child_trace():
    """aten::linear [0, 100) launches a 20 µs kernel (launch 5 µs) and calls aten::addmm
    [20, 70), which launches a 30 µs tensor-core GEMM and a 10 µs kernel (launches 5 µs)."""
    b = OpTraceBuilder()
    b.op("aten::linear", 0, 100, [[4, 8], [16, 8]], ["float", "float"])
    b.kernel("bias_kernel", 2, 200, 20.0, launch_dur=5.0)
    b.op("aten::addmm", 20, 50, [[16], [4, 8], [8, 16]], ["float"] * 3)
    b.kernel(TC_GEMM, 25, 230, 30.0, launch_dur=5.0)
    b.kernel("splitk_reduce", 40, 270, 10.0, launch_dur=5.0)
    return b.load()


def test_self_cpu_and_self_gpu_of_an_op_with_a_child():
    r = _rows(_parent_child_trace())
    lin, mm = r["aten::linear"], r["aten::addmm"]
    # inclusive: the parent holds its child's kernels
    assert (lin["cpu_time_sum"], lin["gpu_time_sum"]) == (100 * US, 60 * US)
    assert (mm["cpu_time_sum"], mm["gpu_time_sum"]) == (50 * US, 40 * US)
    # self CPU: own duration less the child op and the own launch
    assert lin["self_cpu_time_sum"] == (100 - 50 - 5) * US
    assert mm["self_cpu_time_sum"] == (50 - 5 - 5) * US
    # self GPU: the kernels launched by the op itself, not by its child
    assert (lin["self_gpu_time_sum"], mm["self_gpu_time_sum"]) == (20 * US, 40 * US)


def test_tensor_cores():
    r = _rows(_parent_child_trace())
    lin, mm = r["aten::linear"], r["aten::addmm"]
    assert lin["tc_eligible"] and mm["tc_eligible"]
    assert (mm["tc_self_time_sum"], mm["tc_time_sum"]) == (30 * US, 30 * US)
    assert mm["tc_self_ratio"] == pytest.approx(30 / 40)
    assert (lin["tc_self_time_sum"], lin["tc_self_ratio"]) == (0, 0.0)
    assert lin["tc_total_ratio"] == pytest.approx(30 / 60)
    # not in the list, but it launched a tensor-core kernel: eligible; neither: not
    b = OpTraceBuilder()
    b.op_with_kernels("my::fused_gemm", 0, [[4]], ["float"], [10], kernel_name=TC_GEMM)
    b.op_with_kernels("aten::add", 1000, [[4]], ["float"], [10])
    r = _rows(b.load())
    assert r["my::fused_gemm"]["tc_eligible"] and not r["aten::add"]["tc_eligible"]
    assert r["my::fused_gemm"]["tc_self_ratio"] == 1.0
    assert uses_tensor_cores(["sm90_xmma_gemm_bf16", "volta_sgemm_128x64_nn", None]).tolist() == [
        True,
        False,
        False,
    ]
    assert tensor_core_eligible(["aten::mm", "aten::add", None]).tolist() == [True, False, False]


def test_a_self_nested_call_counts_once():
    # aten::mm [0, 100) calls aten::mm [10, 60) of the same shapes, which launches 30 µs
    b = OpTraceBuilder()
    dims, types = [[4, 8], [8, 16]], ["float", "float"]
    b.op("aten::mm", 0, 100, dims, types)
    b.op("aten::mm", 10, 50, dims, types)
    b.kernel("gemm_kernel", 20, 200, 30.0, launch_dur=5.0)
    (row,) = op_table(b.load()).table.to_pylist()
    assert row["count"] == 1 and row["cpu_time_sum"] == 100 * US
    # the inner call's own time is the outer call's: 100 µs less the launch, once
    assert row["self_cpu_time_sum"] == 95 * US
    assert (row["gpu_time_sum"], row["self_gpu_time_sum"]) == (30 * US, 30 * US)


def test_annotations_inside_an_op_are_its_own_code():
    b = OpTraceBuilder()
    b.op("aten::foo", 0, 100, [[4]], ["float"])
    b.cpu_op("my_region", 10, 50, cat="user_annotation")
    b.kernel("k", 20, 200, 30.0, launch_dur=5.0)
    (row,) = op_table(b.load()).table.to_pylist()
    assert (row["self_cpu_time_sum"], row["self_gpu_time_sum"]) == (95 * US, 30 * US)


def test_by_name_merges_shapes():
    b = OpTraceBuilder()
    b.op_with_kernels("aten::mm", 0, [[4, 8], [8, 16]], None, [10])
    b.op_with_kernels("aten::mm", 100, [[2, 8], [8, 16]], None, [30])
    res = op_table(b.load())
    assert res.table.num_rows == 2
    (row,) = res["by_name"].to_pylist()
    assert (row["count"], row["gpu_time_sum"], row["self_gpu_time_sum"]) == (2, 40 * US, 40 * US)
    assert row["cpu_time_sum"] == 40 * US and row["self_cpu_time_sum"] == (40 - 10) * US


def test_kernels_by_launch_configuration():
    b = OpTraceBuilder()
    b.op("aten::mm", 0, 100, [[4]], ["float"])
    b.kernel(TC_GEMM, 10, 200, 10.0, grid=(64, 1, 1))
    b.kernel(TC_GEMM, 20, 220, 30.0, grid=(64, 1, 1), occupancy=20.0)
    b.kernel(TC_GEMM, 30, 260, 5.0, grid=(128, 2, 1))
    b.op("aten::add", 200, 50, [[4]], ["float"])
    b.kernel(TC_GEMM, 210, 300, 7.0, grid=(64, 1, 1))  # another operator: another row
    b.kernel("orphan_kernel", 400, 500, 1.0)  # launched outside any operator
    res = kernel_launch_configs(b.load())
    rows = [
        (r["kernel"], r["op_name"], r["grid_x"], r["grid_y"], r["calls"], r["total_time"])
        for r in res.table.to_pylist()
    ]
    assert rows == [
        (TC_GEMM, "aten::mm", 64, 1, 2, 40 * US),
        (TC_GEMM, "aten::add", 64, 1, 1, 7 * US),
        (TC_GEMM, "aten::mm", 128, 2, 1, 5 * US),
        ("orphan_kernel", None, 1024, 1, 1, 1 * US),
    ]
    first = res.table.to_pylist()[0]
    assert (first["min_time"], first["max_time"], first["mean_time"]) == (10 * US, 30 * US, 20e3)
    assert first["mean_occupancy"] == pytest.approx((60 * 10 + 20 * 30) / 40)
    assert (first["block_x"], first["registers_per_thread"], first["shared_memory"]) == (256, 32, 0)
    assert first["tensor_cores"] and first["op_tc_eligible"]
    assert not res.table.to_pylist()[1]["op_tc_eligible"]  # aten::add
    assert "kernel_launch_configs" in ANALYSES
    assert ANALYSES["kernel_launch_configs"](b.load(), Selection()).table.num_rows == 4


REAL = [
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "pairs/dataloader_workers/resnet50_num_workers_0.pt.trace.json.gz",
]


@pytest.mark.parametrize("path", REAL)
def test_real_self_times_partition_the_time(traces_dir, path):
    """Each nanosecond of GPU work launched inside an operator is one row's self GPU time,
    and each nanosecond inside top-level operators is self CPU time or a launch's."""
    t = hta_fast.load(traces_dir / path)
    table = op_table(t).table
    kind = t.column("events", "kind")
    dur = np.maximum(t.column("events", "dur"), 0)
    is_op = derived.kind_mask(t, [EventKind.cpu_op])
    launch, gpu = launch_pairs(t, None, include_memory_events=True)
    owned = enclosing(t, launch, is_op) >= 0
    assert sum(table["self_gpu_time_sum"].to_pylist()) == dur[gpu[owned]].sum() > 0
    ops = np.flatnonzero(is_op)
    top = ops[enclosing(t, ops, is_op) < 0]
    runtime = np.flatnonzero(np.isin(kind, [EventKind.runtime, EventKind.driver]))
    in_op = enclosing(t, runtime, is_op) >= 0
    outer = enclosing(t, runtime, np.isin(kind, [EventKind.runtime, EventKind.driver]))
    counted = runtime[in_op & (outer < 0)]  # a driver call inside a runtime call is in it
    assert sum(table["self_cpu_time_sum"].to_pylist()) + dur[counted].sum() == dur[top].sum()
    assert (table["self_cpu_time_sum"].to_numpy() <= table["cpu_time_sum"].to_numpy()).all()
    assert (table["self_gpu_time_sum"].to_numpy() <= table["gpu_time_sum"].to_numpy()).all()
    configs = kernel_launch_configs(t).table
    assert sum(configs["calls"].to_pylist()) == int((kind == EventKind.kernel).sum())
