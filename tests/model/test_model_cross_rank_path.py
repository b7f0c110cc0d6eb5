"""The critical path across ranks: jobs where the path is known by construction (which rank
arrives last at the all-reduce, which rank ends last), hypothesis properties over the joint
replay, and the real 8-rank DLRM trace."""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import numpy as np
import pytest
from hypothesis import given, settings

import hta_fast
from hta_fast.frame.select import Selection
from hta_fast.model.comm.collective_links import match_collectives
from hta_fast.model.graph.walk import walk_groups
from hta_fast.model.path.across_ranks import Jump, path_across_ranks
from hta_fast.model.path.across_ranks_rows import SHARES
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.replay.cross_rank import link_windows, measured_weights, replay_together
from hta_fast.model.replay.ranks import replay_ranks
from hta_fast.model.whatif.steps import what_if
from tests.conftest import TRACES_DIR
from tests.model.test_model_cross_rank import GEMM, collective_job, jobs
from tests.support.kineto_builder import KinetoBuilder, traceset

US = 1000


def tail_job(
    gemm: Sequence[int], tail: Sequence[int], data: int = 100, start: Optional[Sequence[int]] = None
) -> hta_fast.TraceSet:
    """One step, one all-reduce. Rank r's step starts at start[r] µs (default 0); its host
    launches a GEMM at +10 (it runs from +20 for gemm[r] µs) and the all-reduce at +15 (it
    starts when the GEMM ends, on the same stream); the all-reduce ends on every rank `data`
    µs after the last rank started it; the host waits in cudaStreamSynchronize from +30 until
    3 µs after that, runs `tail[r]` µs of host work (an optimizer step) and the step ends 2 µs
    later. So the last rank to arrive has the largest start + gemm, and the last to end the
    largest tail."""
    n = len(gemm)
    start = list(start) if start is not None else [0] * n
    arrive = [s + 20 + g for s, g in zip(start, gemm)]
    end = max(arrive) + data
    builders = [KinetoBuilder(rank=r, world_size=n) for r in range(n)]
    for r, b in enumerate(builders):
        s = start[r]
        step_end = end + 3 + tail[r] + 2
        b.step(0, s, step_end - s)
        b.kernel(GEMM, s + 10, s + 20, gemm[r])
        b.nccl("allreduce", s + 15, arrive[r], end - arrive[r], stream=7, nelems=1_000_000)
        b.runtime("cudaStreamSynchronize", s + 30, end + 3 - (s + 30))
        b.cpu_op("Optimizer.step#SGD.step", end + 3, tail[r])
    return traceset(builders)


# Every test of the path runs over chained steps (the default) and window by window.
CHAINED = pytest.mark.parametrize("chained", [True, False], ids=["chained", "windows"])


def path_of(ts: hta_fast.TraceSet, chained: bool = True):
    r = critical_path(ts, cross_rank=True, chained=chained)
    return r.to_pandas(), r.to_pandas("breakdown")


