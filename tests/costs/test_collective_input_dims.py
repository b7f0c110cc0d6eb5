"""Collective sizes read from the CPU op that launched the kernel (its Input Dims and Input
type) when no collective arguments were recorded, and gloo's CPU-side collectives."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast.analysis.collectives import collectives
from hta_fast.costs.collectives import input_dims_size
from hta_fast.loading.summary import rank_summary
from tests.support.kineto_builder import CPU_PID, traceset
from tests.support.op_traces import OpTraceBuilder

KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _launched(b: OpTraceBuilder, t0: float, dims, types, kernel=KERNEL, annotation=None) -> None:
    """record_param_comms (no arguments) around an optional nccl:* annotation holding the
    shapes, around the launch of a communication kernel with no arguments."""
    if annotation is None:
        b.op("record_param_comms", t0, 50, dims, types)
    else:
        b.op("record_param_comms", t0, 50)
        b.op(annotation, t0 + 5, 40, dims, types)
    b.kernel(kernel, t0 + 10, t0 + 100, 20.0, stream=20)


def test_size_from_the_launching_ops_input_dims():
    b = OpTraceBuilder()
    _launched(b, 0, [[1024]], ["Float"])
    t = rank_summary(b.load()).collectives
    assert t["bytes"].to_pylist() == [4096]  # 1024 floats
    assert t["size_from"].to_pylist() == ["input_dims"] and t["dtype"].to_pylist() == ["float"]
    res = collectives(b.load())
    assert res.table["bytes"].to_pylist() == [4096]
    assert res.table["algbw_gbps"].to_pylist() == [pytest.approx(4096 / 20_000)]
    assert any(n.startswith("1 collective size(s) read from the Input Dims") for n in res.notes)
    assert not any("have no size" in n for n in res.notes)


def test_the_annotation_names_the_collective_and_its_dtype():
    # a SendRecv kernel of int8_t under nccl:all_to_all of 6144 floats: an all-to-all of 24 KB
    b = OpTraceBuilder()
    sendrecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
    _launched(b, 0, [[6144]], ["float"], kernel=sendrecv, annotation="nccl:all_to_all")
    row = rank_summary(b.load()).collectives.to_pylist()[0]
    assert (row["collective"], row["bytes"], row["dtype"]) == ("all_to_all", 24576, "float")


def test_no_shape_no_size_and_arguments_come_first():
    b = OpTraceBuilder()
    _launched(b, 0, [[], []], ["TensorList", "Scalar"])  # what record_param_comms records
    b.nccl("allreduce", 1000, 1100, 10.0, nelems=10)  # its own arguments: 40 bytes
    t = rank_summary(b.load()).collectives
    assert t["bytes"].to_pylist() == [None, 40]
    assert t["size_from"].to_pylist() == [None, "arguments"]
    assert any("1 collective(s) have no size" in n for n in collectives(b.load()).notes)


def test_input_dims_size():
    assert input_dims_size("[[1024]]", '["Float"]') == (1024, "Float")
    assert input_dims_size("[[2, 3], [4]]", '["c10::Half", "Half"]') == (10, "c10::Half")
    assert input_dims_size("[[2], [4]]", '["float", "double"]') is None  # mixed dtypes
    assert input_dims_size("[[], []]", '["TensorList", "Scalar"]') is None
    assert input_dims_size("not json", '["float"]') is None


def test_an_all_gather_sized_from_its_input_counts_the_gathered_output():
    builders = []
    for r in range(2):
        b = OpTraceBuilder(rank=r, world_size=2)
        _launched(b, 0, [[8192, 64]], ["float"], kernel=GATHER, annotation="nccl:_all_gather_base")
        builders.append(b)
    res = collectives(traceset(builders))
    assert res.table["collective"].to_pylist() == ["all_gather"]
    assert res.table["bytes"].to_pylist() == [8192 * 64 * 4 * 2]
    assert any("1 all-gather(s)" in n for n in res.notes)


def _gloo(b: OpTraceBuilder, ts: float, dur: float, tid: int, nelems: int) -> None:
    b._x(
        "user_annotation",
        "gloo:all_reduce",
        ts,
        dur,
        CPU_PID,
        tid,
        {"External id": b._ext(), "Input Dims": [[nelems]], "Input type": ["float"]},
    )


def test_gloo_collectives_are_cpu_side_collectives():
    builders = []
    for r, durs in enumerate([(100, 300), (150, 250)]):
        b = OpTraceBuilder(rank=r, world_size=2)
        b.step(1, 0, 2000)
        _gloo(b, 10, durs[0], 77, 1000)  # one worker thread...
        _gloo(b, 20, durs[1], 78, 10)  # ...and another, running at the same time
        _gloo(b, 500, 50, 77, 1000)
        builders.append(b)
    ts = traceset(builders)
    s = rank_summary(ts[0])
    assert s.collectives.num_rows == 0 and s.cpu_collectives.num_rows == 3
    assert s.cpu_collectives["group"].to_pylist() == ["gloo thread 0", "gloo thread 1"] + [
        "gloo thread 0"
    ]
    res = collectives(ts)
    t = res.table.to_pylist()
    assert [(r["group"], r["index"], r["side"]) for r in t] == [
        ("gloo thread 0", 0, "cpu"),
        ("gloo thread 1", 0, "cpu"),
        ("gloo thread 0", 1, "cpu"),
    ]
    # the CPU event's duration is the collective's: shortest across the ranks moves data
    assert [r["data_time"] for r in t] == [100_000, 250_000, 50_000]
    assert [r["max_dur"] for r in t] == [150_000, 300_000, 50_000]
    assert [r["bytes"] for r in t] == [4000, 40, 4000]
    assert t[0]["busbw_gbps"] == pytest.approx(4000 / 100_000 * 2 * 1 / 2)
    assert any("3 collective(s) ran on the CPU (gloo)" in n for n in res.notes)


def test_record_param_comms_of_a_cpu_only_group():
    b = OpTraceBuilder()
    b._x(
        "cpu_op",
        "record_param_comms",
        0,
        30,
        CPU_PID,
        CPU_PID,
        {
            "Collective name": "allreduce",
            "In msg nelems": 100,
            "Out msg nelems": 100,
            "dtype": "Float",
            "Group size": 4,
            "Process Group Name": "3",
        },
    )
    s = rank_summary(b.load()).cpu_collectives.to_pylist()
    assert [(r["group"], r["collective"], r["bytes"], r["group_size"]) for r in s] == [
        ("cpu pg 3", "all_reduce", 400, 4)
    ]


REAL = [
    # (folder, collectives, sized, sized from Input Dims, CPU-side)
    ("param_dlrm_8rank", 8, 8, 8, 0),
    ("hta/negative_queue_length_values_check", 80, 75, 75, 0),
    ("hta/df_index_resolver", 2020, 0, 0, 0),  # neither arguments nor shapes
    ("hta/nccl_parser_config", 21, 21, 0, 0),  # collective arguments
    ("hta/ns_resolution_trace", 0, 0, 0, 0),  # NCCL (nccl:* ops) without its kernels
    ("hta/trace_diff/control", 60, 60, 60, 0),
    ("hta/trace_diff/test", 64, 60, 60, 0),  # 4 kernels whose launch is not in the trace
    ("hta/cpu_only", 10, 10, 10, 10),  # gloo:all_reduce on two worker threads
]


@pytest.mark.parametrize("folder,total,sized,from_dims,cpu", REAL)
def test_real_traces(traces_dir, folder, total, sized, from_dims, cpu):
    ts = hta_fast.load_dir(traces_dir / folder)
    t = collectives(ts).table
    got_dims = sum(
        rank_summary(tr).collectives["size_from"].to_pylist().count("input_dims")
        + rank_summary(tr).cpu_collectives["size_from"].to_pylist().count("input_dims")
        for tr in ts.values()
    )
    assert (t.num_rows, t.num_rows - t["bytes"].null_count) == (total, sized)
    assert got_dims == from_dims * len(ts)
    assert t["side"].to_pylist().count("cpu") == cpu


def test_dlrm_sizes(traces_dir):
    # the first all-reduce of rank 0: nccl:all_reduce of [[394241]] floats
    t = rank_summary(hta_fast.load(traces_dir / "param_dlrm_8rank/worker0.pt.trace.json.gz"))
    rows = [r for r in t.collectives.to_pylist() if r["collective"] == "all_reduce"]
    assert rows[0]["bytes"] == 394241 * 4 and rows[0]["dtype"] == "float"
