"""Property tests of the link pass's per-thread sweeps against brute-force models: the
parent of every CPU event (nesting) and the event each flow endpoint binds to. Events come
in random file order with many ties, so the per-thread ordering (csrc/trace/thread_order.cc,
which merges nearly-sorted stretches) is exercised on every shape of input."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hta_fast

event = st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(0, 12))  # tid, ts, dur


def key(e, row):
    return (e[1], -e[2], row)


def model_parent(evs):
    out = []
    for r, e in enumerate(evs):
        best = None
        for p, q in enumerate(evs):
            if p == r or q[0] != e[0] or key(q, p) > key(e, r):
                continue
            if q[1] <= e[1] and (q[1] + q[2] > e[1] or q[1] == e[1]):
                if best is None or key(q, p) > key(evs[best], best):
                    best = p
        out.append(-1 if best is None else best)
    return out


def model_bound(evs, tid, ts):
    cands = [p for p, q in enumerate(evs) if q[0] == tid and q[1] <= ts <= q[1] + q[2]]
    if not cands:
        return -1
    best = max(cands, key=lambda p: key(evs[p], p))
    same = [p for p in cands if evs[p][1:] == evs[best][1:]]
    return min(same)


def trace_text(evs, flows):
    items = [
        {"ph": "X", "cat": "cpu_op", "name": f"e{i}", "pid": 1, "tid": tid, "ts": ts, "dur": dur}
        for i, (tid, ts, dur) in enumerate(evs)
    ]
    items += [
        {"ph": "s", "cat": "fwdbwd", "name": "f", "id": i, "pid": 1, "tid": tid, "ts": ts}
        for i, (tid, ts) in enumerate(flows)
    ]
    return json.dumps({"traceEvents": items}).encode()


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    evs=st.lists(event, max_size=14),
    flows=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 45)), max_size=6),
    threads=st.integers(1, 2),
)
def test_parent_and_flow_binding_match_models(evs, flows, threads):
    t = hta_fast.load(trace_text(evs, flows), threads=threads)
    assert t.column("events", "parent").tolist() == model_parent(evs)
    got = t.column("flows", "event").tolist()
    assert got == [model_bound(evs, tid, ts) for tid, ts in flows]


def nearly_sorted(stretches):
    """Sorted stretches one after another: a thread's events as the profiler writes them,
    with a few descents, which the per-thread order merges rather than sorts."""
    out = []
    for stretch in stretches:
        out += sorted(stretch, key=lambda e: (e[1], -e[2]))
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    stretches=st.lists(
        st.lists(
            st.tuples(st.integers(0, 1), st.integers(0, 400), st.integers(0, 30)),
            min_size=24,
            max_size=60,
        ),
        min_size=2,
        max_size=4,
    ),
    threads=st.integers(1, 2),
)
def test_nearly_sorted_threads_nest_as_the_model(stretches, threads):
    evs = nearly_sorted(stretches)
    t = hta_fast.load(trace_text(evs, []), threads=threads)
    assert t.column("events", "parent").tolist() == model_parent(evs)


def test_many_flows_bind_the_same_on_two_threads():
    # Above 65536 flows, binding is split over threads: same result as one thread.
    n = 40_000
    evs = [(i % 3, 10 * i, 5 + i % 7) for i in range(n)]
    flows = [(i % 3, 10 * i + (i % 13)) for i in range(2 * n)]
    text = trace_text(evs, flows)
    one = hta_fast.load(text, threads=1)
    two = hta_fast.load(text, threads=2)
    assert one.flows.num_rows == 2 * n
    assert one.column("flows", "event").tolist() == two.column("flows", "event").tolist()
    assert one.stat("flow_unbound") == two.stat("flow_unbound") > 0
    sample = list(range(0, 2 * n, 997))
    got = one.column("flows", "event")
    # spot-check against the model on a slice of the thread (the model is quadratic)
    for i in sample[:20]:
        tid, ts = flows[i]
        lo = max(0, ts // 10 - 20)
        window = [(p, evs[p]) for p in range(lo, min(n, ts // 10 + 2))]
        cands = [p for p, q in window if q[0] == tid and q[1] <= ts <= q[1] + q[2]]
        expect = max(cands, key=lambda p: key(evs[p], p)) if cands else -1
        assert got[i] == expect


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    evs=st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 2000), st.integers(0, 60)),
        min_size=40,
        max_size=150,
    ),
    flow_stretches=st.lists(
        st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2100)), max_size=25),
        min_size=1,
        max_size=3,
    ),
)
def test_flows_mostly_in_time_order_bind_as_the_model(evs, flow_stretches):
    # A thread's flows come mostly in time order: each is searched for from where the one
    # before it on the thread ended, forwards by galloping, or back over the thread when it
    # comes earlier. Long threads and stretches of ordered flows make the gallops long.
    flows = [f for stretch in flow_stretches for f in sorted(stretch, key=lambda f: f[1])]
    t = hta_fast.load(trace_text(evs, flows), threads=1)
    got = t.column("flows", "event").tolist()
    assert got == [model_bound(evs, tid, ts) for tid, ts in flows]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    blocks=st.permutations(range(6)),
    sizes=st.lists(st.integers(1, 40), min_size=6, max_size=6),
    threads=st.integers(1, 2),
)
def test_blocks_written_out_of_place_nest_as_the_model(blocks, sizes, threads):
    # Stretches that do not interleave at all (blocks of a thread's events written out of
    # place): merged by copying whole blocks found by galloping.
    evs = []
    for b in blocks:
        evs += [(0, 1000 * b + 10 * k, 5 + k % 3) for k in range(sizes[b])]
    t = hta_fast.load(trace_text(evs, []), threads=threads)
    assert t.column("events", "parent").tolist() == model_parent(evs)


def model_step(windows, ts):
    """The step of a CPU event starting at ts: that of the window starting last at or before
    it, when the event starts inside it (or at its very start)."""
    before = [w for w in windows if w[0] <= ts]
    if not before:
        return -1
    start, dur, step = max(before)
    return step if ts < start + dur or ts == start else -1


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    starts=st.lists(st.integers(0, 500), min_size=1, max_size=8, unique=True),
    durs=st.lists(st.integers(0, 120), min_size=8, max_size=8),
    evs=st.lists(event, max_size=40),
    ordered=st.booleans(),
)
def test_cpu_events_take_the_step_whose_window_holds_their_start(starts, durs, evs, ordered):
    # Events in time order (the usual case: each looked up from the window before) or in
    # random order (searched for), on threads of their own and the steps'.
    windows = [(s * 3, durs[k], k) for k, s in enumerate(starts)]
    evs = [(tid, ts * 50, dur) for tid, ts, dur in evs]
    if ordered:
        evs.sort(key=lambda e: e[1])
    items = [
        {"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 0}
        | {"ts": start, "dur": dur}
        for start, dur, step in windows
    ]
    items += [
        {"ph": "X", "cat": "cpu_op", "name": f"e{i}", "pid": 1, "tid": tid, "ts": ts, "dur": dur}
        for i, (tid, ts, dur) in enumerate(evs)
    ]
    t = hta_fast.load(json.dumps({"traceEvents": items}).encode(), threads=1)
    want = [model_step(windows, start) for start, _, _ in windows]
    want += [model_step(windows, ts) for _, ts, _ in evs]
    assert t.column("events", "step").tolist() == want


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    stretches=st.lists(st.tuples(st.integers(0, 2), st.integers(4, 12)), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
)
def test_threads_written_in_long_stretches_nest_as_the_model(stretches, seed):
    # Consecutive events on one thread, thread after thread: few spans for the events,
    # which the per-thread grouping places without reading the threads again.
    evs, k = [], seed
    for tid, count in stretches:
        for _ in range(count):
            k = (k * 1103515245 + 12345) % 2**31
            evs.append((tid, k % 300, k % 17))
    flows = [(tid, (ts + 3) % 320) for tid, ts, _ in evs[::5]]
    t = hta_fast.load(trace_text(evs, flows), threads=1)
    assert t.column("events", "parent").tolist() == model_parent(evs)
    assert t.column("flows", "event").tolist() == [model_bound(evs, a, b) for a, b in flows]
