"""The op table counts each kernel once per row: an operator that calls itself with the same
shapes is one call of its group, not two."""

from __future__ import annotations

from hta_fast.analysis.ops.op_table import op_table
from tests.support.op_traces import OpTraceBuilder

DIMS, TYPES = [[4, 8], [8, 16]], ["float", "float"]


def _self_nested_trace():
    """aten::mm calls aten::mm with the same shapes (a dispatcher re-entry), which launches
    one 30 µs kernel; a flat aten::mm of those shapes launches 10 µs; an aten::linear calls
    aten::t, which calls aten::linear of the outer's shapes again, which launches 7 µs."""
    b = OpTraceBuilder()
    b.op("aten::mm", 0, 100, DIMS, TYPES)
    b.op_with_kernels("aten::mm", 10, DIMS, TYPES, [30])
    b.op_with_kernels("aten::mm", 1000, DIMS, TYPES, [10])
    # outer -> other op -> same op and shapes again: still one call of the outer's group
    b.op("aten::linear", 2000, 200, [[4, 8], [16, 8]], TYPES)
    b.op("aten::t", 2010, 150, [[16, 8]], ["float"])
    b.op_with_kernels("aten::linear", 2020, [[4, 8], [16, 8]], TYPES, [7])
    return b.load()


def test_an_operator_calling_itself_with_the_same_shapes_counts_once():
    t = op_table(_self_nested_trace()).to_pandas()
    mm = t[t.name == "aten::mm"]
    assert len(mm) == 1
    mm = mm.iloc[0]
    assert mm["count"] == 2  # the nested call is part of its outer call
    assert mm.gpu_events == 2
    assert mm.gpu_time_sum == 40_000  # 30 + 10 µs, each kernel once
    assert sorted([mm.gpu_time_min, mm.gpu_time_max]) == [10_000, 30_000]
    assert mm.cpu_time_sum == 100_000 + 20_000  # the outer call's time, and the flat one's
    lin = t[t.name == "aten::linear"].iloc[0]
    assert lin["count"] == 1 and lin.gpu_events == 1 and lin.gpu_time_sum == 7_000
    # aten::t is another operator: it holds the kernel too, in its own row
    assert t[t.name == "aten::t"].iloc[0].gpu_time_sum == 7_000


def test_the_same_name_with_other_shapes_is_another_row_unless_directly_inside():
    # through another operator: two calls, two rows
    b = OpTraceBuilder()
    b.op("aten::mm", 0, 100, [[2, 8], [8, 16]], TYPES)
    b.op("aten::t", 5, 80, [[8, 16]], ["float"])
    b.op_with_kernels("aten::mm", 10, DIMS, TYPES, [30])
    t = op_table(b.load()).to_pandas()
    mm = t[t.name == "aten::mm"]
    assert sorted(mm.gpu_time_sum) == [30_000, 30_000] and (mm["count"] == 1).all()
    # directly inside (aten::nan_to_num calling its out= variant, one more input): one call
    b = OpTraceBuilder()
    b.op("aten::nan_to_num", 0, 100, [[4, 8], []], ["float", "Scalar"])
    b.op_with_kernels(
        "aten::nan_to_num", 10, [[4, 8], [], [4, 8]], ["float", "Scalar", "float"], [30]
    )
    t = op_table(b.load()).to_pandas()
    assert len(t) == 1 and t.iloc[0]["count"] == 1 and t.iloc[0].gpu_time_sum == 30_000
    assert t.iloc[0].input_dims == "[[4, 8], []]"  # the outer call's shapes
