"""The critical path over chained steps (docs/model.md, "Chains"): each step's path runs back
from its end to its replayed start, so it is as long as the replayed step; on a backlogged job
it runs through the previous step's kernels at their replayed times; on the real traces it
agrees with replay_steps step for step."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings

import hta_fast
from hta_fast.frame import select
from hta_fast.model.graph.dependency_graph import EDGE, GPU_WORK
from hta_fast.model.graph.walk import walk
from hta_fast.model.path.critical_path import BOUND_BY, critical_path
from hta_fast.model.path.step_paths import step_paths
from hta_fast.model.replay.ranks import replay_ranks
from hta_fast.model.replay.steps import replay_steps
from hta_fast.model.whatif.edits import Edits
from hta_fast.model.whatif.steps import what_if
from hta_fast.model.whatif.weights import edited_weights
from tests.conftest import TRACES_DIR
from tests.model.test_model_carry import backlogged_job
from tests.model.test_model_chain import job, jobs
from tests.model.test_model_cross_rank import collective_job


def gpu_rows(trace: hta_fast.Trace) -> np.ndarray:
    """The rows of the trace's GPU work, by start."""
    rows = np.flatnonzero(np.isin(trace.column("events", "kind"), GPU_WORK))
    return rows[np.argsort(trace.column("events", "ts")[rows], kind="stable")]


def check_paths(res, replayed) -> None:
    """Each (rank, step)'s path is as long as its replayed step; rows add up; shares to 100."""
    s, b = res.to_pandas(), res.to_pandas("breakdown")
    assert s[["rank", "step"]].values.tolist() == replayed[["rank", "step"]].values.tolist()
    assert s.critical_path_length.tolist() == replayed.replayed.tolist()
    assert b.groupby(["rank", "step"]).duration.sum().tolist() == s.critical_path_length.tolist()
    assert np.allclose(s[BOUND_BY].sum(axis=1), 100.0)


# --- the backlogged job: a step's path runs through the previous step's kernels -----------
@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_the_next_steps_path_runs_through_the_carried_kernels_at_their_replayed_times(factor):
    # GPU bound, one step behind the host: step k's kernels run in step k + 1's window. Chained,
    # step k + 1's path goes back through them (stream order) to where step k + 1 starts, at
    # their replayed times: with the kernels halved, those of the job regenerated so.
    trace, actual = backlogged_job(400), backlogged_job(400 * factor)
    (chain,) = walk(trace, select.Selection())
    g = chain.graph
    w = edited_weights(g, trace, Edits(name={"gemm": factor}))
    times = g.replay(w)
    spans = chain.spans(times)
    assert spans.tolist() == replay_steps(actual).to_pandas().measured.tolist()
    step_of = trace.column("events", "step")[g.rows]
    # The same kernel in the regenerated job: the same place in start order.
    ours, theirs = gpu_rows(trace), gpu_rows(actual)
    regenerated_start = dict(zip(ours.tolist(), actual.column("events", "ts")[theirs].tolist()))
    starts = chain.step_starts(times)
    for k, (path, counts) in enumerate(step_paths(chain, w, times)):
        assert int(counts.sum()) == spans[k]
        kernels = g.src[path[g.edge_type[path] == EDGE["gpu_self"]]] // 2
        carried = kernels[step_of[kernels] == k - 1]
        if k == 0:
            assert not len(carried)
            continue
        # Most of step k's GPU time on the path is step k - 1's backlog, from its start on.
        assert len(carried) >= 5
        assert times[2 * carried[0]] <= starts[k] < times[2 * carried[0] + 1]
        for ev in carried:
            assert times[2 * ev] + g.window_start == regenerated_start[int(g.rows[ev])]
    # As a result table: each step after the first starts with the carried kernel crossing its
    # start (counted from the start), with no release from the window's start.
    b = critical_path(trace).to_pandas("breakdown")
    firsts = b.groupby("step").head(1)
    assert firsts.type.tolist()[1:] == ["gpu_self"] * 5
    assert "release" not in set(b[b.step > 0].type)
    windows = critical_path(trace, chained=False).to_pandas("breakdown")
    assert windows.groupby("step").head(1).type.tolist()[1:] == ["release"] * 5


