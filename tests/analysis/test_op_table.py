"""The op table: operators grouped by name and shapes, with their kernels' GPU time."""

from __future__ import annotations

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.ops.op_table import _same_call, op_instance_rows, op_table
from tests.support.op_traces import OpTraceBuilder


def _two_shapes_trace():
    b = OpTraceBuilder()
    ts = 0.0
    # three mm calls of one shape (kernels 10, 20, 60 µs), one of another (5 µs)
    for d in (10, 20, 60):
        ts = b.op_with_kernels("aten::mm", ts, [[4, 8], [8, 16]], ["float", "float"], [d])
        ts += 500
    ts = b.op_with_kernels("aten::mm", ts, [[2, 8], [8, 16]], ["float", "float"], [5])
    # an outer op holding an inner one: the outer's GPU time includes the inner's kernels
    b.op("aten::linear", ts + 1000, 100, [[4, 8], [16, 8], [16]], ["float"] * 3)
    b.op_with_kernels("aten::addmm", ts + 1010, [[16], [4, 8], [8, 16]], ["float"] * 3, [7, 3])
    b.op("aten::view", ts + 2000, 5, [[4, 16]], ["float"])  # launches nothing
    return b.load()


def test_groups_by_name_and_shape_with_gpu_time_statistics():
    t = op_table(_two_shapes_trace()).to_pandas()
    mm = t[(t.name == "aten::mm") & (t.input_dims == "[[4, 8], [8, 16]]")].iloc[0]
    assert mm["count"] == 3 and mm.gpu_events == 3
    assert mm.gpu_time_sum == 90_000 and mm.gpu_time_min == 10_000 and mm.gpu_time_max == 60_000
    assert mm.gpu_time_median == 20_000 and mm.gpu_time_mean == pytest.approx(30_000)
    assert mm.gpu_time_std == pytest.approx(np.std([10_000, 20_000, 60_000]))
    small = t[(t.name == "aten::mm") & (t.input_dims == "[[2, 8], [8, 16]]")].iloc[0]
    assert small["count"] == 1 and small.gpu_time_sum == 5_000
    assert mm.input_type == '["float", "float"]'


def test_outer_operator_includes_its_children_kernels():
    t = op_table(_two_shapes_trace()).to_pandas().set_index("name")
    assert t.loc["aten::linear", "gpu_time_sum"] == 10_000
    assert t.loc["aten::addmm", "gpu_time_sum"] == 10_000
    assert t.loc["aten::linear", "gpu_events"] == 2
    assert t.loc["aten::view", "gpu_time_sum"] == 0 and t.loc["aten::view", "count"] == 1


def test_example_is_the_median_instance():
    trace = _two_shapes_trace()
    t = op_table(trace).to_pandas()
    mm = t[(t.name == "aten::mm") & (t.input_dims == "[[4, 8], [8, 16]]")].iloc[0]
    # the median instance is the second mm call (20 µs kernel)
    names = trace.events.column("name").to_pylist()
    assert names[mm.example_row] == "aten::mm"
    assert mm.example_ts == trace.column("events", "ts")[mm.example_row]
    mm_rows = [i for i, n in enumerate(names) if n == "aten::mm"]
    starts = sorted(trace.column("events", "ts")[mm_rows])
    assert mm.example_ts == starts[1]


def test_prefix_and_selection_keywords():
    trace = _two_shapes_trace()
    assert set(op_table(trace, op_prefix="aten::m").to_pandas().name) == {"aten::mm"}
    with pytest.raises(ValueError, match="no such rank"):
        op_table(trace, ranks=[5])


def test_no_shapes_gives_a_note():
    b = OpTraceBuilder()
    b.op("aten::mm", 0, 10)
    r = op_table(b.load())
    assert r.table.num_rows == 1 and r.to_pandas().input_dims.isna().all()
    assert any("record_shapes" in n for n in r.notes)


def test_real_trace_gpu_time_of_all_groups_matches_top_level_ops(traces_dir):
    """Every kernel inside some operator is counted once per enclosing operator, so the
    outermost operators' GPU time adds up to the time of kernels launched inside operators."""
    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    t = op_table(trace).to_pandas()
    # a call inside a call of its own name and shapes is part of it (test_op_table_self_nesting)
    ops = op_instance_rows(trace, None, None)
    assert t["count"].sum() == len(ops) - int((_same_call(trace, ops) >= 0).sum())
    assert len(ops) == int((trace.column("events", "kind") == 1).sum())
    mm = t[t.name == "aten::mm"]
    assert len(mm) > 1 and mm.input_dims.notna().all()
    assert (mm.gpu_time_min <= mm.gpu_time_median).all()
    assert (mm.gpu_time_median <= mm.gpu_time_max).all()
