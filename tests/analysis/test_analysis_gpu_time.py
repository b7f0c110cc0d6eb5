"""GPU-time analyses (temporal, idle time, kernel type breakdown, comm/comp overlap) on
small traces whose answers are known by construction, and invariants on real traces."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.idle_time import idle_time_breakdown
from hta_fast.analysis.kernel_breakdown import kept_names, kernel_breakdown
from hta_fast.analysis.overlap import comm_comp_overlap
from hta_fast.analysis.temporal import temporal_breakdown
from hta_fast.frame.select import Selection

US = 1000  # ns


# --- building traces -------------------------------------------------------------------
class TraceBuilder:
    """Events in integer µs; kernels get a launch on the CPU thread when launch_ts is given."""

    def __init__(self, rank: int = 0):
        self.rank = rank
        self.events: list[dict] = []
        self.corr = 0

    def cpu(self, name, ts, dur, cat="cpu_op", **args):
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def step(self, n, ts, dur):
        self.cpu(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")

    def launch(self, ts, dur=2, name="cudaLaunchKernel"):
        self.corr += 1
        self.cpu(name, ts, dur, cat="cuda_runtime", correlation=self.corr)
        return self.corr

    def gpu(self, name, ts, dur, stream=7, cat="kernel", launch_ts=None, corr=None):
        if corr is None and launch_ts is not None:
            corr = self.launch(launch_ts)
        args = {"device": 0, "stream": stream}
        if corr is not None:
            args["correlation"] = corr
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def load(self):
        doc = {
            "schemaVersion": 1,
            "distributedInfo": {"rank": self.rank, "world_size": 1},
            "traceEvents": self.events,
        }
        return hta_fast.load(json.dumps(doc).encode())


def row(result, **where):
    t = result.table.to_pylist()
    hits = [r for r in t if all(r[k] == v for k, v in where.items())]
    assert len(hits) == 1, (where, t)
    return hits[0]


def mixed_trace():
    """Streams 7, 8, 9: compute [0,10) s7, [5,20) s8, [35,45) s9; NCCL [30,50) s8; memcpy
    [50,60) s7; a zero-length kernel at 70 on s7. Not GPU work: a Stream Sync [60,100) on s7
    and a GPU user annotation [0,200)."""
    b = TraceBuilder()
    b.gpu("gemm", 0, 10, stream=7, launch_ts=0)
    b.gpu("relu", 5, 15, stream=8, launch_ts=1)
    b.gpu("ncclKernel_AllReduce", 30, 20, stream=8, launch_ts=1)
    b.gpu("softmax", 35, 10, stream=9, launch_ts=2)
    b.gpu("Memcpy HtoD (Pinned -> Device)", 50, 10, stream=7, cat="gpu_memcpy", launch_ts=45)
    b.gpu("empty_kernel", 70, 0, stream=7, launch_ts=20)
    b.gpu("Stream Sync", 60, 40, stream=7, cat="cuda_sync")
    b.events.append(
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "fwd",
            "pid": 0,
            "tid": 7,
            "ts": 0,
            "dur": 200,
            "args": {"device": 0},
        }
    )
    return b.load()


# --- temporal --------------------------------------------------------------------------
def test_temporal_known_answer():
    r = row(temporal_breakdown(mixed_trace()), rank=0)
    # span [0, 70]; busy [0,20) + [30,60) = 50; compute [0,20) + [35,45) = 30.
    assert r["kernel_time"] == 70 * US
    assert r["idle_time"] == 20 * US
    assert r["compute_time"] == 30 * US
    assert r["non_compute_time"] == 20 * US
    assert r["idle_time_pctg"] == pytest.approx(100 * 20 / 70)
    assert r["compute_time_pctg"] == pytest.approx(100 * 30 / 70)
    assert r["non_compute_time_pctg"] == pytest.approx(100 * 20 / 70)


def test_temporal_units_in_metadata():
    t = temporal_breakdown(mixed_trace()).table
    assert t.schema.field("idle_time").metadata == {b"unit": b"ns"}
    assert t.schema.field("rank").type == "int64"


def test_temporal_no_gpu():
    b = TraceBuilder(rank=3)
    b.cpu("aten::add", 0, 10)
    res = temporal_breakdown(b.load())
    r = row(res, rank=3)
    assert (r["kernel_time"], r["idle_time"], r["compute_time"]) == (0, 0, 0)
    assert r["idle_time_pctg"] is None
    assert any("no GPU work" in n for n in res.notes)


def test_temporal_window_clips():
    t = mixed_trace()
    base = int(t.column("events", "ts").min())
    # Events starting in [0, 40): gemm, relu, nccl, softmax; nccl clipped to [30, 40).
    r = row(temporal_breakdown(t, window=(base, base + 40 * US)), rank=0)
    assert r["kernel_time"] == 40 * US
    assert r["idle_time"] == 10 * US
    assert r["compute_time"] == 25 * US


def step_trace():
    """Steps 1 [0,100), 2 [100,200), 3 [200,300). A kernel launched in step 1 runs
    [95,130); one launched in step 2 runs [150,160); one launched in step 3 runs [250,260)."""
    b = TraceBuilder()
    for n in (1, 2, 3):
        b.step(n, (n - 1) * 100, 100)
    b.gpu("k1", 95, 35, launch_ts=90)
    b.gpu("k2", 150, 10, launch_ts=140)
    b.gpu("k3", 250, 10, launch_ts=240)
    return b.load()


def test_kernel_spanning_a_step_boundary_stays_in_its_step():
    t = step_trace()
    r = row(temporal_breakdown(t, steps=[1]), rank=0)
    assert r["kernel_time"] == 35 * US and r["compute_time"] == 35 * US
    r = row(temporal_breakdown(t, steps=[2]), rank=0)
    assert r["kernel_time"] == 10 * US


def test_before_last_step_drops_work_launched_in_it():
    r = row(temporal_breakdown(step_trace(), selection=Selection(before_last_step=True)), rank=0)
    # k1 [95,130) and k2 [150,160): span 65, busy 45.
    assert r["kernel_time"] == 65 * US and r["idle_time"] == 20 * US


def test_amd_stream_zero_is_a_stream():
    b = TraceBuilder()
    b.gpu("Cijk_gemm", 0, 10, stream=0, launch_ts=0)
    b.gpu("elementwise", 20, 10, stream=0, launch_ts=1)
    t = b.load()
    r = row(temporal_breakdown(t), rank=0)
    assert r["kernel_time"] == 30 * US and r["idle_time"] == 10 * US
    idle = idle_time_breakdown(t)
    assert row(idle, stream=0, idle_category="kernel_wait")["idle_time"] == 10 * US


# --- idle time -------------------------------------------------------------------------
def test_idle_known_answer():
    res = idle_time_breakdown(mixed_trace())
    # s7: gemm [0,10), memcpy [50,60) launched at 45 > 10: host_wait 40; the zero-length
    # kernel at 70 launched at 20 < 60, 10 µs < 30 µs: kernel_wait 10.
    assert row(res, stream=7, idle_category="host_wait")["idle_time"] == 40 * US
    assert row(res, stream=7, idle_category="kernel_wait")["idle_time"] == 10 * US
    assert row(res, stream=7, idle_category="other")["idle_time"] == 0
    assert row(res, stream=7, idle_category="host_wait")["idle_time_ratio"] == pytest.approx(0.8)
    # s8: relu [5,20), nccl [30,50) launched at 1: kernel_wait 10.
    assert row(res, stream=8, idle_category="kernel_wait")["idle_time"] == 10 * US
    # s9: one kernel, never idle.
    assert row(res, stream=9, idle_category="other")["idle_time_ratio"] is None
    # Streams in order of their first event; the sync event's stream adds nothing.
    assert res.table["stream"].to_pylist()[::3] == [7, 8, 9]


def test_idle_threshold_is_in_ns_and_strict():
    b = TraceBuilder()
    b.gpu("a", 0, 10, launch_ts=0)
    b.gpu("b", 40, 10, launch_ts=1)  # gap 30 µs, launched long before
    t = b.load()
    assert row(idle_time_breakdown(t), idle_category="other")["idle_time"] == 30 * US
    res = idle_time_breakdown(t, consecutive_kernel_delay=30 * US + 1)
    assert row(res, idle_category="kernel_wait")["idle_time"] == 30 * US


def test_idle_gap_runs_from_the_latest_end_not_the_previous_kernel():
    b = TraceBuilder()
    b.gpu("long", 100, 100, launch_ts=0)  # [100, 200)
    b.gpu("inner", 110, 10, launch_ts=1)  # [110, 120): overlaps, no interval
    b.gpu("inner2", 150, 20, launch_ts=2)  # [150, 170): the previous row ended at 120, but
    b.gpu("after", 230, 10, launch_ts=3)  # the stream is busy until 200; gap 200..230
    res = idle_time_breakdown(b.load(), interval_stats=True)
    assert row(res, idle_category="other")["idle_time"] == 30 * US
    assert row(res, idle_category="kernel_wait")["idle_time"] == 0
    assert sum(res.table["intervals"].to_pylist()) == 1
    stats = [r for r in res["interval_stats"].to_pylist() if r["idle_category"] == "other"][0]
    assert stats["count"] == 1 and stats["max"] == 30 * US and stats["std"] is None


def test_idle_touching_kernels_give_zero_length_intervals():
    b = TraceBuilder()
    b.gpu("a", 0, 10, launch_ts=0)
    b.gpu("b", 10, 10, launch_ts=1)
    b.gpu("c", 20, 0, launch_ts=2)
    res = idle_time_breakdown(b.load(), interval_stats=True)
    r = row(res, idle_category="kernel_wait")
    assert r["idle_time"] == 0 and r["intervals"] == 2


def test_idle_gap_after_a_zero_length_kernel_has_its_full_length():
    # the marker at 20 µs covers its instant only: the gap after it is [20, 30) µs, whole
    b = TraceBuilder()
    b.gpu("a", 0, 10, launch_ts=0)
    b.gpu("marker", 20, 0, launch_ts=1)
    b.gpu("b", 30, 10, launch_ts=2)
    res = idle_time_breakdown(b.load())
    r = row(res, idle_category="kernel_wait")
    assert r["idle_time"] == 20 * US and r["intervals"] == 2


def test_idle_graph_launch_kernels_share_a_launch():
    b = TraceBuilder()
    b.gpu("first", 0, 10, launch_ts=0)
    corr = b.launch(50, name="cudaGraphLaunch")
    b.gpu("g1", 60, 10, corr=corr)
    b.gpu("g2", 70, 10, corr=corr)
    res = idle_time_breakdown(b.load())
    # g1: gap 10..60 and its launch began at 50 > 10: host_wait; g2 touches g1.
    assert row(res, idle_category="host_wait")["idle_time"] == 50 * US
    assert row(res, idle_category="kernel_wait")["intervals"] == 1


def test_idle_kernel_without_launch_is_never_host_wait():
    b = TraceBuilder()
    b.gpu("a", 0, 10, launch_ts=0)
    b.gpu("b", 100, 10)  # no correlation
    res = idle_time_breakdown(b.load())
    assert row(res, idle_category="other")["idle_time"] == 90 * US
    assert row(res, idle_category="host_wait")["idle_time"] == 0


def test_idle_stats_known_answer():
    b = TraceBuilder()
    for i, ts in enumerate([0, 12, 26, 44]):  # gaps 2, 4, 8 µs
        b.gpu(f"k{i}", ts, 10, launch_ts=0)
    res = idle_time_breakdown(b.load(), interval_stats=True)
    s = [r for r in res["interval_stats"].to_pylist() if r["idle_category"] == "kernel_wait"][0]
    x = np.array([2, 4, 8]) * US
    assert s["count"] == 3
    assert s["mean"] == pytest.approx(x.mean())
    assert s["std"] == pytest.approx(x.std(ddof=1))
    assert (s["min"], s["p50"], s["max"]) == (2 * US, 4 * US, 8 * US)
    assert s["p25"] == pytest.approx(np.quantile(x, 0.25))


def test_idle_no_gpu():
    b = TraceBuilder()
    b.cpu("aten::add", 0, 10)
    res = idle_time_breakdown(b.load())
    assert res.table.num_rows == 0 and res.notes


# --- kernel type breakdown ---------------------------------------------------------------
def test_kernel_types_known_answer():
    res = kernel_breakdown(mixed_trace())
    got = {r["kernel_type"]: r["time"] for r in res.table.to_pylist()}
    assert got == {
        "COMPUTATION": 20 * US,
        "COMPUTATION overlapping COMMUNICATION": 10 * US,
        "COMMUNICATION": 10 * US,
        "MEMORY": 10 * US,
    }
    assert sum(r["percentage"] for r in res.table.to_pylist()) == pytest.approx(100)
    no_mem = kernel_breakdown(mixed_trace(), include_memory_kernels=False)
    assert "MEMORY" not in no_mem.table["kernel_type"].to_pylist()


def test_kernel_table_statistics_are_of_the_events():
    b = TraceBuilder()
    # 12 compute kernel names; "big" runs 3 times (10, 20, 30 µs), the rest once each.
    for i, d in enumerate([10, 20, 30]):
        b.gpu("big", 100 * i, d, launch_ts=0)
    for i in range(11):
        b.gpu(f"small{i:02d}", 1000 + 10 * i, 1 + i % 3, launch_ts=0)
    res = kernel_breakdown(b.load(), num_kernels=10, duration_ratio=0.8)
    kern = {r["name"]: r for r in res["kernels"].to_pylist()}
    big = kern["big"]
    assert (big["count"], big["sum"], big["max"], big["min"]) == (3, 60 * US, 30 * US, 10 * US)
    assert big["mean"] == pytest.approx(20 * US)
    assert big["stddev"] == pytest.approx(10 * US)
    # Total 60 + 21 = 81 µs; 80% is 64.8: big (60) then small ones of 3 µs until the
    # running sum reaches it: big, small02 (63), small05 (66). The rest is "others".
    assert set(kern) == {"big", "small02", "small05", "others"}
    others = kern["others"]
    durs = np.array([1 + i % 3 for i in range(11) if i not in (2, 5)]) * US
    assert others["count"] == len(durs) and others["sum"] == durs.sum()
    assert others["max"] == durs.max() and others["min"] == durs.min()
    assert others["stddev"] == pytest.approx(durs.std(ddof=1))
    assert sum(r["sum"] for r in kern.values()) == 81 * US


def test_kept_names_rule():
    sums = np.array([50, 30, 10, 5, 5])
    assert kept_names(sums, 0.8, 10).all()  # not more than num_kernels names
    assert kept_names(sums, 0.8, 4).tolist() == [True, True, False, False, False]
    assert kept_names(sums, 0.81, 4).tolist() == [True, True, True, False, False]
    assert kept_names(sums, 1.0, 2).tolist() == [True, True, False, False, False]


def test_kernel_distribution_across_ranks():
    traces = {}
    for rank, d in ((0, 10), (1, 30)):
        b = TraceBuilder(rank)
        b.gpu("gemm", 0, d, launch_ts=0)
        traces[rank] = b.load()
    res = kernel_breakdown(hta_fast.TraceSet(traces))
    dist = res["distribution"].to_pylist()
    assert dist == [
        {
            "kernel_type": "COMPUTATION",
            "name": "gemm",
            "ranks": 2,
            "min": 10 * US,
            "max": 30 * US,
            "mean": 20.0 * US,
        }
    ]


def test_kernel_breakdown_no_gpu():
    b = TraceBuilder()
    b.cpu("aten::add", 0, 10)
    res = kernel_breakdown(b.load())
    assert res.table.num_rows == 0 and res["kernels"].num_rows == 0 and res.notes


def test_parameters_are_checked():
    t = mixed_trace()
    with pytest.raises(ValueError, match="duration_ratio"):
        kernel_breakdown(t, duration_ratio=1.5)
    with pytest.raises(ValueError, match="num_kernels"):
        kernel_breakdown(t, num_kernels=-1)
    with pytest.raises(ValueError, match="consecutive_kernel_delay"):
        idle_time_breakdown(t, consecutive_kernel_delay=-1)
    with pytest.raises(ValueError, match="no such rank"):
        temporal_breakdown(t, ranks=[5])


# --- overlap ---------------------------------------------------------------------------
def test_overlap_known_answer():
    r = row(comm_comp_overlap(mixed_trace()), rank=0)
    assert r["comm_time"] == 20 * US and r["overlap_time"] == 10 * US
    assert r["comp_comm_overlap_pctg"] == pytest.approx(50.0)


def test_overlap_without_communication_is_null():
    b = TraceBuilder()
    b.gpu("gemm", 0, 10, launch_ts=0)
    res = comm_comp_overlap(b.load())
    assert row(res, rank=0)["comp_comm_overlap_pctg"] is None
    assert any("no communication" in n for n in res.notes)


# --- real traces -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def trace_filter(traces_dir):
    return hta_fast.load_dir(traces_dir / "hta" / "trace_filter")


def test_real_trace_invariants(trace_filter):
    sel = Selection(before_last_step=True)
    temp = temporal_breakdown(trace_filter, selection=sel).table.to_pylist()
    types = kernel_breakdown(trace_filter, selection=sel)
    over = comm_comp_overlap(trace_filter, selection=sel).table.to_pylist()
    idle = idle_time_breakdown(trace_filter, selection=sel).table.to_pylist()
    assert [r["rank"] for r in temp] == [0, 1]
    for r, o in zip(temp, over):
        assert r["idle_time"] + r["compute_time"] + r["non_compute_time"] == r["kernel_time"]
        assert r["idle_time_pctg"] + r["compute_time_pctg"] + r[
            "non_compute_time_pctg"
        ] == pytest.approx(100)
        busy = r["kernel_time"] - r["idle_time"]
        by_type = sum(x["time"] for x in types.table.to_pylist() if x["rank"] == r["rank"])
        assert by_type == busy  # every GPU work event here is COMP, COMM or MEM
        assert 0 <= o["comp_comm_overlap_pctg"] <= 100
        # Each stream's idle time never exceeds the rank's span.
        for x in idle:
            if x["rank"] == r["rank"]:
                assert 0 <= x["idle_time"] <= r["kernel_time"]
    kern = types["kernels"].to_pylist()
    for k in kern:
        assert k["min"] <= k["mean"] <= k["max"] <= k["sum"]