def test_the_chained_path_is_the_replayed_step_on_the_backlogged_job():
    trace = backlogged_job(400)
    check_paths(critical_path(trace), replay_steps(trace).to_pandas())
    # With the measured weights both modes give each step its measured length.
    assert (
        critical_path(trace).table["critical_path_length"].to_pylist()
        == critical_path(trace, chained=False).table["critical_path_length"].to_pylist()
    )


@settings(max_examples=40, deadline=None)
@given(jobs)
def test_property_path_length_is_the_replayed_step_of_a_chain(spec):
    trace = job(*spec)
    check_paths(critical_path(trace), replay_steps(trace).to_pandas())


def test_selecting_later_steps_chains_them_from_the_first_selected():
    trace = backlogged_job(400)
    res = critical_path(trace, steps=[2, 3, 4])
    check_paths(res, replay_steps(trace, steps=[2, 3, 4]).to_pandas())
    # Step 2 begins its chain: its carried work hangs from its start as in its window, whose
    # path is the same but for the 0 µs release from the window's start (the chained walk
    # stops at the step's start).
    cols = ["type", "name", "duration", "bound_by"]
    chained = res.to_pandas("breakdown").query("step == 2")[cols]
    window = critical_path(trace, steps=[2], chained=False).to_pandas("breakdown")[cols]
    assert window.type.tolist()[0] == "release" and window.duration.tolist()[0] == 0
    assert chained.astype(str).values.tolist() == window[1:].astype(str).values.tolist()


# --- across ranks, chained: the what-if's predicted path --------------------------------------
def test_what_if_path_across_ranks_over_chains_is_the_regenerated_jobs():
    # 4 ranks × 2 steps; rank 3's compute twice as long in both: the predicted path of each
    # step across the ranks is the path of the job recorded that way, row for row.
    compute = [[[700, 100], [400]], [[500, 300], [900]], [[650, 120], [300]], [[600, 90], [500]]]
    data = [[60, 40], [80]]
    slower = [[[c * 2 for c in s] if k == 3 else s for s in per] for k, per in enumerate(compute)]
    predicted = what_if(collective_job(compute, data), kernel_class={"COMP": 2.0}, edit_ranks=[3])
    actual = critical_path(collective_job(slower, data), cross_rank=True)
    cols = ["step", "rank", "type", "name", "duration", "from_rank"]
    p, a = predicted.to_pandas("path_across_ranks_breakdown"), actual.to_pandas("breakdown")
    assert p[cols].astype(str).values.tolist() == a[cols].astype(str).values.tolist()
    ps, s = predicted.to_pandas("path_across_ranks"), actual.to_pandas()
    assert ps.critical_path_length.tolist() == s.critical_path_length.tolist()
    assert len(ps) == 2 and (ps.start_rank == 3).all() and (ps.jumps >= 1).all()
    # Each step's path: from its latest end back to the replayed start of the rank it begins
    # on, all of whose steps start together here, so it is the longest predicted step.
    longest = predicted.to_pandas().groupby("step").predicted.max()
    assert ps.critical_path_length.tolist() == longest.tolist()
    assert (
        replay_ranks(collective_job(slower, data)).to_pandas().groupby("step").replayed.max()
        == longest
    ).all()


# --- the real traces ------------------------------------------------------------------------
STEPPED = ["hta/trace_diff/test", "hta/ns_resolution_trace", "hta/nccl_parser_config"]


@functools.lru_cache(maxsize=None)
def load(folder):
    return hta_fast.load_dir(TRACES_DIR / folder)


