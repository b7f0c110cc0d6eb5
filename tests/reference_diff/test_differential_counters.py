"""Queue length, memory bandwidth and counters-in-the-trace against the reference tool, on
every shared trace folder it loads.

Time series are compared as step functions: at equal timestamps the reference's row order
is numpy quicksort's (spec §0), so only the value after the last row of each timestamp is
compared, per stream / copy type. On nanosecond traces the reference rounds starts up to
the microsecond (spec §0.2), so ours are bucketed the same way before comparing.

Where we differ on purpose (docs: /work/notes/diff-counters.md) the difference is asserted
on a trace where it shows:
  * graph-launched kernels are in our queues (negative_queue_length_values_check,
    trace_diff/test): ours minus their step function equals the reference;
  * summaries are time-weighted (the reference's are over change points);
  * blocked-on-full-queue lists every stream (trace_filter at max 2: several per rank);
  * zero-length copies add no bandwidth (the reference stretches them to 1 us:
    _historical/with_gpu_user_annotation);
  * MTIA accelerator events are not GPU work in our schema yet: no queue, no copies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hta_fast
from hta_fast.analysis.queue_length import queue_pairs
from hta_fast.compat import TraceAnalysis
from hta_fast.compat import counters as cc
from hta_fast.compat.counters_trace import trace_with_counters
from tests.conftest import NOT_CHROME_TRACES
from tests.reference.reference_results import reference_results

pytestmark = pytest.mark.reference  # runs the reference tool

# Folders holding trace files that the reference loads (appendix of the spec), smallest first.
FOLDERS = [
    "hta/call_stack",
    "hta/cpu_only",
    "hta/trace_file_list",
    "hta/triton_example",
    "hta/amd_trace",
    "hta/execution_trace",
    "hta/critical_path/cuda_event_sync",
    "hta/critical_path/cuda_event_sync_multi_stream",
    "hta/critical_path/simple_add",
    "hta/critical_path/alexnet",
    "hta/_historical/with_gpu_user_annotation",
    "hta/cupti_profiler",
    "hta/rank_non_gpu",
    "hta/timeline_analysis",
    "hta/trace_filter",
    "hta/trace_compare/test",
    "hta/mtia_inference_trace",
    "param_dlrm_8rank",
    "hta/nccl_parser_config",
    "hta/ns_resolution_trace",
    "hta/negative_queue_length_values_check",
    "hta/trace_diff/test",
    "hta/trace_diff/control",
    "hta/df_index_resolver",
]
MTIA = {"hta/mtia_inference_trace", "hta/mtia_trace_single_rank"}
GRAPH_LAUNCHES = {"hta/negative_queue_length_values_check", "hta/trace_diff/test"}
# Folders where our queues hold launches the reference misses (see extra_pairs).
EXTRA_QUEUED = GRAPH_LAUNCHES | {"hta/trace_file_list"}
# The launch calls the reference counts in a queue (spec §5).
REF_LAUNCHES = {
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemsetAsync",
    "hipMemcpyWithStream",
}


@pytest.fixture(scope="module", params=FOLDERS)
def case(request, traces_dir):
    folder = traces_dir / request.param
    ref = reference_results(folder)
    if "load" in ref.errors:
        pytest.fail(f"the reference no longer loads {request.param}: {ref.errors['load']}")
    files = [
        p
        for p in sorted(folder.iterdir())
        if p.is_file() and p.relative_to(traces_dir).as_posix() not in NOT_CHROME_TRACES
    ]
    if len(files) < len([p for p in folder.iterdir() if p.is_file()]):
        # the reference loads the trace and drops the other file (same rank 0, spec §0.1)
        ta = TraceAnalysis(trace_files=[str(p) for p in files])
    else:
        ta = TraceAnalysis(trace_dir=str(folder))
    return request.param, ref, ta


# --- step functions ------------------------------------------------------------------------
def _ns_trace(ta) -> bool:
    return any(np.any(t.column("events", "ts") % 1000 != 0) for t in ta.traces.values())


def finals(ts, key, value):
    """{key: (ts, value)} with the value after the last row of each timestamp (rows taken in
    the given order within a timestamp)."""
    ts = np.asarray(ts)
    key = np.asarray(key)
    value = np.asarray(value, np.float64)
    out = {}
    for k in np.unique(key):
        m = key == k
        t, v = ts[m], value[m]
        order = np.argsort(t, kind="stable")
        t, v = t[order], v[order]
        last = np.r_[t[1:] != t[:-1], True]
        out[k] = (t[last], v[last])
    return out


def at(series, t):
    """Value of a step function (ts, value) at times t (0 before its first row)."""
    ts, v = series
    i = np.searchsorted(ts, t, side="right") - 1
    return np.where(i >= 0, v[np.maximum(i, 0)], 0.0)


def ref_us(abs_ns):
    """What the reference makes of an absolute time in a nanosecond trace: the double nearest
    the file's decimal microseconds, rounded up (spec §0.2 step 4; at 1.7e15 us doubles are
    0.25 us apart)."""
    abs_ns = np.asarray(abs_ns, np.int64)
    return np.ceil((abs_ns // 1000).astype(np.float64) + (abs_ns % 1000) / 1000.0).astype(np.int64)


def to_ref_clock(ta, ts_us):
    """Our compat timestamps (us since our origin) on the reference's clock."""
    if not _ns_trace(ta):
        return np.asarray(ts_us)
    zero = cc.origin_ns(ta.traces)
    base = next(iter(ta.traces.values())).meta.base_time_ns  # the file's own clock
    file_ns = np.rint(np.asarray(ts_us, np.float64) * 1000).astype(np.int64) + zero - base
    return ref_us(file_ns) - ref_us([zero - base])[0]


