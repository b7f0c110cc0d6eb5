"""Replaying all ranks of a step together: a collective ends on no rank before the last rank has
reached it. Synthetic jobs made by that rule (arrival times known by construction), the real
8-rank DLRM trace, and hypothesis properties of the joint replay."""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.frame.select import Selection
from hta_fast.model.comm.collective_cost import fit_collectives
from hta_fast.model.comm.collective_links import match_collectives
from hta_fast.model.graph.dependency_graph import EDGE
from hta_fast.model.graph.walk import walk_groups
from hta_fast.model.replay.cross_rank import link_windows, replay_together
from hta_fast.model.replay.ranks import replay_ranks
from hta_fast.model.whatif.steps import what_if
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import KinetoBuilder, traceset

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def collective_job(
    compute: Sequence[Sequence[Sequence[int]]],
    data: Sequence[Sequence[int]],
    first_kernel: str = GEMM,
) -> hta_fast.TraceSet:
    """compute[rank][step][j]: µs of the GEMM before the step's j-th all-reduce, which moves
    data for data[step][j] µs. Each step, on every rank: the host launches GEMM j at
    10 + 20j µs and all-reduce j 5 µs later (each reaches the GPU 10 µs after its launch),
    on one stream; all-reduce j ends data µs after the last rank starts it; the host waits in
    cudaStreamSynchronize (returns 3 µs after the last all-reduce) and the step ends 5 µs
    later. Every rank's step starts at the same time. first_kernel names each step's first
    compute kernel (an embedding lookup for a DLRM-like job)."""
    ranks = len(compute)
    builders = [KinetoBuilder(rank=r, world_size=ranks) for r in range(ranks)]
    t0 = 0
    for s in range(len(data)):
        n = len(data[s])
        free = [t0] * ranks
        gemm, comm = [[] for _ in range(ranks)], [[] for _ in range(ranks)]
        for j in range(n):
            starts = []
            for r in range(ranks):
                g_launch = t0 + 10 + 20 * j
                g_start = max(g_launch + 10, free[r])
                gemm[r].append((g_launch, g_start, compute[r][s][j]))
                starts.append(max(g_launch + 15, g_start + compute[r][s][j]))
            end = max(starts) + data[s][j]
            for r in range(ranks):
                comm[r].append((t0 + 15 + 20 * j, starts[r], end - starts[r]))
                free[r] = end
        step_end = max(free) + 3 + 5
        for r, b in enumerate(builders):
            b.step(s, t0, step_end - t0)
            for j, ((gl, gs, gd), (cl, cs, cd)) in enumerate(zip(gemm[r], comm[r])):
                b.kernel(first_kernel if j == 0 else GEMM, gl, gs, gd)
                b.nccl("allreduce", cl, cs, cd, stream=7, nelems=1_000_000)
            sync_start = t0 + 10 + 20 * n
            b.runtime("cudaStreamSynchronize", sync_start, free[r] + 3 - sync_start)
        t0 = step_end + 10
    return traceset(builders)


def steps_of(ts: hta_fast.TraceSet) -> np.ndarray:
    return replay_ranks(ts).to_pandas().measured.to_numpy()


BASE = [[[1000, 300]], [[800, 500]], [[900, 200]]]  # 3 ranks, 1 step, 2 all-reduces
DATA = [[100, 50]]


def test_the_job_replays_exactly_together_and_not_alone():
    r = replay_ranks(collective_job(BASE, DATA)).to_pandas()
    assert (r.error_pct == 0).all() and (r.collectives == 2).all()
    # Alone, a rank's collectives take only their data time: every rank waited at one of
    # them (rank 0 arrives last at the first, rank 1 at the second), so every step shrinks.
    assert (r.no_cross_rank < r.measured).all() and r.passes.iloc[0] >= 2


@pytest.mark.parametrize("rank, factor", [(1, 1.5), (0, 0.5), (2, 2.0), (0, 1.0)])
def test_slowing_one_rank_delays_the_others_by_the_known_amount(rank, factor):
    job = collective_job(BASE, DATA)
    changed = [
        [[int(c * factor) if r == rank else c for c in st_] for st_ in per_rank]
        for r, per_rank in enumerate(BASE)
    ]
    predicted = what_if(job, name={"gemm": factor}, edit_ranks=[rank]).to_pandas()
    actual = steps_of(collective_job(changed, DATA))
    assert predicted.predicted.tolist() == actual.tolist()
    # Per rank alone, only the edited rank would change.
    alone = what_if(job, name={"gemm": factor}, edit_ranks=[rank], cross_rank=False).to_pandas()
    others = alone["rank"] != rank
    assert (alone.predicted[others] == alone.measured[others]).all()


