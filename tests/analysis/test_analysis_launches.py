"""Known-answer tests for launch statistics, operator kernels, frequent kernel sequences,
user annotations and profiler steps, on small traces built here (times in µs in the JSON,
ns in the results)."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np

import hta_fast
from hta_fast.analysis.annotations import kernels_with_user_annotations, user_annotation_breakdown
from hta_fast.analysis.kernel_sequences import kernel_sequences
from hta_fast.analysis.launch_stats import launch_stats
from hta_fast.analysis.ops.op_kernels import op_kernels
from hta_fast.analysis.steps import profiler_steps
from hta_fast.compat import launches as compat
from hta_fast.frame.select import Selection
from hta_fast.traceset import TraceSet


def X(name, ts, dur, cat="cpu_op", pid=1, tid=1, **args):
    return dict(ph="X", cat=cat, name=name, pid=pid, tid=tid, ts=ts, dur=dur, args=args)


def launch(name, ts, dur, corr, cat="cuda_runtime", tid=1):
    return X(name, ts, dur, cat=cat, tid=tid, correlation=corr)


def kernel(name, ts, dur, corr, stream=7, cat="kernel"):
    return X(name, ts, dur, cat=cat, pid=0, tid=stream, correlation=corr, stream=stream, device=0)


def gpu_ann(name, ts, dur, stream=7):
    return X(name, ts, dur, cat="gpu_user_annotation", pid=0, tid=stream)


def load(events, path=None):
    data = json.dumps({"traceEvents": events}).encode()
    if path is None:
        return hta_fast.load(data)
    path.write_bytes(data)
    return hta_fast.load(str(path))


class FakeAnalysis:
    """What the compat functions read from a TraceAnalysis."""

    def __init__(self, traces, include_last_profiler_step=False):
        self.traces = traces if isinstance(traces, TraceSet) else TraceSet({traces.rank: traces})
        self.selection = Selection(before_last_step=not include_last_profiler_step)


def steps_around(events, n_steps=3, start=0, length=1000, first=1):
    """events inside ProfilerStep#first.. windows of `length` µs each."""
    steps = [
        X(f"ProfilerStep#{first + i}", start + i * length, length - 1, cat="user_annotation")
        for i in range(n_steps)
    ]
    return steps + events


# --- launch statistics -----------------------------------------------------------------

LAUNCHES = [
    launch("cudaLaunchKernel", 100, 10, 1),
    kernel("k_runtime", 130, 5, 1),
    launch("cuLaunchKernel", 200, 10, 2, cat="cuda_driver"),
    kernel("k_driver", 205, 5, 2),
    launch("cudaGraphLaunch", 300, 20, 3),
    kernel("g1", 400, 5, 3),
    kernel("g2", 410, 6, 3),
    launch("cudaMemcpyAsync", 500, 4, 4),
    kernel("Memcpy HtoD", 510, 3, 4, cat="gpu_memcpy"),
    launch("cudaLaunchKernel", 600, 80, 5),
    kernel("k_slow_call", 900, 5, 5),
]


def test_launch_stats_every_launch_api_known_answers():
    r = launch_stats(load(LAUNCHES))
    t = r.table.to_pydict()
    assert t["launch_name"] == [
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "cudaGraphLaunch",
        "cudaGraphLaunch",
        "cudaMemcpyAsync",
        "cudaLaunchKernel",
    ]
    assert t["gpu_name"] == ["k_runtime", "k_driver", "g1", "g2", "Memcpy HtoD", "k_slow_call"]
    assert t["correlation"] == [1, 2, 3, 3, 4, 5]
    assert t["cpu_duration"] == [10_000, 10_000, 20_000, 20_000, 4_000, 80_000]
    assert t["gpu_duration"] == [5_000, 5_000, 5_000, 6_000, 3_000, 5_000]
    # 130 - 110; kernel started before the call returned -> 0; graph: 400-320, 410-320
    assert t["launch_delay"] == [20_000, 0, 80_000, 90_000, 6_000, 220_000]
    assert r.table.schema.field("launch_delay").metadata == {b"unit": b"ns"}


def test_launch_stats_cutoffs_and_memory_events():
    r = launch_stats(load(LAUNCHES), runtime_cutoff=50_000, launch_delay_cutoff=85_000)
    assert r["long_runtime"].column("correlation").to_pylist() == [5]
    assert r["long_delay"].column("gpu_name").to_pylist() == ["g2", "k_slow_call"]
    no_mem = launch_stats(load(LAUNCHES), include_memory_events=False)
    assert 4 not in no_mem.table.column("correlation").to_pylist()
    assert no_mem.table.num_rows == 5


