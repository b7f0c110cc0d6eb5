"""Consecutive profiler steps replayed as one chain (hta_fast.model.graph.walk) on random jobs whose
GPU runs behind its host (hypothesis): the measured times are made by the rules the graph
encodes, so the replay must reproduce them, a what-if must land on the job regenerated with the
change, and the chain must keep the replay's properties step by step."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.frame import select
from hta_fast.model.graph.dependency_graph import EDGE
from hta_fast.model.graph.walk import chains_kept, walk
from hta_fast.model.path.step_paths import step_paths
from hta_fast.model.replay.steps import replay_steps
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
LATENCY, WAKE = 10.0, 3.0  # launch to GPU, kernel end to the sync's return (µs)


def job(
    kernels: Sequence[Sequence[float]],
    host: Sequence[float],
    scale: float = 1.0,
    waited: Optional[list[bool]] = None,
) -> hta_fast.Trace:
    """Step s launches kernels[s] (µs, × scale) 10 µs apart on one stream, records an event,
    waits for the previous step's event (cudaEventSynchronize) and does host[s] µs of host
    work. A kernel starts LATENCY after its launch or when the stream is free; the sync
    returns WAKE after the waited kernel's end (or after 5 µs if that is later). waited, when
    given, gets whether each kernel after the first was queued behind the one before and
    whether each sync waited for its kernel: whether the GPU decided every wait."""
    b = KinetoBuilder()
    t0, free, prev = 0.0, -1.0, None
    last_end: list[float] = []
    for s, (ks, h) in enumerate(zip(kernels, host)):
        launches = []
        for j, k in enumerate(ks):
            launch = t0 + 10 + 10 * j
            if waited is not None and (s or j):
                waited.append(free > launch + LATENCY)  # queued behind the kernel before
            start = max(launch + LATENCY, free)
            launches.append((launch, start, k * scale))
            free = start + k * scale
        last_end.append(free)
        record_ts = t0 + 10 + 10 * len(ks)
        sync_start = record_ts + 5
        sync_end = sync_start + 5 if prev is None else max(sync_start + 5, last_end[s - 1] + WAKE)
        if prev is not None and waited is not None:
            waited.append(last_end[s - 1] + WAKE > sync_start + 5)
        work = sync_end + 2
        end = work + h + 1
        b.step(s, t0, end - t0)
        for launch, start, dur in launches:
            b.kernel(GEMM, launch, start, dur)
        record = b.event_record(record_ts)  # after the step's kernels were launched
        if prev is not None:
            b.event_synchronize(sync_start, sync_end, prev)
        b.cpu_op("aten::host_work", work, h)
        prev, t0 = record, end
    return b.load()


jobs = st.integers(2, 5).flatmap(
    lambda n: st.tuples(
        # Kernels a multiple of 4 µs: the scaled job's times stay whole µs, which the trace's
        # epoch-based µs timestamps hold exactly.
        st.lists(
            st.lists(st.integers(1, 150).map(lambda x: 4 * x), min_size=1, max_size=5),
            min_size=n,
            max_size=n,
        ),
        st.lists(st.integers(1, 400), min_size=n, max_size=n),
    )
)


def chain_of(trace: hta_fast.Trace):
    (chain,) = walk(trace, select.Selection())
    return chain


@settings(max_examples=60, deadline=None)
@given(jobs)
def test_the_chain_reproduces_every_step(spec):
    r = replay_steps(job(*spec)).to_pandas()
    assert (r.error_pct == 0).all() and (r.gpu_start_error_max == 0).all()
    assert (
        r.measured.tolist() == replay_steps(job(*spec), chained=False).to_pandas().measured.tolist()
    )  # the same steps as each window alone measures them


@settings(max_examples=60, deadline=None)
@given(jobs, st.sampled_from([0.25, 0.5, 2.0, 3.0]))
def test_scaled_kernels_land_on_the_regenerated_job(spec, factor):
    # Exact where the GPU decides every wait in both jobs (it runs behind the host: each
    # kernel queued behind the one before, each sync waiting for its kernel). Elsewhere the
    # calibration, not the chain, sets the limit: a wait is charged to its latest source, and
    # one that never bound in the measured job has no measured cost to keep (docs/model.md,
    # "Weights").
    base_waits: list[bool] = []
    scaled_waits: list[bool] = []
    job(*spec, waited=base_waits)
    job(*spec, scale=factor, waited=scaled_waits)
    assume(all(base_waits) and all(scaled_waits))
    predicted = what_if(job(*spec), name={"gemm": factor}).to_pandas().predicted
    actual = replay_steps(job(*spec, scale=factor)).to_pandas().measured
    assert predicted.tolist() == actual.tolist()


@settings(max_examples=60, deadline=None)
@given(jobs, st.integers(2, 7))
def test_scaling_every_duration_scales_every_step(spec, k):
    chain = chain_of(job(*spec))
    g = chain.graph
    assert (chain.spans(g.replay(g.weight * k)) == k * chain.spans(g.replay())).all()


@settings(max_examples=60, deadline=None)
@given(jobs, st.data())
def test_shortening_an_event_never_ends_a_step_later(spec, data):
    # A step may grow when the one before it shrinks (it starts earlier and waits for the same
    # backlog); no step ends later.
    chain = chain_of(job(*spec))
    g = chain.graph
    spans = np.flatnonzero(
        np.isin(g.edge_type, [EDGE["cpu_self"], EDGE["gpu_self"], EDGE["sync_self"]])
    )
    e = data.draw(st.sampled_from(list(spans)))
    cut = data.draw(st.integers(0, max(0, int(g.weight[e]))))
    w = g.weight.copy()
    w[e] -= cut
    assert (chain.step_ends(g.replay(w)) <= chain.step_ends(g.replay())).all()


@settings(max_examples=60, deadline=None)
@given(jobs, st.integers(1, 4))
def test_each_steps_critical_path_spans_the_step(spec, k):
    chain = chain_of(job(*spec))
    g = chain.graph
    w = g.weight * k
    t = g.replay(w)
    for (_, counts), span in zip(step_paths(chain, w, t), chain.spans(t)):
        assert int(counts.sum()) == span


def test_ranks_replay_together_as_chains():
    # 4 ranks × 2 steps, 2 and 1 all-reduces: every rank's chain replayed jointly reproduces
    # each step, as the windows did, and rank 3's slower compute in both steps lands on the
    # regenerated job on every rank (its step 0 holds every rank's step 1 start).
    from hta_fast.model.replay.ranks import replay_ranks
    from tests.model.test_model_cross_rank import collective_job

    compute = [[[700, 100], [400]], [[500, 300], [900]], [[650, 120], [300]], [[600, 90], [500]]]
    data = [[60, 40], [80]]
    job = collective_job(compute, data)
    r = replay_ranks(job).to_pandas()
    assert (r.error_pct == 0).all() and len(r) == 8
    assert r.measured.tolist() == replay_ranks(job, chained=False).to_pandas().measured.tolist()
    assert r.collectives.tolist() == [2] * 4 + [1] * 4
    slower = [[[c * 2 for c in s] if k == 3 else s for s in per] for k, per in enumerate(compute)]
    predicted = what_if(job, kernel_class={"COMP": 2.0}, edit_ranks=[3]).to_pandas()
    assert (
        predicted.predicted.tolist()
        == replay_ranks(collective_job(slower, data)).to_pandas().measured.tolist()
    )
    assert (predicted.predicted > predicted.measured).all()


def test_a_step_without_gpu_work_of_its_own_replays():
    # trace_compare/test: step 1010 launches nothing, while GPU work without a recorded
    # launch runs in its window (finding what it carries used to fail on it).
    import pytest

    from tests.conftest import TRACES_DIR

    path = TRACES_DIR / "hta/trace_compare/test/test.json.gz"
    if not path.exists():
        pytest.skip("trace_compare/test is not available")
    trace = hta_fast.load(path)
    for chained in (True, False):
        r = replay_steps(trace, chained=chained).to_pandas()
        assert r.gpu_events.tolist() == [1, 0] and (r.error_pct == 0).all()


def test_kept_chains_are_built_once_per_selection_and_read_only():
    t = job([[100.0, 50.0], [80.0], [120.0, 30.0]], [20.0, 40.0, 10.0])
    everything, two = select.Selection(), select.Selection(steps=[1, 2])
    fresh = [id(c) for c in walk(t, everything)]
    assert fresh != [id(c) for c in walk(t, everything)] or len(fresh) == 0
    assert all(c.graph.weight.flags.writeable for c in walk(t, everything))
    before = what_if(t, name={"gemm": 0.5}).table
    with chains_kept():
        first = list(walk(t, everything))
        assert [id(c) for c in walk(t, everything)] == [id(c) for c in first]
        assert [id(c) for c in walk(t, two)] != [id(c) for c in first]  # another selection
        assert not first[0].graph.weight.flags.writeable and not first[0].members.flags.writeable
        with chains_kept():  # an inner block shares the outer one's
            assert [id(c) for c in walk(t, everything)] == [id(c) for c in first]
        kept = what_if(t, name={"gemm": 0.5}).table
        assert what_if(t, name={"gemm": 0.5}).table.equals(kept)
    assert kept.equals(before)
    assert [id(c) for c in walk(t, everything)] != [id(c) for c in first]  # let go