@CHAINED
def test_late_rank_holds_the_all_reduce_and_the_last_rank_ends_it(chained):
    # Rank 1's GEMM is twice as long: it reaches the all-reduce last; rank 2's tail is the
    # longest: it ends the step. The path: rank 1's start, its GEMM, then on rank 2 the
    # all-reduce from rank 1's arrival (one cross_rank row), rank 2's sync and tail.
    summary, rows = path_of(tail_job(gemm=[1000, 2000, 1000], tail=[300, 300, 700]), chained)
    s = summary.iloc[0]
    assert (s.end_rank, s.start_rank, s.jumps) == (2, 1, 1)
    # A window's path begins with the release from its start to the ProfilerStep (0 µs); a
    # chained step's path stops at the step's start, the ProfilerStep's.
    first = [] if chained else ["release"]
    assert rows["rank"].tolist() == [1] * (4 + len(first)) + [2] * 5
    assert rows.type.tolist() == first + [
        "cpu_nest_down",
        "launch",
        "gpu_self",
        "kernel_kernel",
        "cross_rank",
        "sync_wait",
        "cpu_sibling",
        "cpu_self",
        "cpu_nest_up",
    ]
    gemm = rows[rows.type == "gpu_self"].iloc[0]
    assert (gemm["rank"], gemm["name"], gemm.duration) == (1, GEMM, 2000 * US)
    jump = rows[rows.type == "cross_rank"].iloc[0]
    assert (jump["rank"], jump.from_rank, jump.duration, jump.bound_by) == (
        2,
        1,
        100 * US,
        "cross_rank",
    )
    assert "AllReduce" in jump["name"]
    assert rows[rows["rank"] == 2].duration.tolist()[-2] == 700 * US  # rank 2's tail
    # Its length is the joint-replayed step of the last rank: 20 + 2000 + 100 + 3 + 700 + 2 µs.
    replayed = (
        replay_ranks(tail_job([1000, 2000, 1000], [300, 300, 700]), chained=chained)
        .to_pandas()
        .replayed
    )
    assert (
        s.critical_path_length
        == rows.duration.sum()
        == s.replayed_step
        == replayed.max()
        == 2825 * US
    )
    assert s[SHARES].sum() == pytest.approx(100.0)
    assert s.cross_rank == pytest.approx(100 * 100 / 2825)
    assert s.gpu_compute_bound == pytest.approx(100 * 2000 / 2825)


@CHAINED
def test_the_late_rank_that_also_ends_last_never_jumps(chained):
    # Rank 1 arrives last and ends last: its own all-reduce takes only the data time, so its
    # path never leaves it.
    summary, rows = path_of(tail_job(gemm=[1000, 2000, 1000], tail=[300, 900, 700]), chained)
    assert (summary.end_rank[0], summary.start_rank[0], summary.jumps[0]) == (1, 1, 0)
    assert set(rows["rank"]) == {1} and "cross_rank" not in set(rows.type)
    assert summary.cross_rank[0] == 0.0
    assert rows[rows.type == "gpu_self"].duration.tolist() == [2000 * US, 100 * US]


@CHAINED
def test_a_job_with_no_late_rank_never_jumps(chained):
    summary, rows = path_of(tail_job(gemm=[1000, 1000, 1000], tail=[300, 300, 300]), chained)
    assert summary.jumps[0] == 0 and "cross_rank" not in set(rows.type)
    assert set(rows["rank"]) == {0}  # ties: the first rank
    assert summary.critical_path_length[0] == 20 * US + 1000 * US + 100 * US + 3 * US + 302 * US


@CHAINED
def test_windows_that_start_apart_count_from_where_the_path_begins(chained):
    # Rank 1 starts 400 µs before the others and arrives last (its GEMM is 1500 µs); rank 0
    # ends last. The path begins at rank 1's start: the latest end minus rank 1's start,
    # 400 µs longer than rank 0's own step.
    ts = tail_job(gemm=[1000, 1500, 1000], tail=[600, 300, 300], start=[400, 0, 400])
    summary, rows = path_of(ts, chained)
    s = summary.iloc[0]
    assert (s.end_rank, s.start_rank, s.jumps) == (0, 1, 1)
    end = 0 + 20 + 1500 + 100 + 3 + 600 + 2  # on the traces' clock, from rank 1's start
    assert s.critical_path_length == end * US == rows.duration.sum()
    assert s.replayed_step == (end - 400) * US  # rank 0's own step


@CHAINED
def test_what_if_path_equals_the_path_of_the_job_regenerated_with_the_change(chained):
    # Rank 0's GEMM twice as long in a what-if against a job recorded that way: same rows.
    base = tail_job(gemm=[1000, 900, 1100], tail=[300, 500, 400])
    predicted = what_if(base, name={"gemm": 2.0}, edit_ranks=[0], chained=chained)
    actual_summary, actual = path_of(
        tail_job(gemm=[2000, 900, 1100], tail=[300, 500, 400]), chained
    )
    p = predicted.to_pandas("path_across_ranks_breakdown")
    cols = ["rank", "type", "name", "duration", "from_rank"]
    assert p[cols].astype(str).values.tolist() == actual[cols].astype(str).values.tolist()
    summary = predicted.to_pandas("path_across_ranks")
    assert summary.critical_path_length[0] == actual_summary.critical_path_length[0]
    assert (summary.start_rank[0], summary.end_rank[0]) == (0, 1)
    # Alone, no rank's path crosses: no path across ranks table.
    assert "path_across_ranks" not in what_if(base, name={"gemm": 2.0}, cross_rank=False).tables