def test_launch_stats_amd_stream_zero():
    events = [
        launch("hipLaunchKernel", 10, 5, 11),
        kernel("Cijk_gemm", 20, 7, 11, stream=0),
        launch("hipExtModuleLaunchKernel", 40, 5, 12),
        kernel("hip_fused", 41, 7, 12, stream=0),
    ]
    t = launch_stats(load(events)).table.to_pydict()
    assert t["launch_name"] == ["hipLaunchKernel", "hipExtModuleLaunchKernel"]
    assert t["stream"] == [0, 0]
    assert t["launch_delay"] == [5_000, 0]


def test_launch_stats_no_gpu_and_last_step():
    r = launch_stats(load([X("aten::add", 0, 10), X("aten::mul", 20, 5)]))
    assert r.table.num_rows == 0 and r.notes
    # three steps; the launch in the last one (and its kernel) is left out by the default view
    events = steps_around(
        [
            launch("cudaLaunchKernel", 100, 5, 1),
            kernel("a", 200, 5, 1),
            launch("cudaLaunchKernel", 2100, 5, 2),
            kernel("b", 2990, 50, 2),
        ]
    )
    t = load(events)
    assert launch_stats(t).table.num_rows == 2
    kept = launch_stats(t, selection=Selection(before_last_step=True))
    assert kept.table.column("gpu_name").to_pylist() == ["a"]
    assert launch_stats(t, steps=[3]).table.column("gpu_name").to_pylist() == ["b"]


def test_compat_launch_stats_microseconds():
    out = compat.get_cuda_kernel_launch_stats(FakeAnalysis(load(LAUNCHES)))
    df = out[0]
    assert list(df.columns) == ["correlation", "cpu_duration", "gpu_duration", "launch_delay"]
    assert df["launch_delay"].tolist() == [20.0, 0.0, 80.0, 90.0, 6.0, 220.0]
    assert df["cpu_duration"].dtype == np.float64


# --- operator -> kernels ---------------------------------------------------------------


def op_events():
    ev = []
    # two aten::linear -> aten::addmm (same start) instances, one launch each
    for i, base in enumerate((0, 1000)):
        ev += [
            X("aten::linear", base, 100),
            X("aten::addmm", base, 90),
            launch("cudaLaunchKernel", base + 10, 5, 10 + i),
            kernel("gemm", base + 40, 20, 10 + i),
        ]
    # an op with two launches: kernel sequence in launch order, delays of the first launch
    ev += [
        X("aten::cat", 2000, 100),
        launch("cudaLaunchKernel", 2030, 5, 20),
        kernel("cat_a", 2100, 5, 20),
        launch("cuLaunchKernel", 2050, 5, 21, cat="cuda_driver"),
        kernel("cat_b", 2060, 5, 21),
    ]
    # a graph launch inside an op
    ev += [
        X("aten::graph_op", 3000, 100),
        launch("cudaGraphLaunch", 3010, 5, 30),
        kernel("n1", 3020, 5, 30),
        kernel("n2", 3030, 5, 30),
    ]
    # a launch on another thread, inside aten::other's time span but not its thread
    ev += [
        X("aten::other", 4000, 100),
        launch("cudaLaunchKernel", 4010, 5, 40, tid=2),
        kernel("orphan", 4020, 5, 40),
    ]
    # memcpy launches are not kernels
    ev += [
        X("aten::copy_", 5000, 100),
        launch("cudaMemcpyAsync", 5010, 5, 50),
        kernel("Memcpy DtoD", 5020, 5, 50, cat="gpu_memcpy"),
    ]
    return ev


def test_op_kernels_innermost_operator_and_sequences():
    r = op_kernels(load(op_events()))
    rows = {
        (o, s): (c, d, rt)
        for o, s, c, d, rt in zip(
            *(
                r.table.column(c).to_pylist()
                for c in (
                    "op_name",
                    "kernel_sequence",
                    "occurrence_count",
                    "avg_op_launch_delay",
                    "avg_runtime_delay",
                )
            )
        )
    }
    assert rows == {
        ("aten::addmm", "gemm"): (2, 10_000.0, 30_000.0),
        ("aten::cat", "cat_a -> cat_b"): (1, 30_000.0, 70_000.0),
        ("aten::graph_op", "n1 -> n2"): (1, 10_000.0, 10_000.0),
    }
    assert r.table.column("op_name").to_pylist()[0] == "aten::addmm"  # highest count first
    inst = r["instances"]
    assert inst.num_rows == 4 and inst.column("num_kernels").to_pylist() == [1, 1, 2, 2]