def test_known_arrival_arithmetic():
    # Rank 1's GEMMs 800 -> 1600 µs, 500 -> 1000: it now arrives last at the first all-reduce
    # (1620 µs instead of rank 0's 1020: +600) and, as before, at the second (1000 µs after
    # the first ends instead of 500: +500), so every rank's step grows by 1100 µs.
    r = what_if(collective_job(BASE, DATA), name={"gemm": 2.0}, edit_ranks=[1]).to_pandas()
    growth = (r.predicted - r.measured).to_numpy()
    assert np.all(growth == 1100 * 1000)
    assert list(r.held_by.iloc[[0, 2]]) == [1, 1] and r.bound_after.iloc[0] == "waiting_for_rank"


def test_four_ranks_two_steps():
    compute = [[[700, 100], [400]], [[500, 300], [900]], [[650, 120], [300]], [[600, 90], [500]]]
    data = [[60, 40], [80]]
    job = collective_job(compute, data)
    assert (replay_ranks(job).to_pandas().error_pct == 0).all()
    slower = [[[c * 2 for c in s] if r == 3 else s for s in per] for r, per in enumerate(compute)]
    predicted = what_if(job, kernel_class={"COMP": 2.0}, edit_ranks=[3]).to_pandas().predicted
    assert predicted.tolist() == steps_of(collective_job(slower, data)).tolist()


def _last_comm_end(trace: hta_fast.Trace, step: int) -> int:
    """The end (ns, the trace's clock) of the step's last communication kernel."""
    kind_comm = trace.column("events", "kernel_class") == hta_fast.schema.KernelClass.COMM
    rows = np.flatnonzero(kind_comm & (trace.column("events", "step") == step))
    return int((trace.column("events", "ts")[rows] + trace.column("events", "dur")[rows]).max())


@pytest.mark.parametrize("chained", [True, False])
def test_the_wait_for_another_rank_counts_from_the_steps_own_start(chained):
    # 3 ranks × 2 steps; rank 1's GEMMs doubled make it the last to reach every all-reduce.
    # On the other ranks each step's path begins at its last all-reduce's end, which rank 1
    # held: the time before it, from the step's own start, is waiting_for_rank, chained as
    # window by window. The prediction meets the job recorded so (its steps' ts, its
    # all-reduce ends), so the wait is known by construction there; a chain's second step
    # starts well after the chain's start, so a wait counted from the chain's start (or a
    # window's formula applied to a chain) would exceed the step.
    compute = [[[300, 100], [200]], [[400, 300], [500]], [[350, 120], [250]]]
    data = [[60, 40], [80]]
    slower = [[[c * 2 for c in s] if r == 1 else s for s in per] for r, per in enumerate(compute)]
    actual = collective_job(slower, data)
    r = what_if(
        collective_job(compute, data), name={"gemm": 2.0}, edit_ranks=[1], chained=chained
    ).to_pandas()
    assert r.predicted.tolist() == steps_of(actual).tolist()
    step_ts = dict(
        zip(actual[0].column("steps", "step").tolist(), actual[0].column("steps", "ts").tolist())
    )
    for row in r.itertuples():
        if row.rank == 1:  # the last to arrive waits for no one
            assert row.waiting_for_rank == 0 and pd.isna(row.held_by)
            continue
        waited = _last_comm_end(actual[row.rank], row.step) - step_ts[row.step]
        assert 0 < waited < row.predicted
        assert row.waiting_for_rank == pytest.approx(100.0 * waited / row.predicted)
        assert row.held_by == 1


@pytest.mark.parametrize("chained", [True, False])
def test_a_collective_carried_into_the_next_step_counts_for_the_step_that_launched_it(chained):
    # Step 0's all-reduce runs past the step's end into step 1's window (50 µs in); step 1
    # launches one of its own. Each counts once, for its own step, and the replay is exact,
    # window by window as chained. Step 1's window carries what is left of step 0's
    # all-reduce: tied to the other rank as if it were all of it (its data time, 110 µs,
    # on the 50 µs left), it replayed step 1 30 % long, and counted it again.
    builders = [KinetoBuilder(rank=r, world_size=2) for r in range(2)]
    for r, b in enumerate(builders):
        b.step(0, 0, 100)
        b.kernel(GEMM, 5, 10, 20 + 10 * r)
        b.nccl("allreduce", 10, 40 + 10 * r, 120 - 10 * r, stream=7)
        b.step(1, 110, 200)
        b.nccl("allreduce", 120, 170, 40, stream=7)
        b.runtime("cudaStreamSynchronize", 130, 85)
    r = replay_ranks(traceset(builders), chained=chained).to_pandas()
    assert (r.error_pct == 0).all()
    assert r.collectives.tolist() == [1, 1, 1, 1]


def test_faster_link_shortens_every_rank():
    job = collective_job(BASE, DATA)
    r = what_if(job, kernel_class={"COMM": 0.5}).to_pandas()
    # The data time halves on the collectives' path: (100 + 50) / 2 µs off every step.
    assert ((r.measured - r.predicted) == 75_000).all()


@functools.lru_cache(maxsize=None)
def dlrm():
    return hta_fast.load_dir(TRACES_DIR / "param_dlrm_8rank")


