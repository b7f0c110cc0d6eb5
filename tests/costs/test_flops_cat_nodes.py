"""cat on older traces, whose list of tensors is recorded as []: output sizes read from the
calls' CatBackward0 nodes (tied by sequence number); hand-computed on a synthetic trace and
checked on the real ones."""

from __future__ import annotations

import hta_fast
from hta_fast.analysis.ops.op_table import op_instance_rows, op_table
from hta_fast.analysis.ops.roofline import roofline
from hta_fast.costs.cat_sizes import cat_extras
from tests.support.kineto_builder import CPU_PID, CPU_TID
from tests.support.op_traces import OpTraceBuilder

LIST = [[], []]
LIST_TYPES = ["TensorList", "Scalar"]


def cat(b: OpTraceBuilder, ts: float, seq: int | None, kernel_us: float = 8.0) -> None:
    args = {"External id": b._ext(), "Input Dims": LIST, "Input type": LIST_TYPES}
    if seq is not None:
        args["Sequence number"] = seq
    b._x("cpu_op", "aten::cat", ts, 20.0, CPU_PID, CPU_TID, args)
    b.kernel("CatArrayBatchedCopy", ts + 2, ts + 100, kernel_us, launch_dur=5.0)


def node(b: OpTraceBuilder, ts: float, seq: int, shape: list, dtype: str) -> None:
    b._x(
        "cpu_op",
        "CatBackward0",
        ts,
        5.0,
        CPU_PID,
        CPU_TID,
        {
            "External id": b._ext(),
            "Input Dims": [shape],
            "Input type": [dtype],
            "Sequence number": seq,
        },
    )


def four_cats(with_nodes: bool = True) -> hta_fast.Trace:
    b = OpTraceBuilder()
    cat(b, 0, 10)  # tied: [64, 96] float
    cat(b, 200, 11)  # tied: [32, 96] half
    cat(b, 400, 12)  # 12 is shared by two calls (the first created no
    cat(b, 600, 12)  #   node): neither is tied
    cat(b, 800, None)  # no sequence number
    if with_nodes:
        node(b, 5000, 10, [64, 96], "float")
        node(b, 5100, 11, [32, 96], "c10::Half")
        node(b, 5200, 12, [1000, 1000], "float")
    return b.load()


def test_tied_calls_give_their_group_the_mean_output_size():
    t = four_cats()
    ex = cat_extras(t, op_instance_rows(t, None, None))
    ((key, extra),) = ex.items()
    assert key[1:] == ("aten::cat", "[[], []]", '["TensorList", "Scalar"]', None)
    assert extra == {"out_bytes": (64 * 96 * 4 + 32 * 96 * 2) / 2, "tied": 2, "calls": 5}
    res = op_table(t, costs=True)
    assert any("CatBackward0 nodes of 2 of 5 calls" in n for n in res.notes)
    r = res.to_pandas().set_index("name").loc["aten::cat"]
    # read once and written once: 2 x the output
    assert r.family == "copy" and r.bytes == 64 * 96 * 4 + 32 * 96 * 2
    assert r.total_bytes == 5 * r.bytes
    rf = roofline(t).to_pandas().set_index("name").loc["aten::cat"]
    assert rf.calls == 5 and rf.bytes == r.bytes  # per call, as in the op table


def test_without_nodes_the_reason_says_so():
    r = op_table(four_cats(with_nodes=False), costs=True).to_pandas().set_index("name")
    reason = r.loc["aten::cat", "no_model"]
    assert "writes [] for a list of tensors" in reason and "no CatBackward0" in reason


def test_real_traces_tie_their_cats(traces_dir):
    expected = {
        "hta/trace_diff/control/control.json.gz": (78, 108),
        "hta/trace_diff/test/test.json.gz": (18, 30),
        # 11 calls, as the json module counts them: before the raw JSON of an argument lost
        # the whitespace after it, the 4 whose Input type ended their args read apart
        "param_dlrm_8rank/worker0.pt.trace.json.gz": (4, 11),
    }
    for rel, (tied, calls) in expected.items():
        t = hta_fast.load(traces_dir / rel)
        (extra,) = cat_extras(t, op_instance_rows(t, None, None)).values()
        assert (extra["tied"], extra["calls"]) == (tied, calls), rel
        df = op_table(t, costs=True).to_pandas()
        c = df[(df.name == "aten::cat") & (df.family == "copy")]
        assert len(c) == 1 and c.bytes.iloc[0] == 2 * extra["out_bytes"]