def test_op_kernels_prefix_and_empty():
    r = op_kernels(load(op_events()), op_prefix="aten::linear")
    assert set(r.table.column("op_name").to_pylist()) == {"aten::linear"}
    empty = op_kernels(load([X("aten::add", 0, 10)]))
    assert empty.table.num_rows == 0 and empty.notes


def test_compat_aten_op_kernels_and_delay():
    out = compat.get_aten_op_kernels_and_delay(FakeAnalysis(load(op_events())))
    df = out[0]
    assert list(df.columns) == compat.ATEN_COLUMNS
    assert df["occurrence_count"].tolist() == [2, 1, 1]
    assert df.iloc[0]["avg_runtime_delay"] == 30.0
    # the index keeps the position in (aten_op_name, kernel_sequence) order
    assert df.index.tolist() == [0, 1, 2]
    assert df.loc[1, "kernel_sequence"] == "cat_a -> cat_b"
    none = compat.get_aten_op_kernels_and_delay(FakeAnalysis(load([X("aten::add", 0, 10)])))
    assert none[0].empty and list(none[0].columns) == compat.ATEN_COLUMNS


# --- frequent kernel sequences ---------------------------------------------------------


def seq_events():
    ev, corr = [], 100
    for i in range(3):  # three aten::linear instances with the same 3-kernel pattern
        base = i * 1000
        ev += [X("aten::linear", base, 200), X("aten::linear", base + 10, 100)]  # nested linear
        for j, name in enumerate(("Memset (Device)", "sgemm", "epilogue")):
            corr += 1
            ev += [
                launch("cudaLaunchKernel", base + 20 + j * 10, 5, corr),
                kernel(
                    name,
                    base + 300 + j * 10,
                    4,
                    corr,
                    cat="gpu_memset" if name.startswith("Memset") else "kernel",
                ),
            ]
    # a fourth one with a different pattern, and one too short to count
    corr += 1
    ev += [X("aten::linear", 5000, 200)]
    for j, name in enumerate(("a", "b", "c", "d")):
        corr += 1
        ev += [
            launch("cudaLaunchKernel", 5010 + j * 10, 5, corr),
            kernel(name, 5100 + j * 10, 3, corr),
        ]
    ev += [
        X("aten::linear", 6000, 50),
        launch("cudaLaunchKernel", 6010, 5, 999),
        kernel("z", 6100, 3, 999),
    ]
    # a backward op whose name contains the operator name
    ev += [X("aten::linear_backward", 7000, 100)]
    for j in range(3):
        ev += [
            launch("cudaLaunchKernel", 7010 + j * 10, 5, 800 + j),
            kernel("bw", 7100 + j * 10, 3, 800 + j),
        ]
    return ev


def test_kernel_sequences_outermost_roots(tmp_path):
    r = kernel_sequences(load(seq_events()), "aten::linear")
    t = r.table.to_pydict()
    assert t["pattern"] == ["aten::linear|Memset (Device)|sgemm|epilogue", "aten::linear|a|b|c|d"]
    assert t["count"] == [3, 1]
    assert t["gpu_kernel_duration"] == [36_000, 12_000]
    assert t["cpu_op_duration"] == [600_000, 200_000]
    sub = kernel_sequences(load(seq_events()), "aten::linear", exact=False)
    assert "aten::linear_backward|bw|bw|bw" in sub.table.column("pattern").to_pylist()
    two = kernel_sequences(load(seq_events()), "aten::linear", min_pattern_len=1)
    assert "aten::linear|z" in two.table.column("pattern").to_pylist()


def test_kernel_sequences_amd_and_overlay(tmp_path):
    ev = [X("aten::linear", 0, 100)] + sum(
        (
            [launch("hipLaunchKernel", 10 + j, 1, j), kernel(f"k{j}", 50 + j * 5, 2, j, stream=0)]
            for j in range(3)
        ),
        [],
    )
    t = load(ev, tmp_path / "amd.json")
    r = kernel_sequences(t, "aten::linear", output_dir=str(tmp_path / "out"), top_k=1)
    assert r.table.column("pattern").to_pylist() == ["aten::linear|k0|k1|k2"]
    (written,) = r.params["written"]
    with gzip.open(written, "rt") as f:
        marked = [
            e["name"] for e in json.load(f)["traceEvents"] if "Patterns" in (e.get("args") or {})
        ]
    # the root, its three launches and their three kernels
    assert sorted(marked) == sorted(["aten::linear"] + ["hipLaunchKernel"] * 3 + ["k0", "k1", "k2"])


