"""One owner for every nanosecond of a step on the GPU (model.path.owners.wait_owners): the
owners partition each step on real traces, on the kinds built by construction, and on
random traces (hypothesis); and the critical path, the doctor and the owners give one figure
for the same wait."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.doctor import diagnose
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.path.owners import OWNERS, wait_owners
from hta_fast.model.whatif.steps import what_if
from tests.model.test_wait_ranks import LATE, START, _job
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.paths import SHARED_TRACES as SHARED
from tests.support.synthetic_traces import HELD_FROM_US, HELD_TO_US, held_by_unrecorded_builder

REAL = [
    "modern/sglang_decode",
    "modern/vllm_decode_full",
    "modern/particle_transformer",
    "modern/mi300_ddp_resnet18",
    "modern/b200_eager",
    "modern/flux1_iteration",
    "param_dlrm_8rank",
]


def _partitions(table) -> None:
    t = table.to_pandas()
    owned = t[OWNERS]
    assert (owned >= 0).all().all()
    np.testing.assert_array_equal(owned.sum(axis=1).to_numpy(), t["step_ns"].to_numpy())


def _load(rel: str):
    path = SHARED / rel
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return hta_fast.load_dir(str(path))


@pytest.mark.parametrize("rel", REAL)
def test_owners_partition_every_step_of_real_traces(rel):
    r = wait_owners(_load(rel))
    _partitions(r.table)
    iv = r["intervals"].to_pandas().sort_values(["rank", "step", "start"])
    for _, one in iv.groupby(["rank", "step"], dropna=False):  # they tile the step
        assert (one["start"].to_numpy()[1:] == one["end"].to_numpy()[:-1]).all()


def test_sglang_one_figure_for_the_unrecorded_hold():
    ts = _load("modern/sglang_decode")
    owners = wait_owners(ts).table.to_pylist()[0]
    path = critical_path(ts).table.to_pylist()[0]
    doctor = diagnose(ts).finding("unrecorded_gpu_work").cost_ns_per_step
    step = owners["step_ns"]
    assert owners["gpu_unrecorded_work"] == pytest.approx(doctor, rel=0.001)
    assert path["gpu_unrecorded_work"] / 100 * step == pytest.approx(doctor, rel=0.001)
    assert max(OWNERS, key=lambda o: owners[o]) == "gpu_unrecorded_work"


def test_particle_transformer_one_figure_for_the_one_off_stall():
    ts = _load("modern/particle_transformer")
    owners = wait_owners(ts).table.to_pylist()[0]
    path = critical_path(ts).table.to_pylist()[0]
    doctor = diagnose(ts).finding("one_off_stall").cost_ns_per_step
    assert max(OWNERS, key=lambda o: owners[o]) == "one_off_stall"
    assert owners["one_off_stall"] == pytest.approx(doctor, rel=0.01)
    assert path["one_off_stall"] / 100 * owners["step_ns"] == pytest.approx(doctor, rel=0.01)
    assert owners["gpu_kernel_launch_overhead"] < 0.001 * owners["step_ns"]


def test_param_dlrm_the_wait_for_rank_7():
    ts = _load("param_dlrm_8rank")
    r = wait_owners(ts)
    iv = r["intervals"].to_pandas()
    waits = iv[iv.owner == "cross_rank"]
    by = (waits.end - waits.start).groupby(waits.waited_for).sum()
    assert by.idxmax() == 7 and by[7] > 0.7 * by.sum()
    ri = diagnose(ts).finding("rank_imbalance")
    owned = r.table.to_pandas()["cross_rank"].mean()
    assert owned == pytest.approx(ri.cost_ns_per_step, rel=0.01)


def test_the_late_rank_by_construction():
    r = wait_owners(_job())
    iv = r["intervals"].to_pandas()
    on0 = iv[(iv["rank"] == 0) & (iv.owner == "cross_rank")]
    assert set(on0.waited_for) == {LATE}
    per_step = (on0.end - on0.start).groupby(on0.step).sum()
    assert np.allclose(per_step, (START[LATE] - START[0]) * 1000)
    assert not ((iv["rank"] == LATE) & (iv.owner == "cross_rank")).any()


def test_the_unrecorded_hold_by_construction():
    trace = held_by_unrecorded_builder().load()
    row = wait_owners(trace).table.to_pylist()[0]
    doctor = diagnose(traceset([held_by_unrecorded_builder()]))
    assert row["gpu_unrecorded_work"] == doctor.finding("unrecorded_gpu_work").cost_ns_per_step


GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


@st.composite
def traces(draw):
    """One step: kernels launched by one thread in order (launch calls 2-40 µs apart, 1-20 µs
    long) onto 1-2 streams, each starting 1-300 µs after its launch and after the kernel
    before it on its stream ended; sometimes a stream sync waiting for all of them."""
    n = draw(st.integers(1, 12))
    b = KinetoBuilder()
    t, stream_end = 1.0, {7: 0.0, 8: 0.0}
    end = 0.0
    for _ in range(n):
        t += draw(st.integers(2, 40))
        launch_dur = draw(st.integers(1, 20))
        stream = draw(st.sampled_from([7, 8]))
        start = max(t + draw(st.integers(1, 300)), stream_end[stream] + draw(st.integers(0, 50)))
        dur = draw(st.integers(1, 400))
        b.kernel(GEMM, t, start, dur, stream=stream, launch_dur=launch_dur)
        t += launch_dur
        stream_end[stream] = start + dur
        end = max(end, start + dur)
    host_end = t
    if draw(st.booleans()):
        b.runtime("cudaStreamSynchronize", t + 1, max(end - t, 1) + 2)
        host_end = t + 1 + max(end - t, 1) + 2
    b.step(0, 0, max(host_end, end) + draw(st.integers(1, 100)))
    return b


@settings(max_examples=40, deadline=None)
@given(traces())
def test_owners_partition_random_steps_and_an_edit_saves_no_more_than_it_owns(b):
    """The GPU's owners partition the step. What an edit can save is bounded on the critical
    path, the step's other partition: launches costing nothing save at most the path's time
    held by launches (their latency, their calls). The GPU's owners do not bound it where
    the host ends the step: launch calls made while the GPU was busy own no GPU time, yet
    removing them ends the host's step earlier."""
    trace = b.load()
    _partitions(wait_owners(trace).table)
    path = critical_path(trace)["breakdown"].to_pandas()
    held = path[(path.bound_by == "gpu_kernel_launch_overhead") | (path.name == "cudaLaunchKernel")]
    t = what_if(trace, zero_launch_overhead=True)["totals"].to_pylist()[0]
    assert t["replayed"] - t["predicted"] <= int(held.duration.sum())


