"""Queue length, memory bandwidth and counters in the trace, on synthetic traces whose answers
are known by construction, and on real traces (invariants)."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.memory_bw import copy_type, memory_bandwidth
from hta_fast.analysis.queue_length import queue_length
from hta_fast.compat import TraceAnalysis
from hta_fast.compat import counters as cc
from hta_fast.compat.counters_trace import _splice, trace_with_counters, us_text
from hta_fast.frame.select import Selection

US = 1000  # ns per us


# --- trace builders (times in us) -------------------------------------------------------
def launch(ts, dur, corr, name="cudaLaunchKernel", tid=1, cat="cuda_runtime"):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr},
    }


def kernel(ts, dur, corr, stream, name="gemm_kernel", cat="kernel", **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr, "stream": stream, "device": 0, **args},
    }


def memcpy(ts, dur, corr, stream, kind="HtoD (Pageable -> Device)", **args):
    return kernel(ts, dur, corr, stream, name=f"Memcpy {kind}", cat="gpu_memcpy", **args)


def memset(ts, dur, corr, stream, **args):
    return kernel(ts, dur, corr, stream, name="Memset (Device)", cat="gpu_memset", **args)


def step(n, ts, dur):
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{n}",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
    }


def load(events, **header):
    return hta_fast.load(json.dumps({**header, "traceEvents": events}).encode())


def two_streams():
    """Stream 7: launches at 0, 1, 2; kernels start 10, 20, 30 (queue 1, 2, 3, then 2, 1, 0).
    Stream 8: launch at 5, kernel at 15 (queue 1 over [5, 15))."""
    return [
        launch(0, 1, 1),
        launch(1, 1, 2),
        launch(2, 1, 3),
        launch(5, 1, 4),
        kernel(10, 10, 1, 7),
        kernel(20, 10, 2, 7),
        kernel(30, 10, 3, 7),
        kernel(15, 20, 4, 8),
    ]


def series(result, stream):
    t = result.table.to_pandas()
    t = t[t["stream"] == stream]
    return list(zip((t["ts"] // US).tolist(), t["queue_length"].tolist()))


# --- queue length ------------------------------------------------------------------------
def test_queue_length_per_stream():
    r = queue_length(load(two_streams()))
    assert series(r, 7) == [(0, 1), (1, 2), (2, 3), (10, 2), (20, 1), (30, 0)]
    assert series(r, 8) == [(5, 1), (15, 0)]
    assert r.table.schema.field("ts").metadata == {b"unit": b"ns"}
    assert r.table.column_names[0] == "rank"


def test_queue_length_summary_is_time_weighted():
    s = queue_length(load(two_streams()))["summary"].to_pandas().set_index("stream")
    # stream 7 over [0, 30): 1 for 1, 2 for 1, 3 for 8, 2 for 10, 1 for 10
    assert s.loc[7, "duration"] == 30 * US
    assert s.loc[7, "mean"] == pytest.approx((1 + 2 + 24 + 20 + 10) / 30)
    assert (s.loc[7, "min"], s.loc[7, "max"]) == (1.0, 3.0)
    # time at or below v reaches 25% (7.5) at v=2 (1 + 1 + 10... sorted: 1 for 11, 2 for 11)
    assert (s.loc[7, "p25"], s.loc[7, "p50"], s.loc[7, "p75"]) == (1.0, 2.0, 3.0)
    assert s.loc[7, "change_points"] == 6
    assert s.loc[7, "change_point_mean"] == pytest.approx((1 + 2 + 3 + 2 + 1 + 0) / 6)
    assert s.loc[8, "mean"] == 1.0 and s.loc[8, "duration"] == 10 * US


def test_blocked_on_full_queue():
    r = queue_length(load(two_streams()), max_queue_length=2)
    b = r["blocked"].to_pandas().set_index("stream")
    # stream 7 holds >= 2 over [1, 20): 19 us; the trace spans [0, 40)
    assert b.loc[7, "blocked_time"] == 19 * US
    assert b.loc[7, "blocked_pct"] == pytest.approx(19 / 40 * 100)
    assert b.loc[8, "blocked_time"] == 0
    assert (
        queue_length(load(two_streams()))["blocked"].column("blocked_time").to_numpy() == 0
    ).all()


def test_every_stream_is_reported_not_only_the_last():
    """The reference's blocked-time table keeps one stream per rank; every stream is here."""
    events = two_streams() + [launch(6, 1, 5), kernel(40, 1, 5, 8)]
    b = queue_length(load(events), max_queue_length=2)["blocked"].to_pandas()
    assert set(b[b["blocked_time"] > 0]["stream"]) == {7, 8}