def assert_same_steps(ours, ref, tol=0.0, skip=None, what=""):
    """ours, ref: {key: (ts, value)} step functions; equal at every change point of either,
    except at times skip(key, t) says to skip."""
    assert set(ours) == set(ref), f"{what}: keys {sorted(ours)} != {sorted(ref)}"
    for k in ref:
        t = np.union1d(ours[k][0], ref[k][0])
        keep = np.ones(len(t), bool) if skip is None else ~skip(k, t)
        a, b = at(ours[k], t[keep]), at(ref[k], t[keep])
        bad = np.flatnonzero(np.abs(a - b) > tol)
        assert len(bad) == 0, (
            f"{what} {k}: first differences at t={t[keep][bad[:5]]}: "
            f"ours {a[bad[:5]]} reference {b[bad[:5]]}"
        )


# --- queue length ------------------------------------------------------------------------
def extra_pairs(ta, rank):
    """Our queue's (stream, launch ts, GPU ts) entries that the reference does not count, on the
    compat clock: launches it does not know (cudaGraphLaunch), and a launch whose GPU event
    is the file's first event (its partner index 0 reads as "none" there, spec §19.15)."""
    trace = ta.traces[rank]
    rows, lts, gts, _ = queue_pairs(trace, ta.selection.event_mask(trace))
    names = trace.strings.to_numpy(zero_copy_only=False)[
        trace.column("events", "name")[trace.column("events", "partner")[rows]]
    ]
    unknown = ~np.isin(names, list(REF_LAUNCHES))
    extra = unknown | (rows == 0)
    zero = cc.origin_ns(ta.traces)
    return (
        trace.column("events", "stream")[rows][extra],
        cc._us(lts[extra] - zero),
        cc._us(gts[extra] - zero),
        unknown[extra],
    )


def our_queue_finals(ta, df, rank, without_extra):
    ts, stream = df["ts"].to_numpy(), df["stream"].to_numpy()
    q = df["queue_length"].to_numpy()
    # per-row deltas, so that extra pairs can be taken out before bucketing
    delta = np.empty(len(q), np.int64)
    for s in np.unique(stream):
        m = stream == s
        delta[m] = np.diff(np.r_[0, q[m]])
    if without_extra:
        es, el, eg, _ = extra_pairs(ta, rank)
        ts = np.concatenate([ts, el, eg])
        stream = np.concatenate([stream, es, es])
        delta = np.concatenate([delta, -np.ones(len(el), np.int64), np.ones(len(eg), np.int64)])
    ts = to_ref_clock(ta, ts)
    out = {}
    for s in np.unique(stream):
        m = stream == s
        t, d = ts[m], delta[m]
        order = np.argsort(t, kind="stable")
        t, v = t[order], np.cumsum(d[order])
        last = np.r_[t[1:] != t[:-1], True]
        out[s] = (t[last], v[last].astype(np.float64))
    return out