@pytest.mark.parametrize("folder", STEPPED)
def test_chained_path_of_every_step_is_its_replayed_step(folder):
    trace = load(folder)
    res = critical_path(trace)
    check_paths(res, replay_steps(trace).to_pandas())
    windows = critical_path(trace, chained=False).to_pandas()
    chained = res.to_pandas()
    # With the measured weights both are the measured step; only the rows at a step's start
    # differ (docs/model.md, "Chains"), by well under a hundredth of a percent of the path.
    assert chained.critical_path_length.tolist() == windows.critical_path_length.tolist()
    diff = (chained[BOUND_BY].fillna(0) - windows[BOUND_BY].fillna(0)).abs().values.max()
    assert diff < 0.01
    b = res.to_pandas("breakdown")
    assert "release" not in set(b[b.step > b.step.min()].type)


def test_the_overlay_follows_the_chained_path():
    from hta_fast.model.path.overlay import ARROWS, critical_path_trace

    trace = backlogged_job(400)
    doc = critical_path_trace(trace)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    (chain,) = walk(trace, select.Selection())
    g = chain.graph
    assert len(slices) == len(g.rows)  # each event once, with its own step
    assert [e["args"]["step"] for e in slices] == trace.column("events", "step")[g.rows].tolist()
    paths = [p for p, _ in step_paths(chain, g.weight, g.replay())]
    edges = np.concatenate(paths)
    arrows = [
        e
        for e in edges.tolist()
        if g.src[e] // 2 < len(g.rows) and g.edge_type[e] in [EDGE[t] for t in ARROWS]
    ]
    assert sum(e["ph"] == "s" for e in doc["traceEvents"]) == len(arrows) > 0
    on_path = np.zeros(len(g.rows), bool)
    ends = np.concatenate([g.src[edges], g.dst[edges]]) // 2
    on_path[ends[ends < len(g.rows)]] = True
    assert [e["args"]["critical"] for e in slices] == on_path.astype(int).tolist()
    # Step 1's path, drawn, runs through step 0's kernels.
    through = g.src[paths[1]] // 2
    through = through[through < len(g.rows)]
    from_step0 = through[trace.column("events", "step")[g.rows[through]] == 0]
    assert len(from_step0) and all(slices[i]["args"]["critical"] for i in from_step0)
    # Window by window, the carried kernels are drawn with each window holding them.
    windows = critical_path_trace(trace, chained=False)
    assert sum(e["ph"] == "X" for e in windows["traceEvents"]) > len(slices)


@pytest.mark.parametrize("chained", [True, False])
@pytest.mark.parametrize("name", ["param_dlrm_8rank", "hta/critical_path/cuda_event_sync"])
def test_time_on_path_per_event_is_the_breakdown_summed(traces_dir, name, chained):
    """breakdown=False gives, per rank, each event name's time on the paths per category:
    the breakdown rows summed, without a row per edge (a rank's windows summed together)."""
    traces = hta_fast.load_dir(traces_dir / name)
    full = critical_path(traces, chained=chained)
    light = critical_path(traces, chained=chained, breakdown=False)
    assert light.table.equals(full.table) and "breakdown" not in light.tables
    keys = ["rank", "name", "bound_by"]
    want = (
        full["breakdown"]
        .group_by(keys, use_threads=False)
        .aggregate([("duration", "sum"), ("duration", "count")])
        .sort_by([(k, "ascending") for k in keys])
    )
    got = light["on_path"].sort_by([(k, "ascending") for k in keys])
    assert got.column("duration").to_pylist() == want.column("duration_sum").to_pylist()
    assert got.column("edges").to_pylist() == want.column("duration_count").to_pylist()
    assert got.column("name").to_pylist() == want.column("name").to_pylist()


def test_a_ranks_windows_sum_into_one_row_per_event():
    t = job([[100.0, 50.0], [80.0], [120.0, 30.0]], [20.0, 40.0, 10.0])
    full = critical_path(t, chained=False)
    light = critical_path(t, chained=False, breakdown=False)["on_path"]
    assert full.table.num_rows == 3  # three windows, three paths
    keys = list(zip(*(light.column(k).to_pylist() for k in ("rank", "name", "bound_by"))))
    assert len(keys) == len(set(keys))  # one row per (rank, name, category)
    assert sum(light.column("duration").to_pylist()) == sum(
        full["breakdown"].column("duration").to_pylist()
    )