def test_equal_timestamps_apply_together():
    """A kernel starting when the next launch happens: one change point with the net value."""
    events = [launch(0, 1, 1), kernel(5, 5, 1, 7), launch(5, 1, 2), kernel(12, 1, 2, 7)]
    assert series(queue_length(load(events)), 7) == [(0, 1), (5, 1), (12, 0)]


def test_zero_length_kernels_are_queued_like_any_other():
    events = [launch(0, 1, 1), kernel(4, 0, 1, 7), launch(1, 1, 2), kernel(4, 0, 2, 7)]
    assert series(queue_length(load(events)), 7) == [(0, 1), (1, 2), (4, 0)]


def test_graph_launch_is_one_entry():
    """A graph launch queues one entry that leaves when its first kernel starts."""
    events = [
        launch(0, 2, 9, name="cudaGraphLaunch"),
        kernel(10, 2, 9, 7),
        kernel(12, 2, 9, 7, name="k2"),
        kernel(14, 2, 9, 7, name="k3"),
    ]
    r = queue_length(load(events))
    assert series(r, 7) == [(0, 1), (10, 0)]


def test_other_launch_calls_count():
    """cuLaunchKernel, cudaMemcpy (synchronous) and HIP launches queue work too."""
    events = [
        launch(0, 1, 1, name="cuLaunchKernel", cat="cuda_driver"),
        kernel(5, 1, 1, 7),
        launch(1, 1, 2, name="cudaMemcpy"),
        memcpy(6, 1, 2, 7),
        launch(2, 1, 3, name="hipLaunchKernel"),
        kernel(7, 1, 3, 7),
    ]
    assert series(queue_length(load(events)), 7) == [(0, 1), (1, 2), (2, 3), (5, 2), (6, 1), (7, 0)]


def test_amd_stream_zero():
    events = [
        launch(0, 1, 1, name="hipLaunchKernel"),
        kernel(3, 1, 1, 0),
        launch(1, 1, 2, name="hipLaunchKernel"),
        kernel(4, 1, 2, 0),
    ]
    assert series(queue_length(load(events)), 0) == [(0, 1), (1, 2), (3, 1), (4, 0)]


def test_kernel_before_its_launch_goes_negative_with_a_note():
    """Clock skew: the GPU event starts before its launch; the value says so, so does a note."""
    events = [launch(10, 1, 1), kernel(8, 1, 1, 7)]
    r = queue_length(load(events))
    assert series(r, 7) == [(8, -1), (10, 0)]
    assert any("before their launch" in n for n in r.notes)


def test_unlaunched_gpu_events_are_left_out_with_a_note():
    events = [launch(0, 1, 1), kernel(5, 1, 1, 7), kernel(6, 1, 99, 7)]
    r = queue_length(load(events))
    assert series(r, 7) == [(0, 1), (5, 0)]
    assert any("no launch" in n for n in r.notes)


def test_no_gpu():
    r = queue_length(load([launch(0, 1, 1), step(1, 0, 10)]))
    assert r.table.num_rows == 0 and r["summary"].num_rows == 0 and r["blocked"].num_rows == 0
    assert r.notes
    m = memory_bandwidth(load([launch(0, 1, 1)]))
    assert m.table.num_rows == 0 and m["summary"].num_rows == 0 and m.notes


def test_steps_take_gpu_work_by_its_launch():
    """A kernel launched in step 1 and running in step 2 belongs to step 1."""
    events = [
        step(1, 0, 10),
        step(2, 10, 10),
        launch(2, 1, 1),
        kernel(12, 3, 1, 7),
        launch(11, 1, 2),
        kernel(15, 3, 2, 7),
    ]
    tr = load(events)
    assert series(queue_length(tr, steps=[1]), 7) == [(2, 1), (12, 0)]
    assert series(queue_length(tr, steps=[2]), 7) == [(11, 1), (15, 0)]
    assert series(queue_length(tr, selection=Selection(before_last_step=True)), 7) == [
        (2, 1),
        (12, 0),
    ]


def test_streams_and_window():
    tr = load(two_streams())
    assert set(queue_length(tr, streams=[8]).table.column("stream").to_pylist()) == {8}
    r = queue_length(tr, window=(4 * US, 25 * US))
    # entries whose time in the queue meets [4, 25), clipped to it
    assert series(r, 7) == [(4, 3), (10, 2), (20, 1), (25, 0)]
    assert series(r, 8) == [(5, 1), (15, 0)]