def test_compat_frequent_sequences(tmp_path):
    t = load(seq_events(), tmp_path / "seq.json")
    df = compat.get_frequent_cuda_kernel_sequences(FakeAnalysis(t), "aten::linear", str(tmp_path))
    assert list(df.columns) == [
        "pattern",
        "count",
        "GPU kernel duration (us)",
        "CPU op duration (us)",
    ]
    assert df["count"].tolist() == [3, 1, 1]  # substring match, as the reference
    assert df.iloc[0]["GPU kernel duration (us)"] == 36.0
    assert (tmp_path / "overlaid_seq.json.gz").exists()
    assert compat.get_frequent_cuda_kernel_sequences(FakeAnalysis(t), "", str(tmp_path)).empty
    assert compat.get_frequent_cuda_kernel_sequences(
        FakeAnalysis(t), "aten::linear", str(tmp_path / "missing")
    ).empty


# --- user annotations ------------------------------------------------------------------


def ann_events():
    return [
        X("A", 90, 130, cat="user_annotation"),
        X("A", 400, 30, cat="user_annotation"),
        X("B", 100, 20, cat="user_annotation"),
        gpu_ann("A", 100, 100),
        gpu_ann("B", 120, 30),
        gpu_ann("A", 400, 50),
        gpu_ann("C", 100, 10, stream=8),
        launch("cudaLaunchKernel", 95, 2, 1),
        kernel("k_outer", 105, 5, 1),
        launch("cudaLaunchKernel", 96, 2, 2),
        kernel("k_inner", 125, 5, 2),
        launch("cudaLaunchKernel", 97, 2, 3),
        kernel("k_zero", 130, 0, 3),
        launch("cudaLaunchKernel", 98, 2, 4),
        kernel("k_straddle", 195, 10, 4),
        launch("cudaLaunchKernel", 99, 2, 5),
        kernel("k_none", 300, 5, 5),
        launch("cudaLaunchKernel", 99, 1, 6),
        kernel("k_other_stream", 125, 5, 6, stream=9),
        launch("cudaLaunchKernel", 99, 1, 7),
        kernel("k_second", 410, 5, 7),
    ]


def test_kernels_with_user_annotations_innermost_on_same_track():
    r = kernels_with_user_annotations(load(ann_events()), 0)
    got = dict(zip(r.table.column("name").to_pylist(), r.table.column("annotation").to_pylist()))
    assert got == {
        "k_outer": "A",
        "k_inner": "B",
        "k_zero": "B",
        "k_straddle": "A",
        "k_none": None,
        "k_other_stream": None,
        "k_second": "A",
    }


def test_user_annotation_breakdown_gpu_and_cpu():
    t = load(ann_events())
    r = user_annotation_breakdown(t).table.to_pydict()
    assert r["name"] == ["A", "B", "C"]
    assert r["count"] == [2, 1, 1]
    assert r["sum"] == [150_000, 30_000, 10_000]
    assert r["max"] == [100_000, 30_000, 10_000] and r["min"] == [50_000, 30_000, 10_000]
    assert r["mean"][0] == 75_000.0
    assert math.isclose(r["stddev"][0], np.std([100_000, 50_000], ddof=1))
    assert r["stddev"][1] == 0.0
    cpu = user_annotation_breakdown(t, use_gpu_annotation=False).table.to_pydict()
    assert cpu["name"] == ["A", "B"] and cpu["sum"] == [160_000, 20_000]


def test_user_annotation_breakdown_folding():
    t = load(ann_events())
    r = user_annotation_breakdown(t, num_kernels=1).table.to_pydict()
    assert r["name"] == ["A", "others"]
    assert r["count"] == [2, 2] and r["sum"] == [150_000, 40_000]
    assert r["max"][1] == 30_000 and r["min"][1] == 10_000
    kept = user_annotation_breakdown(t, num_kernels=1, allowlist_patterns=["C"]).table
    assert kept.column("name").to_pylist() == ["A", "C", "others"]


def test_gpu_annotation_kept_by_own_start_under_last_step_cut():
    events = steps_around(
        [
            gpu_ann("G", 100, 50),
            gpu_ann("G", 2100, 50),
            launch("cudaLaunchKernel", 90, 2, 1),
            kernel("k", 110, 5, 1),
        ]
    )
    t = load(events)
    r = user_annotation_breakdown(t, selection=Selection(before_last_step=True))
    assert r.table.column("count").to_pylist() == [1]
    k = kernels_with_user_annotations(t, selection=Selection(before_last_step=True)).table
    assert k.column("annotation").to_pylist() == ["G"]