def test_real_8_rank_dlrm_replays_exactly_together(traces_dir):
    r = replay_ranks(dlrm()).to_pandas()
    assert len(r) == 8 and (r.collectives == 8).all()
    assert r.error_pct.max() == 0.0  # stated: 0 % on every rank (the calibration is exact)


def test_real_dlrm_slower_host_on_one_rank_delays_all(traces_dir):
    r = what_if(dlrm(), cpu=1.5, edit_ranks=[7]).to_pandas()
    assert (r.predicted > r.measured).all()
    assert set(r.held_by.dropna()) == {7}
    alone = what_if(dlrm(), cpu=1.5, edit_ranks=[7], cross_rank=False).to_pandas()
    assert (alone.predicted[alone["rank"] != 7] == alone.measured[alone["rank"] != 7]).all()
    # A faster host everywhere never slows a rank down.
    assert (what_if(dlrm(), cpu=0.5).to_pandas().predicted <= r.measured).all()


# --- properties of the joint replay --------------------------------------------------------
@st.composite
def jobs(draw):
    ranks = draw(st.integers(2, 4))
    data = draw(
        st.lists(st.lists(st.integers(1, 200), min_size=1, max_size=3), min_size=1, max_size=2)
    )
    compute = [[[draw(st.integers(1, 2000)) for _ in s] for s in data] for _ in range(ranks)]
    return compute, data


def joint(ts):
    matched = match_collectives(ts)
    groups = []
    for group in walk_groups(ts, Selection(), chained=False):
        linked = link_windows([(w.rank, w.graph) for w in group], matched)
        weights = []
        for lw in linked:
            w = lw.graph.weight.copy()
            w[lw.self_edges()] = lw.data
            weights.append(w)
        groups.append((linked, weights))
    return groups


@settings(max_examples=40, deadline=None)
@given(jobs())
def test_property_replay_reproduces_the_measured_steps(job):
    r = replay_ranks(collective_job(*job)).to_pandas()
    assert (r.error_pct == 0).all()


@settings(max_examples=40, deadline=None)
@given(jobs(), st.integers(2, 5))
def test_property_scaling_every_duration_scales_every_step(job, k):
    for linked, weights in joint(collective_job(*job)):
        base = replay_together(linked, weights).times
        scaled = replay_together(
            linked, [w * k for w in weights], [lw.after_last * k for lw in linked]
        ).times
        assert [int(t.max()) * k for t in base] == [int(t.max()) for t in scaled]


@settings(max_examples=40, deadline=None)
@given(jobs(), st.data())
def test_property_shortening_any_event_never_lengthens_any_rank(job, data):
    for linked, weights in joint(collective_job(*job)):
        i = data.draw(st.integers(0, len(linked) - 1))
        types = linked[i].graph.edge_type
        spans = np.flatnonzero(
            np.isin(types, [EDGE["cpu_self"], EDGE["gpu_self"], EDGE["sync_self"]])
        )
        e = int(data.draw(st.sampled_from(list(spans))))
        cut = data.draw(st.integers(0, max(0, int(weights[i][e]))))
        shorter = [w.copy() for w in weights]
        shorter[i][e] -= cut
        before = replay_together(linked, weights).times
        after = replay_together(linked, shorter).times
        assert all(a.max() <= b.max() for a, b in zip(after, before))


def test_cli_together_and_edit_ranks_equal_the_model(traces_dir):
    import json

    from click.testing import CliRunner

    from hta_fast.cli import cli

    folder = str(traces_dir / "param_dlrm_8rank")

    def tables(*args):
        res = CliRunner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return json.loads(res.output[: res.output.rindex("}") + 1])["tables"]

    assert (
        tables("replay", folder, "--together")["replay_ranks"]
        == replay_ranks(dlrm()).table.to_pylist()
    )
    assert (
        tables("whatif", folder, "--cpu", "1.5", "--edit-ranks", "7")["what_if"]
        == what_if(dlrm(), cpu=1.5, edit_ranks=[7]).table.to_pylist()
    )
    assert (
        tables("whatif", folder, "--cpu", "1.5", "--edit-ranks", "7", "--no-cross-rank")["what_if"]
        == what_if(dlrm(), cpu=1.5, edit_ranks=[7], cross_rank=False).table.to_pylist()
    )


def test_bandwidth_edit_across_ranks():
    # Every all-reduce has the same size: one size cannot tell latency from bandwidth, so
    # the fit moves the bandwidth only and the machine's latency stays the file's; twice
    # the bandwidth changes each collective's data time by the model's ratio, on every rank
    # alike, between COMM x 0.5 (all bandwidth) and no change.
    job = collective_job(BASE, DATA)
    by_bandwidth = what_if(job, collective_bandwidth=2.0).to_pandas().predicted
    halved = what_if(job, kernel_class={"COMM": 0.5}).to_pandas().predicted
    measured = what_if(job).to_pandas().measured
    assert (halved <= by_bandwidth).all() and (by_bandwidth < measured).all()
    notes = fit_collectives(job).notes
    assert any("fitted intra_node_gbps;" in n for n in notes)
