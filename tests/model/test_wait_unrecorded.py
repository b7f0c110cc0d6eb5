"""A stream held by GPU work the trace does not hold, mid-trace (model.graph.unrecorded_wait),
by construction: a 4 µs kernel runs first (a trace's head rule alone misses the hold), then a
kernel ready from 35 µs starts at 50 ms, the GPU idle as recorded, while the host sits in a
blocking sync that returns only after it. The critical path, the doctor and the what-if give
one answer: the wait is unrecorded GPU work, charged to the held kernel, not removable; the
sync waits through it and is charged nothing. Without the blocking call the trace cannot tell
unrecorded work from a misrecorded launch, and nothing is claimed."""

from __future__ import annotations

import pytest

from hta_fast.doctor import diagnose
from hta_fast.model.graph.unrecorded_wait import unrecorded_holds
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.synthetic_traces import (
    HELD_FROM_US,
    HELD_STEP_US,
    HELD_TO_US,
    held_by_unrecorded_builder,
)

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
HELD_FROM, HELD_TO, STEP = HELD_FROM_US, HELD_TO_US, HELD_STEP_US


def _held(blocking: bool) -> KinetoBuilder:
    return held_by_unrecorded_builder(blocking)


def test_the_hold_is_found_mid_trace_with_the_host_blocked():
    trace = _held(True).load()
    h = unrecorded_holds(trace)
    assert len(h.rows) == 1
    start = int(trace.column("events", "ts")[h.rows[0]])
    assert int(h.ends[0]) == start
    assert int(h.ends[0] - h.starts[0]) == (HELD_TO - HELD_FROM) * 1000


def test_the_path_charges_the_hold_to_the_held_kernel():
    r = critical_path(_held(True).load())
    row = r.table.to_pylist()[0]
    share = 100 * (HELD_TO - HELD_FROM) / STEP
    assert row["gpu_unrecorded_work"] == pytest.approx(share, abs=0.5)
    assert row["gpu_kernel_launch_overhead"] < 1
    b = r.to_pandas("breakdown")
    top = b.sort_values("duration").iloc[-1]
    assert top.bound_by == "gpu_unrecorded_work" and top["name"] == GEMM
    assert all(0 <= row[k] <= 100 for k in row if isinstance(row[k], float))


def test_the_doctor_names_it_not_removable_and_charges_the_sync_nothing():
    diag = diagnose(traceset([_held(True)]))
    first = diag.findings[0]
    assert first.cause == "unrecorded_gpu_work" and first.above_threshold
    assert first.saving_ns_per_step is None and first.saving_edit.startswith("not removable")
    assert first.cost_ns_per_step == pytest.approx((HELD_TO - HELD_FROM) * 1000, rel=0.01)
    assert first.evidence["waiting_call"] == "cudaStreamSynchronize"
    for f in diag.findings[1:]:  # the sync waited for the hold: no cause owns that time
        assert f.cost_ns_per_step < 0.05 * (HELD_TO - HELD_FROM) * 1000, f.cause


def test_no_launch_or_sync_edit_removes_it():
    """Launches costing nothing change nothing; a sync that returns at once lets the host
    queue the later kernels on their own stream during the hold (a real saving), but the held
    kernel still starts where the unrecorded work let it."""
    trace = _held(True).load()
    t = what_if(trace, zero_launch_overhead=True).table.to_pylist()[0]
    assert t["predicted"] >= 0.99 * t["measured"]
    t = what_if(trace, drop_sync_waits=True).table.to_pylist()[0]
    assert t["predicted"] >= (HELD_TO + 100) * 1000


def test_without_a_blocking_call_nothing_is_claimed():
    trace = _held(False).load()
    assert len(unrecorded_holds(trace).rows) == 0
    assert critical_path(trace).table.to_pylist()[0]["gpu_unrecorded_work"] == 0
    diag = diagnose(traceset([_held(False)]))
    assert not any(f.cause == "unrecorded_gpu_work" and f.above_threshold for f in diag.findings)


def test_a_sync_kept_waiting_after_the_recorded_work_waits_for_unrecorded_work():
    """A DDP-like trace whose last step ends in a device synchronize that returns 37.9 ms
    after the all-reduce it waited for (the profiler stopping): that tail is GPU work the
    trace does not hold, in the path, the owners and the doctor alike; no edit of the
    recorded work or the syncs removes it."""
    from hta_fast.model.graph.unrecorded_wait import sync_tails
    from hta_fast.model.path.owners import wait_owners
    from tests.support.wait_kinds import DDP_STEPS, PROFILER_STOP_US, ddp_device_sync_at_end

    b = ddp_device_sync_at_end()
    trace = b.load()
    tails = sync_tails(trace)
    assert len(tails.rows) == 1
    assert tails.ends[0] - tails.starts[0] == PROFILER_STOP_US * 1000
    last = DDP_STEPS - 1
    path = critical_path(trace, steps=[last]).table.to_pylist()[0]
    held = path["gpu_unrecorded_work"] / 100 * path["critical_path_length"]
    assert held == pytest.approx(PROFILER_STOP_US * 1000, rel=0.01)
    assert path["cpu_bound"] < 2
    owners = wait_owners(trace, steps=[last]).table.to_pylist()[0]
    assert owners["gpu_unrecorded_work"] == PROFILER_STOP_US * 1000
    f = diagnose(traceset([b])).finding("unrecorded_gpu_work")
    assert "kept cudaDeviceSynchronize waiting 37.90 ms" in f.title
    assert f.cost_ns_per_step * DDP_STEPS == PROFILER_STOP_US * 1000
    for edits in ({"kernel_class": {"COMM": 0}}, {"drop_sync_waits": True}):
        row = what_if(trace, steps=[last], **edits).table.to_pylist()[0]
        assert row["predicted"] >= PROFILER_STOP_US * 1000, edits


def test_a_long_sync_on_an_idle_device_is_no_tail():
    """A graph capture's one-time device synchronize began with nothing recorded running:
    it waited for nothing the trace holds, and is a one-off, not unrecorded work."""
    from hta_fast.model.graph.unrecorded_wait import sync_tails
    from tests.support.wait_kinds import ONE_OFFS

    builder, _ = ONE_OFFS["one_time_sync"]()
    assert len(sync_tails(builder.load()).rows) == 0