def test_queue_length_time_series(case):
    name, ref, ta = case
    ours = ta.get_queue_length_time_series(ranks=ta.traces.ranks)
    if "queue_length_time_series" not in ref:
        assert name in {"hta/critical_path", "hta/trace_diff"}, ref.errors.get(
            "queue_length_time_series"
        )
        return
    expected = ref["queue_length_time_series"]
    assert set(ours) == set(expected)
    graph = first_event = 0
    for rank, df in expected.items():
        assert list(ours[rank].columns) == ["ts", "pid", "tid", "stream", "queue_length"]
        assert ours[rank].index.name == "index"
        assert list(ours[rank]["stream"]) == sorted(ours[rank]["stream"])
        # no GPU event starts before its launch in these traces: no queue below zero, in any
        # row (GPU starts are applied before launches at one timestamp)
        assert (ours[rank]["queue_length"] >= 0).all()
        ref_steps = finals(df["ts"], df["stream"], df["queue_length"])
        mine = our_queue_finals(ta, ours[rank], rank, without_extra=True)
        assert_same_steps(mine, ref_steps, what=f"{name} rank {rank}")
        unknown = extra_pairs(ta, rank)[3]
        graph += int(unknown.sum())
        first_event += int((~unknown).sum())
        # pid and tid of each stream: those of its GPU events, as in the reference
        pairs = lambda d: set(map(tuple, d[["stream", "pid", "tid"]].drop_duplicates().to_numpy()))
        assert pairs(ours[rank]) == pairs(df)
    # graph launches (and MTIA's runFunction launches) are in our queues, not in the
    # reference's
    assert (graph > 0) == (name in GRAPH_LAUNCHES | MTIA)
    # a kernel that is the file's first event: its launch is lost in the reference
    assert (first_event > 0) == (name == "hta/trace_file_list")


def test_queue_length_summary(case):
    """count = rows (as the reference) where the queued work is the same; the statistics are
    time-weighted: checked against a direct computation over the reference's own series."""
    name, ref, ta = case
    if "queue_length_summary" not in ref or name in MTIA:
        return
    expected = ref["queue_length_summary"]
    ours = ta.get_queue_length_summary(ranks=ta.traces.ranks)
    if expected is None:
        assert ours is None
        return
    assert list(ours.columns) == list(expected.columns)
    assert list(ours.index.names) == ["rank", "stream"]
    assert list(ours.index) == list(expected.index)
    has_extra = name in EXTRA_QUEUED
    if not has_extra:
        np.testing.assert_array_equal(
            ours[("queue_length", "count")], expected[("queue_length", "count")]
        )
        # the reference's series, weighted by time
        from_ref = cc.get_queue_length_summary_from_time_series(ta, ref["queue_length_time_series"])
        for col in ["mean", "min", "max", "50%"]:
            np.testing.assert_allclose(
                ours[("queue_length", col)],
                from_ref[("queue_length", col)],
                rtol=1e-9,
                atol=1e-9 if not _ns_trace(ta) else 0.05,
            )
    for (rank, stream), _ in expected.iterrows():
        ts, v = _ref_steps(ref["queue_length_time_series"][rank], stream)
        held = np.r_[np.diff(ts), 0].astype(float)
        if held.sum() > 0 and not has_extra and not _ns_trace(ta):
            mean = float((held * v).sum() / held.sum())
            assert ours.loc[(rank, stream), ("queue_length", "mean")] == pytest.approx(mean)


def _ref_steps(df, stream):
    g = df[df["stream"] == stream]
    ((ts, v),) = finals(g["ts"], g["stream"], g["queue_length"]).values()
    return ts, v


def test_queue_length_summary_differs_where_time_weighting_matters(traces_dir):
    folder = traces_dir / "hta/trace_filter"
    ref = reference_results(folder)
    ta = TraceAnalysis(trace_dir=str(folder))
    ours = ta.get_queue_length_summary(ranks=ta.traces.ranks)
    diff = np.abs(
        ours[("queue_length", "mean")] - ref["queue_length_summary"][("queue_length", "mean")]
    )
    assert diff.max() > 0.1


