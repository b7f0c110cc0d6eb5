"""hta_fast.udf and the recipes: user metrics against the same numbers computed another way
(numpy over the raw columns, or a built-in analysis), on synthetic traces whose answers are
known by construction and on real traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hta_fast
from hta_fast import udf
from hta_fast.analysis.temporal import temporal_breakdown
from hta_fast.recipes import sm_occupancy, tensor_cores, utilisation

US = 1000  # ns


def build(kernels, steps=(), rank=0):
    """kernels: (name, ts_us, dur_us, stream, args); steps: (n, ts_us, dur_us). Each kernel
    gets a launch at its start so it belongs to the step holding that start."""
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{n}",
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "dur": dur,
        }
        for n, ts, dur in steps
    ]
    for corr, (name, ts, dur, stream, args) in enumerate(kernels, 1):
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": 1,
                "args": {"correlation": corr},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": ts,
                "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": corr, **args},
            }
        )
    doc = {"distributedInfo": {"rank": rank, "world_size": 1}, "traceEvents": events}
    return hta_fast.load(json.dumps(doc).encode())


@udf.metric
def total_dur(dur):
    return dur.sum()


@udf.metric
def first_start(ts):
    return ts[0]


def rows(result):
    return result.table.to_pylist()


# --- known answers -------------------------------------------------------------------------
def test_by_stream_sums_and_counts():
    t = build([("a", 0, 10, 7, {}), ("b", 20, 5, 7, {}), ("c", 5, 3, 9, {})])
    assert rows(udf.apply(total_dur, t, by="stream")) == [
        {"rank": 0, "stream": 7, "events": 2, "total_dur": 15 * US},
        {"rank": 0, "stream": 9, "events": 1, "total_dur": 3 * US},
    ]


def test_rows_reach_the_metric_in_start_order():
    t = build([("late", 50, 1, 7, {}), ("early", 10, 1, 7, {})])
    assert rows(udf.apply(first_start, t))[0]["first_start"] == 10 * US


def test_by_name_and_several_keys():
    t = build([("a", 0, 1, 7, {}), ("a", 2, 2, 9, {}), ("b", 4, 4, 7, {}), ("a", 9, 8, 7, {})])
    got = {
        (r["name"], r["stream"]): r["total_dur"]
        for r in rows(udf.apply(total_dur, t, by=("name", "stream")))
    }
    assert got == {("a", 7): 9 * US, ("a", 9): 2 * US, ("b", 7): 4 * US}


def test_every_rank_of_a_trace_set():
    ts = hta_fast.TraceSet(
        {
            0: build([("a", 0, 1, 7, {})], rank=0),
            3: build([("a", 0, 4, 7, {}), ("b", 9, 4, 7, {})], rank=3),
        }
    )
    assert [(r["rank"], r["total_dur"]) for r in rows(udf.apply(total_dur, ts))] == [
        (0, 1 * US),
        (3, 8 * US),
    ]
    assert [r["rank"] for r in rows(udf.apply(total_dur, ts, ranks=[3]))] == [3]


def test_occupancy_per_step_is_duration_weighted():
    t = build(
        [
            ("k1", 1, 10, 7, {"est. achieved occupancy %": 50}),
            ("k2", 20, 30, 7, {"est. achieved occupancy %": 10}),
            ("k3", 60, 5, 7, {}),  # no value: left out
            ("k4", 101, 4, 7, {"est. achieved occupancy %": 25}),
        ],
        steps=[(1, 0, 100), (2, 100, 100)],
    )
    got = {r["step"]: r["occupancy"] for r in rows(sm_occupancy.occupancy_per_step(t))}
    assert got[1] == pytest.approx((10 * 50 + 30 * 10) / 40)
    assert got[2] == pytest.approx(25)


def test_tensor_core_share_by_name():
    t = build(
        [
            ("volta_sgemm_128x64_tn", 0, 30, 7, {}),
            ("cutlass_80_tensorop_s1688gemm_128x128", 40, 10, 7, {}),
            ("ampere_h16816gemm_256x128", 60, 20, 7, {}),
            ("fbgemm_gpu::permute_indices", 90, 100, 7, {}),  # not a GEMM
            ("elementwise_kernel", 200, 50, 7, {}),
        ]
    )
    (row,) = rows(tensor_cores.gemm_tensor_core_share(t))
    assert row["tensor_core_share"] == pytest.approx(30 / 60)
    assert np.isnan(
        rows(tensor_cores.gemm_tensor_core_share(build([("elementwise_kernel", 0, 5, 7, {})])))[0][
            "tensor_core_share"
        ]
    )


def test_utilisation_splits_events_across_buckets():
    # Buckets of 10 µs from the first start (0): [0, 10) busy 0-4 and 6-10 (8 µs, the
    # overlap counted once), [10, 20) busy 10-12, [20, 30) nothing, [30, 40) busy 35-40.
    t = build([("a", 0, 4, 7, {}), ("b", 2, 1, 9, {}), ("c", 6, 6, 7, {}), ("d", 35, 5, 7, {})])
    got = rows(utilisation.utilisation_curve(t, every=10 * US, span=2))
    assert [(r["window"], r["busy"]) for r in got] == [
        (0, 8 * US),
        (10 * US, 2 * US),
        (30 * US, 5 * US),
    ]
    assert [r["utilisation"] for r in got] == pytest.approx([0.8, 0.2, 0.5])
    # Rolling mean over two buckets; the idle bucket [20, 30) counts as 0.
    assert [r["rolling_utilisation"] for r in got] == pytest.approx([0.8, 0.5, 0.25])


def test_window_selection_clips_times():
    t = build([("a", 0, 10, 7, {}), ("b", 20, 10, 7, {})])
    (row,) = rows(udf.apply(total_dur, t, window=(5 * US, 25 * US)))
    assert row["total_dur"] == 10 * US


def test_flags_and_kinds():
    @udf.metric
    def flagged(dur, is_a):
        return dur[is_a].sum()

    t = build([("a_kernel", 0, 3, 7, {}), ("b_kernel", 5, 4, 7, {})])
    assert rows(udf.apply(flagged, t, flags={"is_a": "^a_"}))[0]["flagged"] == 3 * US
    cpu = rows(udf.apply(total_dur, t, kinds="cpu"))[0]
    assert (cpu["events"], cpu["total_dur"]) == (2, 2 * US)  # the two launches


# --- errors ---------------------------------------------------------------------------------
def test_metric_that_does_not_compile_names_the_column_and_type():
    @udf.metric
    def broken(dur, name):
        return dur.lower()

    t = build([("a", 0, 1, 7, {})])
    with pytest.raises(udf.MetricCompileError) as e:
        udf.apply(broken, t)
    msg = str(e.value)
    assert "'dur' (int64 array)" in msg and "lower" in msg and "dur.lower()" in msg
    assert "'name'" not in msg and "\n" not in msg


def test_metric_returning_an_array_is_refused():
    @udf.metric
    def not_scalar(dur):
        return dur * 2

    with pytest.raises(udf.MetricCompileError, match="one number per group"):
        udf.apply(not_scalar, build([("a", 0, 1, 7, {})]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"by": "colour"}, "cannot group by 'colour'"),
        ({"by": "window"}, "needs every="),
        ({"kinds": "gpus"}, "kinds='gpus'"),
        ({"kinds": ["kernel", "nope"]}, "unknown event kind 'nope'"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        udf.apply(total_dur, build([("a", 0, 1, 7, {})]), **kwargs)


def test_metric_failing_while_running_is_named():
    @udf.metric
    def divides_by_zero(dur):
        return dur[0] // (dur[0] - dur[0])

    with pytest.raises(udf.MetricRunError, match="divides_by_zero raised ZeroDivisionError"):
        udf.apply(divides_by_zero, build([("a", 0, 1, 7, {})]))


def test_not_a_trace():
    with pytest.raises(TypeError, match="over a Trace or a TraceSet.*got str"):
        udf.apply(total_dur, "rank0.json")


def test_metric_name_clashing_with_a_key():
    with pytest.raises(ValueError, match="metric name 'stream' is also a result column"):
        udf.apply(
            udf.metric(name="stream")(lambda dur: dur.sum()),
            build([("a", 0, 1, 7, {})]),
            by="stream",
        )


def test_unknown_column():
    with pytest.raises(ValueError, match="'duration' is not a column"):
        udf.apply(lambda duration: duration.sum(), build([("a", 0, 1, 7, {})]))


# --- real traces ----------------------------------------------------------------------------
REAL = [
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "param_dlrm_8rank/worker3.pt.trace.json.gz",
]


@pytest.fixture(scope="module", params=REAL)
def real(request, traces_dir):
    path = traces_dir / request.param
    if not path.exists():
        pytest.fail(f"{path} is missing", pytrace=False)
    return hta_fast.load(str(path))


def test_real_sum_per_stream_and_step_matches_numpy(real):
    kind = real.column("events", "kind")
    gpu = np.isin(kind, udf.KIND_SETS["gpu"])
    dur = np.maximum(real.column("events", "dur"), 0)[gpu]
    got = rows(udf.apply(total_dur, real, by=("stream", "step")))
    stream = real.column("events", "stream")[gpu]
    step = real.column("events", "step")[gpu]
    for r in got:  # null keys are the core's -1
        sel = (stream == (r["stream"] if r["stream"] is not None else -1)) & (
            step == (r["step"] if r["step"] is not None else -1)
        )
        assert (r["events"], r["total_dur"]) == (sel.sum(), dur[sel].sum())
    assert sum(r["events"] for r in got) == gpu.sum()


def test_real_busy_time_matches_temporal_breakdown(real):
    temporal = temporal_breakdown(real).table.to_pylist()[0]
    busy = temporal["kernel_time"] - temporal["idle_time"]
    (row,) = rows(udf.apply(utilisation.busy_time, real))
    assert row["busy"] == busy
    curve = utilisation.utilisation_curve(real, every=1_000_000).table
    assert sum(curve["busy"].to_pylist()) == busy


def test_real_occupancy_matches_numpy(real):
    got = rows(sm_occupancy.occupancy_per_step(real))
    arg_rows = real.column("kernel_args", "row")
    occ = real.column("kernel_args", "est_achieved_occupancy").astype(np.float64)
    kernel = real.column("events", "kind")[arg_rows] == hta_fast.EventKind.kernel
    dur = np.maximum(real.column("events", "dur")[arg_rows], 0)
    step = real.column("events", "step")[arg_rows]
    ok = kernel & ~np.isnan(occ)
    for r in got:
        sel = ok & (step == (r["step"] if r["step"] is not None else -1))
        if dur[sel].sum() > 0:
            assert r["occupancy"] == pytest.approx((dur[sel] * occ[sel]).sum() / dur[sel].sum())
        else:
            assert np.isnan(r["occupancy"])


@pytest.mark.slow  # compiles with Numba in child processes
def test_compiled_metric_is_cached_across_processes(tmp_path, traces_dir):
    """A second process loads the recipe's metric and its driver from Numba's disk cache."""
    script = (
        "import json, sys, hta_fast\n"
        "from hta_fast.recipes import utilisation\n"
        "from hta_fast.udf import driver\n"
        "t = hta_fast.load(sys.argv[1])\n"
        "utilisation.utilisation_curve(t, every=1_000_000)\n"
        "run = next(iter(driver._DRIVERS.values()))\n"
        "print(json.dumps([sum(run.stats.cache_hits.values()),\n"
        "                  sum(utilisation.busy_time.compiled.stats.cache_hits.values())]))\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, str(traces_dir / REAL[0])],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0] == [0, 0] and runs[1][0] >= 1 and runs[1][1] >= 1
