"""The dependency graph on hand-built timelines whose edges and replay are known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast import _core, sync_calls
from hta_fast.model.graph.dependency_graph import EDGE, EDGE_TYPES, skip_mask


def build(events, window_start=0):
    """events: dicts with ts, dur, lane, gpu, and optional parent, launch, corr, sync, wait_lane,
    wait_corr, target_lane."""

    def col(key, default, dtype):
        return np.array([e.get(key, default) for e in events], dtype)

    g = _core.graph.build(
        col("ts", 0, np.int64),
        col("dur", 0, np.int64),
        col("lane", 0, np.int64),
        col("gpu", 0, np.uint8),
        col("parent", -1, np.int64),
        col("launch", -1, np.int64),
        col("corr", -1, np.int64),
        col("sync", 0, np.uint8),
        col("wait_lane", -1, np.int64),
        col("wait_corr", -1, np.int64),
        col("target_lane", -1, np.int64),
        window_start,
    )
    return g


def edges(g):
    return {(int(s), int(d), EDGE_TYPES[t]) for s, d, t in zip(g.src, g.dst, g.type)}


# A step: P [0, 100] on the CPU holds a launch L [10, 20] of kernel K [30, 80] on stream lane 1
# and a stream sync S [25, 90] that waits for K. Rows: P=0, L=1, S=2, K=3.
STEP = [
    dict(ts=0, dur=100, lane=0),
    dict(ts=10, dur=10, lane=0, parent=0, corr=5),
    dict(ts=25, dur=65, lane=0, parent=0, corr=6, sync=sync_calls.STREAM, wait_lane=1),
    dict(ts=30, dur=50, lane=1, gpu=1, launch=1, corr=5),
]


def test_edges_follow_the_rules():
    g = build(STEP)
    P, L, S, K = 0, 1, 2, 3
    s, e = (lambda r: 2 * r), (lambda r: 2 * r + 1)
    assert edges(g) == {
        (s(P), s(L), "cpu_nest_down"),
        (e(L), s(S), "cpu_sibling"),
        (e(S), e(P), "cpu_nest_up"),
        (s(L), e(L), "cpu_self"),
        (s(S), e(S), "sync_self"),
        (s(K), e(K), "gpu_self"),
        (s(L), s(K), "launch"),
        (e(K), e(S), "sync_wait"),
        (8, s(P), "release"),
    }


def test_replay_reproduces_and_the_path_runs_through_the_kernel():
    g = build(STEP)
    w, binding = g.calibrate()
    t = g.replay(w, 0)
    assert list(t[:8]) == [0, 100, 10, 20, 25, 90, 30, 80]
    path = g.critical_path(w, t, 0)
    assert [EDGE_TYPES[g.type[p]] for p in path] == [
        "release",
        "cpu_nest_down",
        "launch",
        "gpu_self",
        "sync_wait",
        "cpu_nest_up",
    ]
    # The sync waited 10 ns after the kernel ended; the launch took 20 ns to reach the GPU.
    by_type = {EDGE_TYPES[g.type[p]]: int(w[p]) for p in path}
    assert by_type["sync_wait"] == 10 and by_type["launch"] == 20


def test_a_shorter_kernel_shortens_the_step_through_the_sync():
    g = build(STEP)
    w, _ = g.calibrate()
    w = w.copy()
    w[(g.type == EDGE["gpu_self"])] -= 20
    t = g.replay(w, 0)
    assert t[2 * 2 + 1] == 70 and t.max() == 80  # S ends 20 ns earlier, and so does P


def test_without_the_sync_edge_the_host_does_not_wait():
    g = build(STEP)
    w, _ = g.calibrate()
    t = g.replay(w, skip_mask("sync_wait"))
    # The non-binding part of the sync call is its typical non-waiting length: none here, 0.
    assert t[5] == 25 and t.max() == 80


def test_cross_stream_edge_orders_the_waiting_stream():
    # A kernel on lane 1 (corr 1), an event recorded after it (corr 2), a stream wait on lane 2
    # (corr 3) and a kernel launched on lane 2 after it (corr 4), which waited for the first.
    ev = [
        dict(ts=0, dur=5, lane=0, corr=1),  # launch A
        dict(ts=6, dur=1, lane=0, corr=2),  # cudaEventRecord
        dict(
            ts=8,
            dur=1,
            lane=0,
            corr=3,
            sync=sync_calls.STREAM_WAIT,
            wait_lane=1,
            wait_corr=2,
            target_lane=2,
        ),
        dict(ts=10, dur=5, lane=0, corr=4),  # launch B
        dict(ts=10, dur=100, lane=1, gpu=1, launch=0, corr=1),  # A
        dict(ts=112, dur=10, lane=2, gpu=1, launch=3, corr=4),  # B waits for A
    ]
    g = build(ev)
    assert (2 * 4 + 1, 2 * 5, "cross_stream") in edges(g)
    w, _ = g.calibrate()
    assert g.replay(w, 0).max() == 122
    assert g.replay(w, skip_mask("cross_stream")).max() < 122


def test_device_sync_waits_for_every_stream():
    ev = [
        dict(ts=0, dur=1, lane=0, corr=1),
        dict(ts=2, dur=1, lane=0, corr=2),
        dict(ts=4, dur=100, lane=0, corr=3, sync=sync_calls.DEVICE),
        dict(ts=5, dur=50, lane=1, gpu=1, launch=0, corr=1),
        dict(ts=6, dur=90, lane=2, gpu=1, launch=1, corr=2),
    ]
    g = build(ev)
    assert {(9, 5, "sync_wait"), (7, 5, "sync_wait")} <= edges(g)


def test_synchronous_copy_waits_for_its_own_copy():
    ev = [
        dict(ts=0, dur=50, lane=0, corr=1, sync=sync_calls.OWN_COPY),
        dict(ts=10, dur=30, lane=1, gpu=1, launch=0, corr=1),
    ]
    assert (3, 1, "sync_wait") in edges(build(ev))


def test_bad_columns_are_one_line_errors():
    with pytest.raises(ValueError, match="dur must be one-dimensional with 2 rows"):
        _core.graph.build(
            np.zeros(2, np.int64),
            np.zeros(3, np.int64),
            *[np.zeros(2, np.int64)] * 1,
            np.zeros(2, np.uint8),
            *[np.full(2, -1, np.int64)] * 3,
            np.zeros(2, np.uint8),
            *[np.full(2, -1, np.int64)] * 3,
            0,
        )
    with pytest.raises(ValueError, match="points past the events"):
        build([dict(ts=0, dur=1, lane=0, parent=7)])


def test_sync_call_names():
    kinds = sync_calls.sync_kind_of_names(
        [
            "cudaStreamSynchronize",
            "cudaEventSynchronize",
            "cudaDeviceSynchronize",
            "cudaMemcpy",
            "cudaMemcpyAsync",
            "cudaStreamWaitEvent",
            "cudaEventQuery",
            "hipStreamSynchronize",
        ]
    )
    assert list(kinds) == [
        sync_calls.STREAM,
        sync_calls.EVENT,
        sync_calls.DEVICE,
        sync_calls.OWN_COPY,
        sync_calls.NONE,
        sync_calls.STREAM_WAIT,
        sync_calls.NONE,
        sync_calls.STREAM,
    ]


def test_a_worker_thread_is_woken_and_joined():
    # Main thread (lane 0): P [0, 1000] holds A [10, 90] and B [100, 900], which waits for a
    # worker (lane 5) running W1 [120, 500] and W2 [510, 880]. Rows: P=0, A=1, B=2, W1=3, W2=4.
    ev = [
        dict(ts=0, dur=1000, lane=0),
        dict(ts=10, dur=80, lane=0, parent=0),
        dict(ts=100, dur=800, lane=0, parent=0),
        dict(ts=120, dur=380, lane=5),
        dict(ts=510, dur=370, lane=5),
    ]
    g = build(ev)
    assert {(3, 6, "cross_thread"), (9, 5, "thread_join"), (4, 5, "join_tail")} <= edges(g)
    w, _ = g.calibrate()
    assert np.array_equal(g.replay(w, 0), g.measured)
    shorter = w.copy()
    shorter[(g.src == 8) & (g.dst == 9)] -= 200  # W2 takes 170 instead of 370
    t = g.replay(shorter, 0)
    assert t[5] == 700 and t[1] == 800  # B waits 200 less, and P ends 200 earlier


def test_a_worker_joined_in_a_gap_between_children_holds_the_next_child():
    # Main thread (lane 0): P [0, 1000] holds A [10, 90] and, after a gap with nothing traced
    # (`backward()` waiting for the autograd thread), C [900, 980]. The worker (lane 5) runs
    # W1 [120, 500] and W2 [510, 880]. Rows: P=0, A=1, C=2, W1=3, W2=4. The join leads to C's
    # start, and the gap before C is a wait, not a rigid 810 ns.
    ev = [
        dict(ts=0, dur=1000, lane=0),
        dict(ts=10, dur=80, lane=0, parent=0),
        dict(ts=900, dur=80, lane=0, parent=0),
        dict(ts=120, dur=380, lane=5),
        dict(ts=510, dur=370, lane=5),
    ]
    g = build(ev)
    assert {(9, 4, "thread_join"), (3, 4, "join_tail")} <= edges(g)
    assert (9, 1, "thread_join") not in edges(g)  # not to P's end
    w, _ = g.calibrate()
    assert np.array_equal(g.replay(w, 0), g.measured)
    shorter = w.copy()
    shorter[(g.src == 8) & (g.dst == 9)] -= 200  # W2 takes 170 instead of 370
    t = g.replay(shorter, 0)
    assert t[4] == 700 and t[1] == 800  # C starts 200 earlier, and P ends 200 earlier


def test_graph_rows_must_be_increasing():
    import hta_fast
    from hta_fast.model.graph.dependency_graph import build_graph
    from tests.conftest import TRACES_DIR

    trace = hta_fast.load(TRACES_DIR / "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz")
    with pytest.raises(ValueError, match="graph rows must be increasing"):
        build_graph(trace, np.array([3, 1]))
