"""Stragglers, trace diff, CUPTI counters and the memory timeline on synthetic traces whose
answers are known by construction, plus a few real traces."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pytest

import hta_fast
from hta_fast.analysis.cupti_counters import cupti_counters
from hta_fast.analysis.memory_timeline import COLUMNS, memory_timeline
from hta_fast.analysis.stragglers import stragglers
from hta_fast.analysis.trace_diff import ops_diff, short_name, trace_diff
from hta_fast.traceset import TraceSet


# --- a small trace builder --------------------------------------------------------------
class TB:
    """Events in µs, Kineto style. GPU events get stream/correlation args and a launch."""

    def __init__(self, rank: int = 0):
        self.rank = rank
        self.events: list[dict] = []
        self.corr = 100

    def cpu(self, name, ts, dur, cat="cpu_op", tid=1, **args):
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )
        return self

    def step(self, n, ts, dur):
        return self.cpu(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")

    def kernel(self, name, launch_ts, ts, dur, stream=7, cat="kernel", launch="cudaLaunchKernel"):
        self.corr += 1
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": launch,
                "pid": 1,
                "tid": 1,
                "ts": launch_ts,
                "dur": 1,
                "args": {"correlation": self.corr},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": ts,
                "dur": dur,
                "args": {"stream": stream, "correlation": self.corr, "device": 0},
            }
        )
        return self

    def doc(self) -> dict:
        return {"distributedInfo": {"rank": self.rank}, "traceEvents": self.events}

    def bytes(self) -> bytes:
        return json.dumps(self.doc()).encode()

    def load(self):
        return hta_fast.load(self.bytes(), rank=self.rank)


NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def dist_traces(
    lateness: dict[int, list[int]], *, steps=(0, 1), name=NCCL, stream=7, extra=None
) -> TraceSet:
    """One trace per rank: in each step, one compute kernel and one collective that starts
    `lateness[rank][i]` µs after 500 and ends at 900 (so late starters run shorter)."""
    out = {}
    for rank, late in lateness.items():
        tb = TB(rank)
        for i, n in enumerate(steps):
            base = 1000 * i
            tb.step(n, base, 1000)
            tb.kernel("gemm", base + 10, base + 20, 400, stream=stream + 1)
            start = base + 500 + late[i]
            tb.kernel(name, base + 30, start, base + 900 - start, stream=stream)
        if extra:
            extra(tb)
        out[rank] = tb.load()
    return TraceSet(out)


# --- stragglers ---------------------------------------------------------------------------
def test_stragglers_late_rank_found_in_every_step_including_step_0():
    ts = dist_traces({0: [0, 0], 1: [50, 10], 2: [200, 150], 3: [5, 100]})
    r = stragglers(ts, num_candidates=1)
    assert r.params["stragglers"] == [2]
    df = r.to_pandas()
    assert df["rank"].tolist()[0] == 2
    assert df.loc[df["rank"] == 2, "straggler_steps"].item() == 2  # steps 0 and 1
    per = r.to_pandas("per_step")
    assert sorted(per["step"].unique()) == [0, 1]
    # start_delay: after the earliest rank of the same step (µs -> ns).
    row = per[(per["rank"] == 2) & (per["step"] == 1)]
    assert row["start_delay"].item() == 150_000
    # metric = (ts - first start) / mean step time; first start 0, two steps over 2000 µs.
    assert row["normalized_start_time"].item() == pytest.approx((1650 * 1000) / 1_000_000)
    assert r.params["kernel"] == NCCL  # ncclDevKernel names are communication too


def test_stragglers_two_candidates_rank_by_count_then_lateness():
    ts = dist_traces({0: [0, 0], 1: [100, 100], 2: [200, 150], 3: [5, 5]})
    r = stragglers(ts, num_candidates=2)
    assert r.params["stragglers"] == [2, 1]
    df = r.to_pandas()
    assert df["is_straggler"].tolist() == [True, True, False, False]
    assert df["rank"].tolist()[:2] == [2, 1]


def test_stragglers_take_the_latest_kernel_of_a_step_not_the_last_in_file_order():
    def add_early_copy(tb):
        # A second long collective on the same stream in step 1, written after the real
        # one but starting earlier; on rank 1 it would make it look early.
        tb.kernel(NCCL, 1040, 1100, 300)

    ts = dist_traces({0: [0, 0], 1: [300, 300], 2: [0, 0]}, extra=add_early_copy)
    r = stragglers(ts, num_candidates=1)
    per = r.to_pandas("per_step")
    row = per[(per["rank"] == 1) & (per["step"] == 1)]
    assert row["ts"].item() == 1800 * 1000
    assert r.params["stragglers"] == [1]


def test_stragglers_probe_is_the_kernel_whose_duration_varies_most():
    def add_steady(tb):
        # Another collective on stream 3 that every rank runs for the same time.
        tb.kernel("ncclKernel_Broadcast", 1050, 1100, 300, stream=3)
        tb.kernel("ncclKernel_Broadcast", 60, 100, 300, stream=3)

    ts = dist_traces({0: [0, 0], 1: [300, 300], 2: [0, 0]}, extra=add_steady)
    r = stragglers(ts, num_candidates=1)
    k = r.to_pandas("kernels")
    assert set(k["stream"]) == {3, 7}
    assert k.loc[k["chosen"], "stream"].item() == 7
    assert k.loc[k["stream"] == 3, "duration_std"].item() == 0.0
    assert r.params["stream"] == 7


def test_stragglers_step_selection_and_amd_stream_0():
    ts = dist_traces({0: [0, 300], 1: [300, 0], 2: [0, 0]}, stream=0)
    assert stragglers(ts, num_candidates=1, steps=[0]).params["stragglers"] == [1]
    assert stragglers(ts, num_candidates=1, steps=[1]).params["stragglers"] == [0]


def test_stragglers_short_and_zero_length_collectives_are_ignored():
    def add_tiny(tb):
        tb.kernel("ncclKernel_tiny", 1040, 1100 + 50 * tb.rank, 0, stream=4)

    ts = dist_traces({0: [0, 0], 1: [300, 300], 2: [0, 0]}, extra=add_tiny)
    k = stragglers(ts).to_pandas("kernels")
    assert "ncclKernel_tiny" not in set(k["name"])


def test_stragglers_one_rank_or_no_gpu_gives_an_empty_result_with_a_note():
    one = dist_traces({0: [0, 0]})
    r = stragglers(one)
    assert len(r) == 0 and any("one rank" in n for n in r.notes)
    cpu = TraceSet({i: TB(i).step(1, 0, 100).cpu("aten::add", 10, 5).load() for i in range(2)})
    r = stragglers(cpu)
    assert len(r) == 0 and any("communication" in n for n in r.notes)
    assert r.params.get("stragglers") is None


def test_stragglers_on_param_dlrm(traces_dir):
    ts = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    r = stragglers(ts)
    assert sorted(r.params["stragglers"]) == [2, 7]
    assert r.table.column_names[0] == "rank"
    assert r.table.schema.field("start_delay").metadata == {b"unit": b"ns"}


# --- trace diff ---------------------------------------------------------------------------
def diff_pair():
    c = TB(0).step(5, 0, 1000).step(6, 1000, 1000)
    c.cpu("aten::mm", 10, 100).cpu("aten::mm", 200, 50).cpu("aten::relu", 300, 10)
    c.cpu("aten::gone", 400, 7)
    c.kernel("void gemm<float, 4>(int, float)", 12, 20, 30, stream=7)
    c.kernel("void gemm<float, 4>(int, float)", 13, 60, 30, stream=8)  # overlaps, other stream
    c.kernel("void gemm<float, 4>(int, float)", 990, 1005, 40)  # spans into step 6: step 5
    c.cpu("aten::mm", 1100, 999)  # step 6: not compared by default
    t = TB(1).step(7, 0, 1000)
    t.cpu("aten::mm", 10, 100).cpu("aten::relu", 300, 10).cpu("aten::relu", 320, 10)
    t.cpu("aten::new", 500, 3)
    t.kernel("void gemm<float, 4>(int, float)", 12, 20, 0)  # zero length still counts
    return c.load(), t.load()


def test_trace_diff_counts_durations_and_categories():
    c, t = diff_pair()
    r = trace_diff(c, t)
    df = r.to_pandas().set_index("name")
    assert r.params["control_steps"] == [5] and r.params["test_steps"] == [7]
    assert df.loc["aten::mm", ["control_counts", "test_counts"]].tolist() == [2, 1]
    assert df.loc["aten::mm", "control_duration"] == 150_000
    assert df.loc["aten::mm", "diff_duration"] == 100_000 - 150_000
    k = "void gemm<float, 4>(int, float)"
    assert df.loc[k, ["control_counts", "test_counts", "control_duration"]].tolist() == [
        3,
        1,
        100_000,
    ]
    assert df.loc["cudaLaunchKernel", "control_counts"] == 3
    cats = df["counts_change_categories"].to_dict()
    assert cats["aten::mm"] == "decreased" and cats["aten::relu"] == "increased"
    assert cats["aten::gone"] == "deleted" and cats["aten::new"] == "added"
    assert cats["ProfilerStep#5"] == "deleted" and cats["ProfilerStep#7"] == "added"
    assert list(df.index) == sorted(df.index)
    assert r.table.schema.field("control_duration").metadata == {b"unit": b"ns"}
    od = ops_diff(c, t)
    assert od["added"] == ["ProfilerStep#7", "aten::new"]
    assert "aten::relu" in od["increased"] and "aten::mm" in od["decreased"]


def test_trace_diff_steps_devices_and_short_names():
    c, t = diff_pair()
    r = trace_diff(c, t, control_steps=[5, 6]).to_pandas().set_index("name")
    assert r.loc["aten::mm", "control_counts"] == 3
    g = trace_diff(c, t, device="gpu").to_pandas()
    assert g["name"].tolist() == ["void gemm<float, 4>(int, float)"]
    cpu = trace_diff(c, t, device="cpu").to_pandas()
    assert "void gemm<float, 4>(int, float)" not in set(cpu["name"])
    s = trace_diff(c, t, use_short_name=True)
    assert s.table.column_names[0] == "short_name"
    assert "gemm" in s.table.column(0).to_pylist()
    with pytest.raises(ValueError):
        trace_diff(c, t, device="tpu")
    with pytest.raises(ValueError):
        trace_diff(c, t, control_rank=9)


def test_trace_diff_without_gpu_and_without_steps():
    c = TB(0).step(1, 0, 100).cpu("aten::add", 10, 5)
    t = TB(0).step(1, 0, 100).cpu("aten::add", 10, 6).cpu("aten::add", 20, 6)
    df = trace_diff(c.load(), t.load()).to_pandas().set_index("name")
    assert df.loc["aten::add"].tolist()[:4] == [1, 5000, 2, 12000]
    with pytest.raises(ValueError, match="no profiler steps"):
        trace_diff(TB(0).cpu("a", 0, 1).load(), t.load())


@pytest.mark.parametrize(
    "name, short",
    [
        ("void at::native::foo<float, 4>(int, float)", "at::native::foo"),
        ("aten::add", "aten::add"),
        ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
        ("ncclKernel_AllReduce(ncclDevComm*, unsigned long)", "ncclKernel_AllReduce"),
        ("void a<b<c>, (d)>::k<e>(f(g))", "a::k"),
    ],
)
def test_short_name(name, short):
    assert short_name(name) == short


# --- CUPTI counters ----------------------------------------------------------------------
def cupti_trace(n_ranges=3):
    tb = TB(0)
    tb.cpu("aten::conv2d", 0, 100).cpu("aten::cudnn_convolution", 10, 50)
    ev = tb.events
    ev.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 20,
            "dur": 5,
            "args": {"correlation": 1},
        }
    )
    ev.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 150,
            "dur": 5,
            "args": {"correlation": 2},
        }
    )  # no op above
    tb.cpu("aten::relu", 200, 20)
    ev.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cuLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 205,
            "dur": 5,
            "args": {"correlation": 3},
        }
    )
    ev.append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemcpyAsync",
            "pid": 1,
            "tid": 1,
            "ts": 210,
            "dur": 5,
            "args": {"correlation": 4},
        }
    )
    for i in range(n_ranges):  # written out of order: pairing goes by start time
        j = n_ranges - 1 - i
        ev.append(
            {
                "ph": "X",
                "cat": "cuda_profiler_range",
                "name": f"kernel{j}",
                "pid": 0,
                "tid": 0,
                "ts": 1000 + 100 * j,
                "dur": 90,
                "args": {"flops": 10 * j, "ratio": 0.5 * j},
            }
        )
    return tb


def test_cupti_counters_pair_ranges_with_launches_by_start(tmp_path):
    path = tmp_path / "cupti.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(cupti_trace().doc(), f)
    r = cupti_counters(hta_fast.load(path))
    df = r.to_pandas()
    assert df["name"].tolist() == ["kernel0", "kernel1", "kernel2"]
    assert [list(s) for s in df["op_stack"]] == [
        ["aten::conv2d", "aten::cudnn_convolution"],
        [],
        ["aten::relu"],
    ]
    assert df["top_level_op"].tolist()[0] == "aten::conv2d"
    assert df["bottom_level_op"].tolist()[0] == "aten::cudnn_convolution"
    assert df["top_level_op"].isna().tolist() == [False, True, False]
    assert df["flops"].tolist() == [0, 10, 20]
    assert df["ratio"].tolist() == [0.0, 0.5, 1.0]
    assert df["launch_ts"].tolist() == [20_000, 150_000, 205_000]
    assert r.table.schema.field("flops").type == pa.int64()
    assert r.notes == []


def test_cupti_counters_mismatch_bytes_and_absent(tmp_path):
    path = tmp_path / "cupti.json"
    path.write_text(json.dumps(cupti_trace(n_ranges=2).doc()))
    r = cupti_counters(hta_fast.load(path))
    assert len(r) == 2 and r.to_pandas()["top_level_op"].isna().all()
    assert any("2 counter ranges but 3 kernel launches" in n for n in r.notes)
    r = cupti_counters(cupti_trace().load())  # from bytes: no file to read the args from
    assert len(r) == 3 and "flops" not in r.table.column_names
    assert any("loaded from bytes" in n for n in r.notes)
    r = cupti_counters(TB(0).cpu("aten::add", 0, 1).load())
    assert len(r) == 0 and any("cuda_profiler_range" in n for n in r.notes)


def test_cupti_counters_real_trace(traces_dir):
    r = cupti_counters(hta_fast.load_dir(traces_dir / "hta" / "cupti_profiler"))
    df = r.to_pandas()
    assert len(df) == 77 and r.notes == []
    assert list(df["op_stack"][0]) == ["aten::rand", "aten::uniform_"]
    assert df["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"][1] == 9119334400


# --- memory timeline ---------------------------------------------------------------------
def test_memory_timeline_known_answer(tmp_path):
    raw = [
        [-1, 1, 100, 0],
        [-1, 1, 8, 7],  # before profiling: at the first timestamp
        [50, 2, 30, 4],
        [50, 2, 5, 3],
        [70, 3, -30, 4],
        [70, 3, 30, 5],  # category change activation -> gradient
        [90, 4, -5, 3],
        [90, 4, -30, 5],
    ]
    path = tmp_path / "m.raw.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(raw, f)
    r = memory_timeline(path)
    df = r.to_pandas()
    assert df["time"].tolist() == [50, 70, 90]
    assert df["parameter"].tolist() == [100, 100, 100]
    assert df["activation"].tolist() == [30, 0, 0]
    assert df["gradient"].tolist() == [0, 30, 0]
    assert df["temporary"].tolist() == [5, 5, 0]
    assert df["unknown"].tolist() == [8, 8, 8]
    assert df["total"].tolist() == [143, 143, 108]
    assert r.params["peak_time"] == 50
    s = r.to_pandas("summary").set_index("category")
    assert s.loc["activation", "peak"] == 30 and s.loc["total", "final"] == 108
    assert list(r.table.column_names) == ["time", *COLUMNS, "total"]
    assert memory_timeline(json.dumps(raw).encode()).table.equals(r.table)


def test_memory_timeline_rejects_a_chrome_trace():
    with pytest.raises(ValueError, match="raw memory timeline"):
        memory_timeline(TB(0).bytes())
    with pytest.raises(ValueError):
        memory_timeline(b"[[1, 2, 3]]")
    assert len(memory_timeline(b"[]")) == 0


def test_memory_timeline_real(traces_dir):
    r = memory_timeline(traces_dir / "hta" / "memory_analysis" / "memory_timeline.raw.gz")
    t = r.table.column("time").to_numpy()
    assert len(t) == 7720 and np.all(np.diff(t) > 0)
    assert r.to_pandas("summary").set_index("category").loc["total", "peak"] == 3082832104


def test_trace_diff_gpu_annotations_take_the_step_of_their_cpu_annotation():
    def side():
        tb = TB(0).step(5, 0, 1000).step(6, 1000, 1000)
        tb.cpu("## forward ##", 100, 800, cat="user_annotation", **{"External id": 42})
        tb.cpu("## forward ##", 1100, 800, cat="user_annotation", **{"External id": 43})
        # The GPU copy of step 5's annotation runs late, inside step 6's CPU window.
        for ext, ts in ((42, 1200), (43, 1950)):
            tb.events.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": "## forward ##",
                    "pid": 0,
                    "tid": 7,
                    "ts": ts,
                    "dur": 300,
                    "args": {"External id": ext},
                }
            )
        return tb.load()

    c = side()
    g = trace_diff(c, side(), device="gpu").to_pandas().set_index("name")
    assert g.loc["## forward ##", "control_counts"] == 1
    assert g.loc["## forward ##", "control_duration"] == 300_000
    both = trace_diff(c, side(), control_steps=[6], test_steps=[6]).to_pandas().set_index("name")
    assert both.loc["## forward ##", "control_counts"] == 2  # step 6: CPU + GPU copy
    cpu = trace_diff(c, side(), device="cpu").to_pandas().set_index("name")
    assert cpu.loc["## forward ##", "control_counts"] == 1


def test_trace_diff_amd_kernels_on_stream_0_count_in_their_launch_step():
    def side(n):
        tb = TB(0).step(1, 0, 1000)
        for i in range(n):
            tb.kernel(
                "Cijk_Ailk_Bljk_SB", 10 + i, 20 + 10 * i, 5, stream=0, launch="hipLaunchKernel"
            )
        return tb.load()

    df = trace_diff(side(1), side(3), device="gpu").to_pandas().set_index("name")
    assert df.loc["Cijk_Ailk_Bljk_SB", ["control_counts", "test_counts"]].tolist() == [1, 3]
    assert df.loc["Cijk_Ailk_Bljk_SB", "counts_change_categories"] == "increased"