def test_time_blocked_on_full_queue(case):
    name, ref, ta = case
    if "queue_length_time_series" not in ref or name in MTIA:
        return
    series = ta.get_queue_length_time_series(ranks=ta.traces.ranks)
    full = ta.get_time_spent_blocked_on_full_queue(series)
    assert list(full.columns) == [
        "rank",
        "stream",
        "duration_at_max_queue_length",
        "relative_duration_at_max_queue_length",
    ]
    exp_full = ref["time_blocked_on_full_queue"]
    assert len(full) == len(exp_full) == 0  # no queue reaches 1024 in these traces
    two = ta.get_time_spent_blocked_on_full_queue(series, max_queue_length=2)
    exp = ref["time_blocked_on_full_queue_len2"]
    tol = 1.0 if _ns_trace(ta) else 1e-6
    # the reference keeps one stream per rank: each of its rows is one of ours
    for _, row in exp.iterrows():
        if row["duration_at_max_queue_length"] <= 0:
            continue
        mine = two[(two["rank"] == row["rank"]) & (two["stream"] == row["stream"])]
        assert len(mine) == 1, (name, row.to_dict())
        if name in EXTRA_QUEUED:
            continue  # graph-launched work makes our queues longer
        assert mine["duration_at_max_queue_length"].iloc[0] == pytest.approx(
            row["duration_at_max_queue_length"], abs=tol * 50
        )
        assert mine["relative_duration_at_max_queue_length"].iloc[0] == pytest.approx(
            row["relative_duration_at_max_queue_length"], rel=1e-3, abs=1e-6
        )
    if name == "hta/trace_filter":
        assert (two.groupby("rank")["stream"].count() > 1).all()
        assert len(two) > len(exp)


# --- memory bandwidth --------------------------------------------------------------------
def _zero_length_copies(ta, rank):
    """{type: start times (us, compat clock)} of the copies of zero length."""
    from hta_fast.analysis.memory_bw import memory_rows

    trace = ta.traces[rank]
    rows, types, _ = memory_rows(trace, ta.selection.event_mask(trace))
    zero = trace.column("events", "dur")[rows] == 0
    z0 = cc.origin_ns(ta.traces)
    out = {}
    for t in np.unique(types[zero]) if zero.any() else []:
        out[t] = (trace.column("events", "ts")[rows][zero & (types == t)] - z0) / 1000.0
    return out


def test_memory_bw_time_series(case):
    name, ref, ta = case
    if "memory_bw_time_series" not in ref:
        return
    expected = ref["memory_bw_time_series"]
    ours = ta.get_memory_bw_time_series(ranks=ta.traces.ranks)
    if name in MTIA:
        assert expected and not ours
        return
    assert set(ours) == set(expected)
    stretched = 0
    for rank, df in expected.items():
        assert list(ours[rank].columns) == ["ts", "pid", "name", "memory_bw_gbps"]
        assert ours[rank]["ts"].dtype == np.float64
        mine = ours[rank]
        a = finals(
            to_ref_clock(ta, mine["ts"].to_numpy()), mine["name"].to_numpy(), mine["memory_bw_gbps"]
        )
        b = finals(df["ts"].to_numpy(), df["name"].to_numpy(), df["memory_bw_gbps"])
        zl = _zero_length_copies(ta, rank)

        near = _ns_trace(ta)

        def skip(k, t, zl=zl, a=a, near=near):
            out = np.zeros(len(t), bool)
            starts = zl.get(k)
            if starts is not None:
                i = np.searchsorted(starts, t, side="right") - 1
                out |= (i >= 0) & (t < starts[np.maximum(i, 0)] + 1)
            if near:
                # the reference rounds starts up and ends down: compare away from changes
                ch = a[k][0]
                i = np.clip(np.searchsorted(ch, t), 1, max(len(ch) - 1, 1))
                gap = np.minimum(np.abs(t - ch[i - 1]), np.abs(ch[np.minimum(i, len(ch) - 1)] - t))
                out |= gap < 2
            return out

        stretched += sum(len(v) for v in zl.values())
        assert_same_steps(a, b, tol=1e-6, skip=skip, what=f"{name} rank {rank}")
    if name == "hta/_historical/with_gpu_user_annotation":
        assert stretched > 0