def test_per_rank_output_is_unchanged_by_default():
    ts = tail_job(gemm=[1000, 2000, 1000], tail=[300, 300, 700])
    r = critical_path(ts)
    assert r.table.column_names == [
        "rank",
        "step",
        "critical_path_length",
        "measured_step",
        "cpu_bound",
        "gpu_compute_bound",
        "gpu_communication_bound",
        "gpu_kernel_kernel_overhead",
        "gpu_kernel_launch_overhead",
        "data_loading",
        "untraced_host",
        "gpu_unrecorded_work",
        "one_off_stall",
    ]
    assert r["breakdown"].column_names == [
        "rank",
        "step",
        "duration",
        "type",
        "name",
        "cat",
        "pid",
        "tid",
        "stream",
        "bound_by",
    ]
    # Each rank alone: its all-reduce takes its measured time, waiting for rank 1 included.
    per_rank = r.to_pandas()
    assert (per_rank.critical_path_length == per_rank.measured_step).all()
    comm = r.to_pandas("breakdown").query("bound_by == 'gpu_communication_bound'")
    assert comm.duration.tolist() == [1100 * US, 100 * US, 1100 * US]


@CHAINED
def test_one_rank_alone_has_the_per_rank_path(chained):
    one = tail_job(gemm=[1000], tail=[300])
    summary, rows = path_of(one, chained)
    alone = critical_path(one, chained=chained)
    assert (
        summary.jumps[0] == 0
        and summary.critical_path_length[0] == alone.table["critical_path_length"][0].as_py()
    )
    assert (
        rows.drop(columns="from_rank").astype(str).values.tolist()
        == alone.to_pandas("breakdown").astype(str).values.tolist()
    )


def test_core_walk_from_a_node_outside_the_graph_is_refused():
    ((linked, together, _, _, _),) = joint_paths(tail_job(gemm=[1000, 2000], tail=[300, 300]))
    g = linked[0].graph
    with pytest.raises(ValueError, match="not a node"):
        g.core.critical_path(g.weight, together.times[0], 0, len(together.times[0]))


# --- properties ----------------------------------------------------------------------------
def _slower(linked, comm_factor: int):
    """The measured weights and after_last with the collectives' data time × comm_factor."""
    weights = measured_weights(linked)
    after = []
    for lw, w in zip(linked, weights):
        w[lw.self_edges()] *= comm_factor
        after.append(lw.after_last + (comm_factor - 1) * lw.data)
    return weights, after


def joint_paths(ts: hta_fast.TraceSet, comm_factor: int = 1, chained: bool = False):
    """Per step: the linked windows (or chains), their joint replay, the path across them and
    where each window's step ends and starts on the traces' clock, the collectives' data time
    scaled by comm_factor."""
    matched = match_collectives(ts)
    out = []
    for chains in walk_groups(ts, Selection(), chained):
        linked = link_windows([(c.rank, c.graph) for c in chains], matched)
        weights, after = _slower(linked, comm_factor)
        together = replay_together(linked, weights, after)
        nodes = [c.end_nodes(t) for c, t in zip(chains, together.times)]
        begins = [c.step_starts(t) for c, t in zip(chains, together.times)]
        stops = [c.path_stops(t) for c, t in zip(chains, together.times)]
        for k in range(len(chains[0].steps)):
            end_nodes = [int(n[k]) for n in nodes]
            starts = [int(b[k]) for b in begins]
            path = path_across_ranks(
                linked, weights, together, end_nodes, starts, [int(s[k]) for s in stops]
            )
            clock = np.array([lw.graph.window_start for lw in linked])
            ends = clock + np.array([int(t[n]) for t, n in zip(together.times, end_nodes)])
            out.append((linked, together, path, ends, clock + np.array(starts)))
    return out