def test_compat_annotations():
    fa = FakeAnalysis(load(ann_events()))
    df = compat.get_gpu_user_annotation_breakdown(fa)
    assert list(df.columns) == [
        "name",
        "sum (us)",
        "max (us)",
        "min (us)",
        "stddev",
        "mean (us)",
        "rank",
    ]
    assert df["sum (us)"].tolist() == [150.0, 30.0, 10.0]
    k = compat.get_gpu_kernels_with_user_annotations(fa, 0)
    assert dict(zip(k["name"], k["s_user_annotation"]))["k_inner"] == "B"
    assert dict(zip(k["name"], k["user_annotation"]))["k_none"] == ""
    assert k["ts"].min() == 15.0  # from the earliest event (90 µs)
    assert k.loc[k["name"] == "k_straddle", "end"].item() == 115.0
    plain = FakeAnalysis(load(LAUNCHES))
    assert compat.get_gpu_kernels_with_user_annotations(plain, 0) is None
    assert compat.get_gpu_user_annotation_breakdown(plain) is None


def test_shorten_name():
    assert compat.shorten_name("void at::native::foo<4, float>(int, float)") == "at::native::foo"
    assert (
        compat.shorten_name("Memcpy HtoD (Pageable -> Device)")
        == "Memcpy HtoD (Pageable -> Device)"
    )
    assert compat.shorten_name("plain_kernel") == "plain_kernel"


# --- profiler steps --------------------------------------------------------------------


def test_profiler_steps_and_compat():
    events = steps_around([gpu_ann("ProfilerStep#9", 100, 50)], n_steps=3, first=4)
    t = load(events)
    r = profiler_steps(t)
    assert r.table.column("step").to_pylist() == [4, 5, 6]
    assert r.table.column("ts").to_pylist() == [0, 1_000_000, 2_000_000]
    assert compat.get_profiler_steps(FakeAnalysis(t)) == [4, 5]
    assert compat.get_profiler_steps(FakeAnalysis(t, include_last_profiler_step=True)) == [4, 5, 6]
    assert profiler_steps(load([X("aten::add", 0, 1)])).table.num_rows == 0


def test_profiler_steps_across_ranks():
    a = load(steps_around([], n_steps=2, first=1))
    b = load(steps_around([], n_steps=3, first=2))
    ts = TraceSet({0: a, 1: b})
    r = profiler_steps(ts)
    assert r["steps"].column("step").to_pylist() == [1, 2, 3, 4]
    assert r.table.column("rank").to_pylist() == [0, 0, 1, 1, 1]


# --- real traces -----------------------------------------------------------------------


def test_real_trace_filter_launches(traces_dir):
    ts = hta_fast.load_dir(str(traces_dir / "hta" / "trace_filter"))
    r = launch_stats(ts)
    t = r.to_pandas()
    assert set(t["rank"]) == {0, 1}
    assert (t["launch_delay"] >= 0).all() and (t["cpu_duration"] > 0).all()
    # every kernel, memcpy and memset of these traces has its launch
    for rank, trace in ts.items():
        kinds = trace.column("events", "kind")
        work = np.isin(
            kinds, [hta_fast.EventKind.kernel, hta_fast.EventKind.memcpy, hta_fast.EventKind.memset]
        ).sum()
        assert (t["rank"] == rank).sum() == work
    # the default view keeps fewer rows than the whole trace, and only launches before the cut
    cut = launch_stats(ts, selection=Selection(before_last_step=True)).to_pandas()
    assert 0 < len(cut) < len(t)
    one = launch_stats(ts, ranks=[1]).to_pandas()
    assert set(one["rank"]) == {1}
    lo, hi = int(t["launch_ts"].min()), int(t["launch_ts"].median())
    win = launch_stats(ts, window=(lo, hi)).to_pandas()
    assert len(win) and (win["launch_ts"] < hi).all() and (win["gpu_ts"] < hi).all()


def test_real_trace_operator_kernels_cover_launches(traces_dir):
    t = hta_fast.load_dir(str(traces_dir / "hta" / "critical_path" / "alexnet"))
    r = op_kernels(t)
    inst = r["instances"].to_pandas()
    assert r.table.column("occurrence_count").to_numpy().sum() == len(inst)
    assert (inst["op_launch_delay"] >= 0).all()
    assert inst["op_name"].str.startswith("aten::").all()
    seq = kernel_sequences(t, "aten::linear")
    assert seq.table.column("count").to_pylist() == [2]
    occ = seq["occurrences"].to_pandas()
    assert (occ["num_kernels"] == 3).all()
