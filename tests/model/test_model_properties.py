"""Properties of the replay on random synthetic timelines (hypothesis): one CPU thread that
launches kernels onto two streams and sometimes synchronises with one, the measured times made
by the same rules the graph encodes, so every answer is known by construction."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast import sync_calls
from hta_fast.model.graph.dependency_graph import EDGE
from tests.model.test_model_graph import build

op = st.tuples(
    st.integers(0, 50),  # gap before the call
    st.integers(1, 40),  # call duration
    st.sampled_from(["cpu", "launch", "launch", "sync"]),
    st.integers(1, 2),  # stream lane
    st.integers(1, 30),  # launch latency
    st.integers(1, 300),  # kernel duration
    st.integers(0, 10),
)  # wake-up after a sync


@st.composite
def timelines(draw):
    ops = draw(st.lists(op, min_size=1, max_size=40))
    events, stream_end = [], {1: 0, 2: 0}
    clock, corr = 0, 0
    for gap, dur, what, lane, lat, kdur, wake in ops:
        corr += 1
        start = clock + gap
        if what == "sync":
            end = max(start + dur, stream_end[lane] + wake)
            events.append(
                dict(
                    ts=start,
                    dur=end - start,
                    lane=0,
                    corr=corr,
                    sync=sync_calls.STREAM,
                    wait_lane=lane,
                )
            )
        else:
            end = start + dur
            events.append(dict(ts=start, dur=dur, lane=0, corr=corr))
            if what == "launch":
                k_start = max(start + lat, stream_end[lane])
                events.append(
                    dict(ts=k_start, dur=kdur, lane=lane, gpu=1, launch=len(events) - 1, corr=corr)
                )
                stream_end[lane] = k_start + kdur
        clock = end
    return events


@settings(max_examples=150, deadline=None)
@given(timelines())
def test_replay_reproduces_the_measured_timeline(events):
    g = build(events)
    w, _ = g.calibrate()
    assert np.array_equal(g.replay(w, 0), g.measured)


@settings(max_examples=150, deadline=None)
@given(timelines(), st.integers(2, 7))
def test_scaling_every_duration_scales_the_step(events, k):
    g = build(events)
    w, _ = g.calibrate()
    assert g.replay(w * k, 0).max() == k * g.replay(w, 0).max()


@settings(max_examples=150, deadline=None)
@given(timelines(), st.data())
def test_shortening_an_event_never_lengthens_the_step(events, data):
    g = build(events)
    w, _ = g.calibrate()
    spans = np.flatnonzero(np.isin(g.type, [EDGE["cpu_self"], EDGE["gpu_self"], EDGE["sync_self"]]))
    e = data.draw(st.sampled_from(list(spans)))
    cut = data.draw(st.integers(0, max(0, int(w[e]))))
    shorter = w.copy()
    shorter[e] -= cut
    assert g.replay(shorter, 0).max() <= g.replay(w, 0).max()


@settings(max_examples=150, deadline=None)
@given(timelines(), st.integers(1, 5))
def test_the_replayed_step_equals_the_critical_path_length(events, k):
    g = build(events)
    w, _ = g.calibrate()
    w = w * k
    t = g.replay(w, 0)
    path = g.critical_path(w, t, 0)
    assert int(w[path].sum()) == t.max()
    assert g.src[path[0]] == 2 * len(events)  # it starts at the window's start