def test_ranks():
    ts = hta_fast.TraceSet(
        {0: load(two_streams()), 3: load(two_streams()[:2] + [kernel(9, 1, 1, 7)])}
    )
    r = queue_length(ts)
    assert sorted(set(r.table.column("rank").to_pylist())) == [0, 3]
    assert set(queue_length(ts, ranks=[3]).table.column("rank").to_pylist()) == {3}
    with pytest.raises(ValueError):
        queue_length(ts, ranks=[5])


# --- memory bandwidth --------------------------------------------------------------------
BW = "memory bandwidth (GB/s)"


def bw_series(result, name):
    t = result.table.to_pandas()
    t = t[t["name"] == name]
    return list(zip((t["ts"] // US).tolist(), t["memory_bw_gbps"].round(9).tolist()))


def test_bandwidth_sums_overlapping_copies():
    events = [
        launch(0, 1, 1, name="cudaMemcpyAsync"),
        memcpy(10, 10, 1, 7, bytes=1, **{BW: 2.5}),
        launch(1, 1, 2, name="cudaMemcpyAsync"),
        memcpy(15, 10, 2, 8, bytes=1, **{BW: 1.5}),
        launch(2, 1, 3, name="cudaMemsetAsync"),
        memset(12, 2, 3, 7, bytes=1, **{BW: 7.0}),
        launch(3, 1, 4, name="cudaMemcpyAsync"),
        memcpy(30, 4, 4, 7, kind="DtoH (Device -> Pinned)", bytes=1, **{BW: 3.0}),
    ]
    r = memory_bandwidth(load(events))
    assert bw_series(r, "Memcpy HtoD") == [(10, 2.5), (15, 4.0), (20, 1.5), (25, 0.0)]
    assert bw_series(r, "Memset") == [(12, 7.0), (14, 0.0)]
    assert bw_series(r, "Memcpy DtoH") == [(30, 3.0), (34, 0.0)]
    s = r["summary"].to_pandas().set_index("name")
    # HtoD runs over [10, 25): 2.5 for 5, 4.0 for 5, 1.5 for 5 -> time-weighted mean 8/3
    assert s.loc["Memcpy HtoD", "active_time"] == 15 * US
    assert s.loc["Memcpy HtoD", "mean"] == pytest.approx(8 / 3)
    assert (s.loc["Memcpy HtoD", "min"], s.loc["Memcpy HtoD", "max"]) == (1.5, 4.0)
    assert s.loc["Memcpy HtoD", "p50"] == 2.5
    assert s.loc["Memcpy HtoD", "copies"] == 2
    assert s.loc["Memset", "mean"] == 7.0


def test_bandwidth_idle_gaps_do_not_count():
    """The summary covers the time a copy runs, not the gaps between copies."""
    events = [
        launch(0, 1, 1, name="cudaMemcpyAsync"),
        memcpy(10, 2, 1, 7, **{BW: 4.0}),
        launch(1, 1, 2, name="cudaMemcpyAsync"),
        memcpy(100, 2, 2, 7, **{BW: 2.0}),
    ]
    s = memory_bandwidth(load(events))["summary"].to_pandas().iloc[0]
    assert s["active_time"] == 4 * US and s["mean"] == 3.0 and s["min"] == 2.0


def test_bandwidth_returns_to_exactly_zero():
    values = [0.1, 0.2, 0.7, 1e-3, 123.456789]
    events = []
    for i, v in enumerate(values):
        events += [
            launch(i, 1, i + 1, name="cudaMemcpyAsync"),
            memcpy(10 + i, 7 + i, i + 1, 7, **{BW: v}),
        ]
    t = memory_bandwidth(load(events)).table.to_pandas()
    assert t["memory_bw_gbps"].iloc[-1] == 0.0
    assert (t["memory_bw_gbps"] >= 0).all()


def test_zero_length_copy_adds_nothing():
    events = [launch(0, 1, 1, name="cudaMemsetAsync"), memset(10, 0, 1, 7, **{BW: 5.0})]
    r = memory_bandwidth(load(events))
    assert bw_series(r, "Memset") == [(10, 0.0)]


def test_bandwidth_from_bytes_when_the_argument_is_missing():
    """AMD traces carry no bandwidth: bytes / duration when bytes are known (1 B/ns = 1 GB/s),
    else a note."""
    events = [
        launch(0, 1, 1, name="hipMemcpyAsync"),
        memcpy(10, 4, 1, 0, bytes=8000),
        launch(1, 1, 2, name="hipMemcpyAsync"),
        memcpy(20, 4, 2, 0),
    ]
    r = memory_bandwidth(load(events))
    assert bw_series(r, "Memcpy HtoD") == [(10, 2.0), (14, 0.0), (20, 0.0), (24, 0.0)]
    assert any("neither a bandwidth nor a byte count" in n for n in r.notes)


def test_copy_types():
    assert copy_type("Memcpy HtoD (Pinned -> Device)", 7) == "Memcpy HtoD"
    assert copy_type("Memcpy PtoP (Device -> Device)", 7) == "Memcpy PtoP"
    assert copy_type("Memset (Device)", 8) == "Memset"
    assert copy_type("dma_request", 7) == "Memcpy Unknown"


# --- counters in the trace ---------------------------------------------------------------
def write_trace(path, events, **header):
    text = json.dumps(
        {"schemaVersion": 1, **header, "traceEvents": events, "traceName": "x"}, indent=1
    )
    if path.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)


def mem_and_queue_events():
    return two_streams() + [
        launch(3, 1, 5, name="cudaMemcpyAsync"),
        memcpy(16, 4, 5, 8, bytes=10, **{BW: 2.5}),
    ]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_trace_with_counters_round_trip(tmp_path, suffix):
    src = str(tmp_path / f"rank0{suffix}")
    write_trace(
        src,
        mem_and_queue_events(),
        baseTimeNanoseconds=1_700_000_000_000_000_123,
        distributedInfo={"rank": 0, "note": '"traceEvents": ['},
    )
    tr = hta_fast.load(src)
    out = tmp_path / "out"
    out.mkdir()
    res = trace_with_counters(tr, out_dir=str(out))
    path = res.table.column("path")[0].as_py()
    assert path == str(out / f"rank0_with_counters{suffix}")
    # valid JSON, the original events unchanged, the header kept
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    assert doc["traceName"] == "x" and doc["distributedInfo"]["note"] == '"traceEvents": ['
    added = [e for e in doc["traceEvents"] if e.get("ph") == "C"]
    assert len(doc["traceEvents"]) == len(mem_and_queue_events()) + len(added)
    assert {e["name"] for e in added} == {"Queue Length", "Memcpy HtoD"}
    # loading the copy gives back exactly the computed series
    back = hta_fast.load(path)
    c = back.counters.to_pandas()
    q = queue_length(tr).table.to_pandas()
    cq = c[c["name"] == "Queue Length"]
    assert cq["tid"].tolist() == q["stream"].tolist()
    assert cq["ts"].tolist() == q["ts"].tolist()
    assert cq["value"].tolist() == q["queue_length"].tolist()
    assert (cq["pid"] == 0).all()
    b = memory_bandwidth(tr).table.to_pandas()
    cb = c[c["series"] == "Memcpy BW"]
    assert cb["ts"].tolist() == b["ts"].tolist()
    assert cb["value"].tolist() == b["memory_bw_gbps"].tolist()
    assert res.table.column("queue_length_events")[0].as_py() == len(q)
    # the events of the copy are those of the original
    assert back.events.num_rows == tr.events.num_rows


def test_trace_with_counters_one_series(tmp_path):
    src = str(tmp_path / "t.json")
    write_trace(src, mem_and_queue_events())
    res = trace_with_counters(
        hta_fast.load(src), out_dir=str(tmp_path), series=("memcpy_bandwidth",)
    )
    back = hta_fast.load(res.table.column("path")[0].as_py())
    assert set(back.counters.column("series").to_pylist()) == {"Memcpy BW"}
    with pytest.raises(ValueError):
        trace_with_counters(hta_fast.load(src), out_dir=str(tmp_path), series=("nope",))


def test_trace_with_counters_needs_a_file():
    with pytest.raises(ValueError):
        trace_with_counters(load(two_streams()))


def test_splice_empty_array_and_odd_layout():
    import io

    src = b'{"a": "\\"traceEvents\\": [", "traceEvents" :\n [ ], "b": 1}'
    out = io.BytesIO()
    _splice(io.BytesIO(src), out, ['{"ph": "C"}'])
    doc = json.loads(out.getvalue())
    assert doc["traceEvents"] == [{"ph": "C"}] and doc["a"] == '"traceEvents": ['
    out = io.BytesIO()
    _splice(io.BytesIO(b'{"traceEvents":[{"x":1}]}'), out, ['{"y": 2}', '{"z": 3}'])
    assert json.loads(out.getvalue())["traceEvents"] == [{"y": 2}, {"z": 3}, {"x": 1}]


def test_us_text_is_exact():
    assert us_text(np.array([0, 1, 999, 1000, 1234567, -1, -1500])) == [
        "0",
        "0.001",
        "0.999",
        "1",
        "1234.567",
        "-0.001",
        "-1.500",
    ]


# --- compat ------------------------------------------------------------------------------
@pytest.fixture()
def analysis(tmp_path):
    write_trace(str(tmp_path / "rank0.json"), mem_and_queue_events(), distributedInfo={"rank": 0})
    return TraceAnalysis(trace_dir=str(tmp_path))


def test_compat_queue_length(analysis):
    d = analysis.get_queue_length_time_series()
    df = d[0]
    assert list(df.columns) == ["ts", "pid", "tid", "stream", "queue_length"]
    assert df.index.name == "index"
    s7 = df[df["stream"] == 7]
    assert s7["ts"].tolist() == [0, 1, 2, 10, 20, 30]
    assert s7["queue_length"].tolist() == [1, 2, 3, 2, 1, 0]
    summary = analysis.get_queue_length_summary()
    assert list(summary.columns) == [("queue_length", c) for c in cc.STATS]
    assert summary.index.names == ["rank", "stream"]
    row = summary.loc[(0, 7)]
    assert row[("queue_length", "count")] == 6
    assert row[("queue_length", "mean")] == pytest.approx(57 / 30)
    # std weighted by time around the time-weighted mean
    w = np.array([1, 1, 8, 10, 10.0])
    v = np.array([1, 2, 3, 2, 1.0])
    m = (w * v).sum() / w.sum()
    assert row[("queue_length", "std")] == pytest.approx(
        np.sqrt((w * (v - m) ** 2).sum() / w.sum())
    )
    before = {k: v.copy() for k, v in d.items()}
    again = analysis.get_queue_length_summary_from_time_series(d)
    assert again.equals(summary)
    assert all(before[k].equals(d[k]) for k in d)  # the input is not modified
    blocked = analysis.get_time_spent_blocked_on_full_queue(d, max_queue_length=2)
    # stream 7 >= 2 over [1, 20); stream 8 (a launch at 3, a copy at 5) over [5, 15); the
    # reference's trace duration runs from the first start (0) to the last start (30)
    assert blocked.to_dict("records") == [
        {
            "rank": 0,
            "stream": 7,
            "duration_at_max_queue_length": 19.0,
            "relative_duration_at_max_queue_length": pytest.approx(19 / 30),
        },
        {
            "rank": 0,
            "stream": 8,
            "duration_at_max_queue_length": 10.0,
            "relative_duration_at_max_queue_length": pytest.approx(10 / 30),
        },
    ]
    assert len(analysis.get_time_spent_blocked_on_full_queue(d)) == 0
    assert analysis.get_queue_length_summary_from_time_series({}) is None


def test_compat_memory_bw(analysis):
    d = analysis.get_memory_bw_time_series()
    df = d[0]
    assert list(df.columns) == ["ts", "pid", "name", "memory_bw_gbps"]
    assert df["ts"].tolist() == [16.0, 20.0]
    assert df["memory_bw_gbps"].tolist() == [2.5, 0.0]
    s = analysis.get_memory_bw_summary()
    assert list(s.columns) == [("memory_bw_gbps", c) for c in cc.STATS]
    assert s.loc[(0, "Memcpy HtoD"), ("memory_bw_gbps", "mean")] == 2.5
    assert s.loc[(0, "Memcpy HtoD"), ("memory_bw_gbps", "count")] == 1


def test_compat_generate_trace_with_counters(analysis, tmp_path):
    assert analysis.generate_trace_with_counters() is None
    path = tmp_path / "rank0_with_counters.json"
    back = hta_fast.load(str(path))
    assert set(back.counters.column("name").to_pylist()) == {"Queue Length", "Memcpy HtoD"}
    os.remove(path)
    analysis.generate_trace_with_counters(
        time_series=cc.TimeSeriesTypes.QUEUE_LENGTH, output_suffix="_q"
    )
    back = hta_fast.load(str(tmp_path / "rank0_q.json"))
    assert set(back.counters.column("name").to_pylist()) == {"Queue Length"}


# --- real traces -------------------------------------------------------------------------
@pytest.mark.parametrize("folder", ["hta/trace_filter", "hta/negative_queue_length_values_check"])
def test_real_trace_invariants(traces_dir, folder, tmp_path):
    ts = hta_fast.load_dir(str(traces_dir / folder))
    r = queue_length(ts)
    t = r.table.to_pandas()
    # every queue empties at the end, never goes below zero, and one entry per launch
    last = t.groupby(["rank", "stream"])["queue_length"].last()
    assert (last == 0).all() and (t["queue_length"] >= 0).all()
    s = r["summary"].to_pandas()
    assert (s["min"] <= s["mean"]).all() and (s["mean"] <= s["max"]).all()
    assert (s["p25"] <= s["p50"]).all() and (s["p50"] <= s["p75"]).all()
    m = memory_bandwidth(ts)
    b = m.table.to_pandas()
    assert (b.groupby(["rank", "name"])["memory_bw_gbps"].last() == 0).all()
    assert (b["memory_bw_gbps"] >= 0).all()
    # the counters written into a copy load back equal to the series
    rank = ts.ranks[0]
    res = trace_with_counters(ts, out_dir=str(tmp_path), ranks=[rank])
    c = hta_fast.load(res.table.column("path")[0].as_py()).counters.to_pandas()
    cq = c[c["name"] == "Queue Length"]
    mine = t[t["rank"] == rank]
    assert cq["tid"].tolist() == mine["stream"].tolist()
    assert cq["ts"].tolist() == mine["ts"].tolist()
    assert cq["value"].tolist() == mine["queue_length"].tolist()


def test_compat_rows_at_one_timestamp_never_peak(tmp_path):
    """At one timestamp GPU starts come before launches, copy ends before copy starts, so the
    rows of that timestamp never show a queue or a bandwidth that was never there."""
    events = [
        launch(0, 1, 1),
        kernel(5, 5, 1, 7),
        launch(5, 1, 2),
        kernel(12, 1, 2, 7),
        launch(1, 1, 3, name="cudaMemcpyAsync"),
        memcpy(20, 5, 3, 8, **{BW: 2.0}),
        launch(2, 1, 4, name="cudaMemcpyAsync"),
        memcpy(25, 5, 4, 8, **{BW: 3.0}),
    ]
    write_trace(str(tmp_path / "rank0.json"), events, distributedInfo={"rank": 0})
    ta = TraceAnalysis(trace_dir=str(tmp_path))
    q = ta.get_queue_length_time_series()[0]
    assert q[q["stream"] == 7]["queue_length"].tolist() == [1, 0, 1, 0]
    b = ta.get_memory_bw_time_series()[0]
    assert b["memory_bw_gbps"].tolist() == [2.0, 0.0, 3.0, 0.0]
    assert b["ts"].tolist() == [20.0, 25.0, 25.0, 30.0]


def test_bandwidth_window_clips_copies_running_into_it():
    events = [
        launch(0, 1, 1, name="cudaMemcpyAsync"),
        memcpy(10, 10, 1, 7, **{BW: 2.0}),
        launch(1, 1, 2, name="cudaMemcpyAsync"),
        memcpy(30, 10, 2, 7, **{BW: 3.0}),
    ]
    r = memory_bandwidth(load(events), window=(15 * US, 35 * US))
    assert bw_series(r, "Memcpy HtoD") == [(15, 2.0), (20, 0.0), (30, 3.0), (35, 0.0)]
    assert r["summary"].column("active_time")[0].as_py() == 10 * US


@pytest.mark.parametrize("folder", ["hta/trace_filter", "param_dlrm_8rank"])
def test_compat_queue_summary_equals_summary_of_its_series(traces_dir, folder):
    # get_queue_length_summary works from step functions, not from the series' rows
    analysis = TraceAnalysis(trace_dir=str(traces_dir / folder))
    ranks = analysis.traces.ranks
    direct = analysis.get_queue_length_summary(ranks=ranks)
    via = analysis.get_queue_length_summary_from_time_series(
        analysis.get_queue_length_time_series(ranks=ranks)
    )
    assert direct.index.equals(via.index) and list(direct.columns) == list(via.columns)
    np.testing.assert_allclose(direct.to_numpy(), via.to_numpy(), rtol=1e-12, equal_nan=True)