def check_path(linked, together, path, ends, starts) -> None:
    assert path.length == ends.max() - starts[path.start_window]
    assert ends[path.end_window] == ends.max()
    for piece in path.pieces:
        if isinstance(piece, Jump):
            # It lands on a rank that reached the collective last (replayed, traces' clock).
            code = linked[piece.held].match[piece.collective]
            arrivals = [
                lw.graph.window_start + t[2 * lw.comm[lw.match == code]]
                for lw, t in zip(linked, together.times)
            ]
            latest = max(int(a.max()) for a in arrivals if len(a))
            assert int(arrivals[piece.last][0]) == latest
            assert piece.wait >= 0
    durations = sum(
        int(p.durations.sum()) if hasattr(p, "durations") else p.wait for p in path.pieces
    )
    assert durations == path.length


@CHAINED
@settings(max_examples=40, deadline=None)
@given(job=jobs())
def test_property_path_length_is_the_latest_replayed_step(chained, job):
    ts = collective_job(*job)
    summary, rows = path_of(ts, chained)
    replayed = replay_ranks(ts, chained=chained).to_pandas()
    # Every rank's step starts together here: the path is as long as the longest step.
    assert summary.critical_path_length.tolist() == replayed.groupby("step").replayed.max().tolist()
    assert rows.groupby("step").duration.sum().tolist() == summary.critical_path_length.tolist()
    assert np.allclose(summary[SHARES].sum(axis=1), 100.0)
    for linked, together, path, ends, starts in joint_paths(ts, chained=chained):
        check_path(linked, together, path, ends, starts)


@CHAINED
@settings(max_examples=25, deadline=None)
@given(job=jobs())
def test_property_path_holds_under_slower_collectives(chained, job):
    for linked, together, path, ends, starts in joint_paths(collective_job(*job), 7, chained):
        check_path(linked, together, path, ends, starts)


# --- the real 8-rank DLRM trace --------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def dlrm():
    return hta_fast.load_dir(TRACES_DIR / "param_dlrm_8rank")


@CHAINED
def test_real_dlrm_path_is_the_last_ranks_replayed_step(traces_dir, chained):
    summary, rows = path_of(dlrm(), chained)
    replayed = replay_ranks(dlrm(), chained=chained).to_pandas().set_index("rank").replayed
    ((linked, together, path, ends, starts),) = joint_paths(dlrm(), chained=chained)
    s = summary.iloc[0]
    # Rank 4 ends last on the traces' clock. Its host waits (cudaStreamSynchronize) for the
    # concat that its stream held behind the all-to-all (a cross_stream edge read off the
    # times: hta_fast.model.graph.held_waits), and the all-to-all ended when rank 7, the
    # last to arrive, reached it: the path jumps there once and runs back on rank 7.
    assert s.end_rank == 4 and s.start_rank == 7 and s.jumps == 1
    assert s.replayed_step == replayed[4]
    assert s.critical_path_length == rows.duration.sum()
    assert set(rows["rank"]) == {4, 7}
    jump = rows[rows.type == "cross_rank"]
    assert jump.name.str.startswith("ncclKernel_SendRecv").all() and (jump.from_rank == 7).all()
    check_path(linked, together, path, ends, starts)


@CHAINED
def test_real_dlrm_with_slow_collectives_jumps_to_the_last_arrivals(traces_dir, chained):
    # Collectives 100x longer: the path now crosses ranks at the collectives.
    ((linked, together, path, ends, starts),) = joint_paths(dlrm(), 100, chained)
    jumps = [p for p in path.pieces if isinstance(p, Jump)]
    assert sum(linked[j.last].rank != linked[j.held].rank for j in jumps) >= 2
    check_path(linked, together, path, ends, starts)
    # what_if reports the same path.
    summary = what_if(dlrm(), kernel_class={"COMM": 100.0}, chained=chained).to_pandas(
        "path_across_ranks"
    )
    assert summary.critical_path_length[0] == path.length
    assert summary.end_rank[0] == linked[path.end_window].rank
