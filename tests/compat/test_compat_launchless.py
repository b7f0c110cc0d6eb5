"""GPU events without a launch in the compat facade: its default view leaves them out of the
GPU-time methods as the reference does, and says so in a warning with their number; with
include_last_profiler_step=True and in hta_fast.analysis they count."""

from __future__ import annotations

import warnings

import pytest

import hta_fast
from hta_fast.analysis import temporal
from hta_fast.compat import TraceAnalysis
from tests.support.kineto_builder import BASE_US, KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def unlaunched_kernel(b: KinetoBuilder, ts: float, dur: float, stream: int = 7) -> None:
    """A kernel whose launch the trace does not hold (no correlation, no flow)."""
    b.events.append(
        {
            "ph": "X",
            "cat": "kernel",
            "name": "graph_replayed_kernel",
            "pid": 0,
            "tid": stream,
            "ts": BASE_US + ts,
            "dur": dur,
            "args": {"device": 0, "stream": stream},
        }
    )


def three_steps(tmp_path):
    """Three 1 ms steps; each has two launched kernels of 100 µs and one of 300 µs without a
    launch (at 500 µs into the step). The default view drops step 2, the last."""
    b = KinetoBuilder()
    for s in range(3):
        t0 = s * 1000.0
        b.step(s, t0, 1000)
        b.kernel(GEMM, t0 + 10, t0 + 50, 100)
        b.kernel(GEMM, t0 + 20, t0 + 200, 100)
        unlaunched_kernel(b, t0 + 500, 300)
    path = tmp_path / "rank0.json"
    path.write_bytes(b.to_bytes())
    return path


def test_default_view_leaves_them_out_with_a_warning(tmp_path):
    path = three_steps(tmp_path)
    a = TraceAnalysis(trace_files=[str(path)])
    with pytest.warns(UserWarning, match="GPU events without a launch") as rec:
        df = a.get_temporal_breakdown()
    msg = str(rec[0].message)
    # steps 0 and 1: 2 of the 9 GPU events, 600 µs; step 2's would be cut anyway
    assert "rank 0: 2 of 9 GPU events (0.600 ms of GPU time)" in msg
    assert "get_temporal_breakdown" in msg and "include_last_profiler_step=True" in msg
    assert rec[0].filename == __file__  # points at the caller
    # the reference's numbers: launched kernels of steps 0 and 1 only (50-300, 1050-1300)
    assert df.loc[0, "compute_time(us)"] == 400.0
    assert df.loc[0, "kernel_time(us)"] == 1250.0
    for method in ("get_gpu_kernel_breakdown", "get_comm_comp_overlap", "get_idle_time_breakdown"):
        with pytest.warns(UserWarning, match=method):
            getattr(a, method)()


def test_with_the_last_step_they_count_and_nothing_is_said(tmp_path):
    a = TraceAnalysis(trace_files=[str(three_steps(tmp_path))], include_last_profiler_step=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = a.get_temporal_breakdown()
    assert df.loc[0, "compute_time(us)"] == 3 * 500.0  # 2 x 100 + 300 per step
    native = temporal.temporal_breakdown(hta_fast.load(three_steps(tmp_path))).table
    assert native["compute_time"][0].as_py() == 3 * 500_000


def test_nothing_said_when_every_gpu_event_has_a_launch(tmp_path):
    b = KinetoBuilder()
    for s in range(3):
        b.step(s, s * 1000.0, 1000)
        b.kernel(GEMM, s * 1000.0 + 10, s * 1000.0 + 50, 100)
    path = tmp_path / "rank0.json"
    path.write_bytes(b.to_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TraceAnalysis(trace_files=[str(path)]).get_temporal_breakdown()


def test_real_trace_counts(traces_dir):
    """negative_queue_length_values_check: GPU events without a launch before its last step."""
    a = TraceAnalysis(trace_dir=str(traces_dir / "hta/negative_queue_length_values_check"))
    with pytest.warns(UserWarning, match=r"rank 0: [\d,]+ of [\d,]+ GPU events") as rec:
        a.get_temporal_breakdown()
    print(rec[0].message)


@pytest.mark.reference
def test_gpu_events_without_a_correlation_go_by_their_external_ids_op_as_the_reference(
    tmp_path,
):
    """AMD microbenchmark kernels: stream 0, an External id, no correlation and no launch.
    The reference matches them to the operator with that External id and keeps those whose
    operator starts before the last step; the facade's default view does the same (no
    warning: nothing is left out for want of a launch), where before it dropped them all
    and reported nothing."""
    import json
    import warnings

    from hta_fast.compat import TraceAnalysis
    from tests.reference.reference_results import reference_results

    events = []
    for s in range(3):
        t0 = 1000 * s
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                       "pid": 1, "tid": 1, "ts": t0, "dur": 900})  # fmt: skip
        for j in range(2):
            ext = {"External id": 10 * s + j}
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                           "ts": t0 + 10 + 100 * j, "dur": 5, "args": ext})  # fmt: skip
            events.append({"ph": "X", "cat": "kernel", "name": f"k{j}", "pid": 2, "tid": 0,
                           "ts": t0 + 50 + 100 * j, "dur": 40,
                           "args": {"stream": 0, "device": 0, **ext}})  # fmt: skip
    (tmp_path / "rank0.json").write_text(
        json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0, "world_size": 1}})
    )
    ref = reference_results(tmp_path, analyses=["temporal_breakdown"])["temporal_breakdown"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no launchless warning
        ours = TraceAnalysis(trace_dir=str(tmp_path)).get_temporal_breakdown(visualize=False)
    for column in ("idle_time(us)", "compute_time(us)", "kernel_time(us)"):
        assert float(ours[column][0]) == float(ref[column][0]), column
    assert float(ours["compute_time(us)"][0]) == 160.0  # the 4 kernels of steps 0 and 1