def test_the_owners_command(tmp_path):
    import json

    from click.testing import CliRunner

    from hta_fast.cli.app import cli

    path = tmp_path / "held.json"
    path.write_bytes(held_by_unrecorded_builder().to_bytes())
    res = CliRunner().invoke(cli, ["-q", "owners", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    text = json.dumps(doc)
    assert "gpu_unrecorded_work" in text and "intervals" in text


@pytest.mark.parametrize(
    "rel",
    [
        "modern/b200_eager",
        "modern/flux1_iteration",
        "modern/mi300_ddp_resnet18",
        "param_dlrm_8rank",
    ],
)
def test_no_path_edge_counts_negative_time(rel):
    """Calls that overlap on a thread make a negative gap between them; on the path such an
    edge counts nothing (b200_eager had 7 rows, -119 µs, before), so no share is negative."""
    r = critical_path(_load(rel))
    b = r["breakdown"].to_pandas()
    assert (b.duration >= 0).all()
    s = r.to_pandas()
    from hta_fast.model.path.bounds import BOUND_BY

    assert (s[BOUND_BY].fillna(0) >= 0).all().all()
    lengths = b.groupby(["rank", "step"], dropna=False).duration.sum().to_numpy()
    np.testing.assert_array_equal(np.sort(lengths), np.sort(s.critical_path_length.to_numpy()))


def test_overlapping_calls_by_construction():
    """A thread whose second call starts 30 µs before its first ends, then a kernel: the
    path counts the overlap once, and every edge's time is 0 or more."""
    b = KinetoBuilder()
    b.step(0, 0, 1_000)
    b.cpu_op("aten::first", 10, 200)
    b.cpu_op("aten::second", 180, 100)  # overlaps the first by 30 µs
    b.kernel(GEMM, 290, 300, 600)
    r = critical_path(b.load())
    d = r["breakdown"].to_pandas().duration
    assert (d >= 0).all() and d.sum() == r.table.to_pylist()[0]["critical_path_length"]


def _ddp(steps: int = 3) -> KinetoBuilder:
    """DDP-like steps of 20 ms: 8 ms of compute kernels on stream 7, then an 11 ms all-reduce
    on stream 20 (held behind the compute by the times alone), the host waiting for it in a
    stream sync."""
    b = KinetoBuilder(world_size=1)
    for s in range(steps):
        t0 = s * 20_000
        b.step(s, t0, 20_000)
        for j in range(16):
            b.kernel(GEMM, t0 + 10 + 20 * j, t0 + 400 + 500 * j, 500)
        b.nccl("allreduce", t0 + 400, t0 + 8_400, 11_000)
        b.runtime("cudaStreamSynchronize", t0 + 500, 19_000)
    return b


def test_each_stream_partitioned_the_compute_stream_waits_for_the_all_reduce():
    r = wait_owners(_ddp().load(), by_stream=True)
    t = r.to_pandas()
    _partitions(r.table)
    compute, comm = t[t.stream == 7], t[t.stream == 20]
    assert len(compute) == len(comm) == 3
    # the compute stream: its own 8 ms, then idle while the all-reduce runs (11 ms)
    assert (compute.gpu_compute_bound == 8_000_000).all()
    assert (compute.gpu_communication_bound == 11_000_000).all()
    # the communication stream: its 11 ms, idle before it while compute ran (8 ms)
    assert (comm.gpu_communication_bound == 11_000_000).all()
    assert (comm.gpu_compute_bound == 8_000_000).all()
    iv = r["intervals"].to_pandas()
    assert iv.stream.notna().all()
    whole = wait_owners(_ddp().load()).to_pandas()
    assert whole.stream.isna().all()


@pytest.mark.parametrize(
    "rel, cause",
    [
        ("modern/sglang_decode", "unrecorded_gpu_work"),
        ("modern/particle_transformer", "one_off_stall"),
        ("param_dlrm_8rank", "rank_imbalance"),
        ("param_dlrm_8rank", "exposed_communication"),
    ],
)
def test_a_findings_cost_is_its_owners_time(rel, cause):
    """A cause declares the owners it is (its Cause record); the doctor's cost and those
    owners' time are one figure (within 10 %) where the cause is one set of owners; asked
    for (owners=True), as a walk of every gap costs a tenth of the diagnosis."""
    f = diagnose(_load(rel), owners=True).finding(cause)
    assert f.owned_ns_per_step is not None
    assert f.owned_ns_per_step == pytest.approx(f.cost_ns_per_step, rel=0.1)


def test_owners_are_asked_for(tmp_path):
    import json

    from click.testing import CliRunner

    from hta_fast.cli.app import cli

    path = tmp_path / "held.json"
    path.write_bytes(held_by_unrecorded_builder().to_bytes())
    plain = json.loads(CliRunner().invoke(cli, ["-q", "doctor", "--json", str(path)]).stdout)
    asked = json.loads(
        CliRunner().invoke(cli, ["-q", "doctor", "--json", "--owners", str(path)]).stdout
    )
    assert all(f["owned_ns_per_step"] is None for f in plain["findings"])
    got = {f["cause"]: f["owned_ns_per_step"] for f in asked["findings"]}
    assert got["unrecorded_gpu_work"] == (HELD_TO_US - HELD_FROM_US) * 1000
