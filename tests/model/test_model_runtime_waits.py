"""Stream waits and event syncs in a trace without cuda_sync rows: the runtime calls carry
only cbid and correlation, so what they waited on comes from the calling thread's launch
order (hta_fast.model.graph.runtime_waits); where that cannot tell, the notes say what is
missing instead of "the trace has no sync or stream-wait events"."""

from __future__ import annotations

import numpy as np

import hta_fast
from hta_fast.frame import select
from hta_fast.model.graph.dependency_graph import EDGE
from hta_fast.model.graph.walk import walk
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.replay.steps import replay_steps
from tests.support.kineto_builder import CPU_PID, CPU_TID, KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
ADD = "void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>"


def call(b: KinetoBuilder, name: str, ts: float, dur: float = 3) -> None:
    """A runtime call as older profilers write it: cbid and correlation, nothing else."""
    b._x(
        "cuda_runtime", name, ts, dur, CPU_PID, CPU_TID, {"cbid": 147, "correlation": b.correlation}
    )
    b.correlation += 1


def producer_consumer(steps: int = 2, record: bool = True) -> KinetoBuilder:
    """Per step (µs from its start): GEMM A on stream 7 (30-830), its event recorded and
    stream 20 made to wait for it; then B and C on stream 20, B starting when A ends (830);
    then C's event recorded and the host syncing on it until C is done (1,030) + 10 µs."""
    b = KinetoBuilder()
    for s in range(steps):
        t0 = s * 1500.0
        b.step(s, t0, 1500)
        b.kernel(GEMM, t0 + 10, t0 + 30, 800, stream=7)
        if record:
            call(b, "cudaEventRecord", t0 + 20)
        call(b, "cudaStreamWaitEvent", t0 + 25)
        b.kernel(ADD, t0 + 40, t0 + 830, 100, stream=20)
        b.kernel(ADD, t0 + 50, t0 + 930, 100, stream=20)
        if record:
            call(b, "cudaEventRecord", t0 + 60)
        call(b, "cudaEventSynchronize", t0 + 65, 975)
        b.cpu_op("aten::log", t0 + 1045, 100)
    return b


def graph_of(trace):
    (chain,) = walk(trace, select.selection_of(None, None, None), True)
    return chain.graph


def edges_of(trace, graph, kind):
    names = trace.column("events", "name")
    rows = graph.rows
    on = np.flatnonzero(graph.edge_type == EDGE[kind])
    return [
        (
            trace.strings[int(names[rows[graph.src[e] // 2]])].as_py(),
            int(trace.column("events", "ts")[rows[graph.src[e] // 2]]),
            trace.strings[int(names[rows[graph.dst[e] // 2]])].as_py(),
            int(trace.column("events", "ts")[rows[graph.dst[e] // 2]]),
        )
        for e in on
    ]


def test_stream_wait_and_event_sync_from_runtime_calls_alone():
    trace = producer_consumer().load()
    assert not np.any(trace.column("events", "kind") == hta_fast.EventKind.sync)
    g = graph_of(trace)
    # one cross-stream edge per step: A's end -> B's start
    cross = edges_of(trace, g, "cross_stream")
    base = int(trace.column("events", "ts").min())
    assert sorted((a, t - base, b, u - base) for a, t, b, u in cross) == [
        (GEMM, 30_000, ADD, 830_000),
        (GEMM, 1_530_000, ADD, 2_330_000),
    ]
    # the event sync waits for C (stream 20's last work before the record), not for A
    waits = edges_of(trace, g, "sync_wait")
    assert [(a, b) for a, _, b, _ in waits] == [(ADD, "cudaEventSynchronize")] * 2
    assert {t - base for _, t, _, _ in waits} == {930_000, 2_430_000}
    assert g.waits.without_rows == 4 and g.waits.inferred == 4 and not g.waits.unresolved


def test_the_path_runs_through_the_wait_and_the_notes_say_how_it_was_found():
    trace = producer_consumer().load()
    cp = critical_path(trace)
    path = cp["breakdown"].to_pandas()
    step0 = path[path.step == 0]
    assert "cross_stream" in set(step0.type)
    # the step waits for A (800 µs of GPU compute) through B and C, not for B's launch
    assert step0[step0.type == "launch"].duration.max() < 100_000
    assert cp.table.to_pandas().gpu_compute_bound.min() > 60
    for notes in (cp.notes, replay_steps(trace).notes):
        assert not any("no sync or stream-wait events" in n for n in notes)
        assert any("tied to streams by the calling thread's launch order" in n for n in notes)


def test_without_record_calls_the_wait_is_taken_as_recorded_just_before_it():
    trace = producer_consumer(record=False).load()
    g = graph_of(trace)
    assert len(edges_of(trace, g, "cross_stream")) == 2
    assert not g.waits.records
    assert any("holds no cudaEventRecord call" in n for n in critical_path(trace).notes)


def test_what_is_missing_is_said_when_launch_order_cannot_tell():
    """A stream wait after which the thread launches nothing: its waiting stream is unknown."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel(GEMM, 10, 30, 500, stream=7)
    call(b, "cudaEventRecord", 20)
    call(b, "cudaStreamWaitEvent", 25)
    b.cpu_op("aten::log", 40, 900)
    trace = b.load()
    g = graph_of(trace)
    assert g.n_sync_edges == 0
    assert g.waits.unresolved == {"no launch on its thread after it (the waiting stream)": 1}
    (note,) = critical_path(trace).notes
    assert "the trace has no sync or stream-wait events" not in note
    assert "args hold only cbid and correlation" in note
    assert "1 with no launch on its thread after it (the waiting stream)" in note


def test_an_inference_the_times_contradict_is_dropped():
    """The kernel on the waiting stream starts before the one the inference says it waited
    for ends: that wait was for something else, and no edge is made."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel(GEMM, 10, 30, 500, stream=7)
    call(b, "cudaEventRecord", 20)
    call(b, "cudaStreamWaitEvent", 25)
    b.kernel(ADD, 40, 100, 50, stream=20)  # starts at 100, long before A ends (530)
    trace = b.load()
    g = graph_of(trace)
    assert edges_of(trace, g, "cross_stream") == []
    assert g.waits.unresolved == {"an inferred wait that the measured times contradict": 1}


def test_real_trace_with_runtime_stream_waits_only(traces_dir):
    """ns_resolution_trace: 70 cudaStreamWaitEvent calls, no cuda_sync rows, all GPU work on
    one stream: the waits order nothing, and the note says so instead of claiming the trace
    has no stream waits."""
    trace = hta_fast.load(
        traces_dir / "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    )
    notes = critical_path(trace).notes
    assert notes and not any("the trace has no sync or stream-wait events" in n for n in notes)
    assert all("70 wait on the stream that waits" in n for n in notes)


def test_real_trace_stream_waits_become_edges(traces_dir):
    """trace_diff/control: 186 stream waits, no cuda_sync rows, no cudaEventRecord calls."""
    trace = hta_fast.load(traces_dir / "hta/trace_diff/control/control.json.gz")
    g = graph_of(trace)
    assert g.waits.stream_waits == 186 and g.waits.without_rows == 186
    assert g.waits.inferred - g.waits.own_stream > 50
    assert np.count_nonzero(g.edge_type == EDGE["cross_stream"]) > 50
    # the calibrated replay still meets every measured step
    assert replay_steps(trace).table.to_pandas().error_pct.abs().max() < 1e-9