def test_memory_bw_summary(case):
    name, ref, ta = case
    if "memory_bw_summary" not in ref or name in MTIA:
        return
    expected = ref["memory_bw_summary"]
    ours = ta.get_memory_bw_summary(ranks=ta.traces.ranks)
    if expected is None:
        assert ours is None
        return
    assert list(ours.columns) == list(expected.columns)
    assert list(ours.index) == list(expected.index)
    if name == "hta/_historical/with_gpu_user_annotation" or _ns_trace(ta):
        return  # zero-length copies / rounded copy ends change the times
    # count = positive rows, which depends on the order of rows at one timestamp: compare
    # the timestamps after which the bandwidth is positive, and our count with our series
    series = ta.get_memory_bw_time_series(ranks=ta.traces.ranks)
    for (rank, tname), row in ours.iterrows():
        df = series[rank]
        assert (
            row[("memory_bw_gbps", "count")]
            == ((df["name"] == tname) & (df["memory_bw_gbps"] > 0)).sum()
        )
        rdf = ref["memory_bw_time_series"][rank]
        a = finals(df["ts"], df["name"], df["memory_bw_gbps"])[tname][1]
        b = finals(rdf["ts"], rdf["name"], rdf["memory_bw_gbps"])[tname][1]
        assert (a > 1e-9).sum() == (b > 1e-9).sum()
    # max over the values held for some time (the reference's includes momentary sums of a
    # copy that ends and one that starts at the same timestamp)
    assert (ours[("memory_bw_gbps", "max")] <= expected[("memory_bw_gbps", "max")] + 1e-9).all()
    # time-weighted mean over the time copies run, from the reference's own series
    for (rank, tname), _ in expected.iterrows():
        df = ref["memory_bw_time_series"][rank]
        ts, v = finals(df["ts"], df["name"], df["memory_bw_gbps"])[tname]
        held = np.r_[np.diff(ts), 0.0] * (v > 1e-9)
        if held.sum() > 0:
            assert ours.loc[(rank, tname), ("memory_bw_gbps", "max")] == pytest.approx(
                float(v[held > 0].max()), rel=1e-9
            )
            assert ours.loc[(rank, tname), ("memory_bw_gbps", "mean")] == pytest.approx(
                float((held * v).sum() / held.sum()), rel=1e-6
            )


# --- counters in the trace ---------------------------------------------------------------
def test_counters_trace(case, tmp_path):
    """Our copy's counter events, loaded back, against the events the reference appended."""
    name, ref, ta = case
    if "counters_trace" not in ref:
        return
    expected = ref["counters_trace"]
    if name in MTIA:
        return
    res = trace_with_counters(ta.traces, out_dir=str(tmp_path), selection=ta.selection)
    paths = dict(zip(res.table["rank"].to_pylist(), res.table["path"].to_pylist()))
    zero = cc.origin_ns(ta.traces)
    for rank, df in expected.items():
        t = hta_fast.load(paths[rank])
        c = t.counters.to_pandas()
        base = t.meta.base_time_ns
        q = c[c["name"] == "Queue Length"]
        mine = pd.DataFrame(
            {
                "ts": cc._us(q["ts"].to_numpy() - zero),
                "stream": q["tid"].to_numpy(),
                "queue_length": q["value"].to_numpy().astype(np.int64),
            }
        )
        rq = df[df["name"] == "Queue Length"]
        # the reference writes absolute microseconds (its clock + its origin) as doubles
        origin = ref_us([zero - base])[0] if _ns_trace(ta) else (zero - base) // 1000
        rts = np.rint(rq["ts"].to_numpy(np.float64)).astype(np.int64) - origin
        assert_same_steps(
            our_queue_finals(ta, mine, rank, without_extra=True),
            finals(rts, rq["id"].to_numpy().astype(np.int64), rq["value"]),
            what=f"{name} rank {rank} queue counters",
        )
        m = c[c["series"] == "Memcpy BW"]
        rm = df[df["counter"] == "Memcpy BW"]
        assert set(m["name"].astype(str)) == set(rm["name"])
