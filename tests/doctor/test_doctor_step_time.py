"""The doctor's step time is device-aware (a step runs from the later of its host start and
the end of the previous step's GPU work to the later of its host end and the end of the GPU
work it launched), the host's ProfilerStep span beside it where they differ; a step that is
mostly the profiler's own work is left out of the means."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import hta_fast
from hta_fast.doctor import diagnose
from hta_fast.steps.profiler_flush import flush_steps
from hta_fast.steps.step_windows import step_windows
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import CPU_PID, CPU_TID, KinetoBuilder


def device_aware_steps(trace: hta_fast.Trace) -> list[int]:
    """Per profiler step (time order), ns, from the steps and the GPU events alone."""
    ev = trace.events.select(["ts", "dur", "kind", "step"]).to_pandas()
    gpu = ev[ev.kind.isin(["kernel", "memcpy", "memset"])]
    gpu_end = (gpu.ts + gpu.dur).groupby(gpu.step).max()
    steps = trace.steps.to_pandas().sort_values("ts")
    out, previous_end = [], None
    for _, s in steps.iterrows():
        start = s.ts if previous_end is None else max(s.ts, previous_end)
        end = max(s.ts + s.dur, int(gpu_end.get(s.step, 0)))
        out.append(end - start)
        previous_end = end
    return out


@functools.lru_cache(maxsize=None)
def _load(rel: str) -> hta_fast.Trace:
    return hta_fast.load(str(TRACES_DIR / rel))


def test_backlogged_v100_step_is_the_device_aware_span(traces_dir):
    """trace_diff/test: a V100 running half a step behind its host."""
    trace = _load("hta/trace_diff/test/test.json.gz")
    expected = device_aware_steps(trace)
    d = diagnose(trace, model=False)
    assert d.step_time_ns == pytest.approx(np.mean(expected), rel=0.05)
    assert np.median(step_windows(trace, None).dur) == pytest.approx(np.median(expected), rel=0.05)
    host = trace.steps.to_pandas().dur.mean()
    assert d.cpu_step_time_ns == pytest.approx(host, abs=1)


def test_host_step_is_shown_where_the_spans_differ(traces_dir):
    trace = _load("pairs/dataloader_workers/resnet50_num_workers_4.pt.trace.json.gz")
    d = diagnose(trace, model=False)
    assert abs(d.cpu_step_time_ns - d.step_time_ns) > 0.05 * d.step_time_ns
    assert "host step" in d.to_text().splitlines()[0]
    assert any("device-aware span" in n for n in d.notes)
    assert d.to_dict()["cpu_step_time_ns"] == d.cpu_step_time_ns


def flushing_trace(flush_ms: float) -> hta_fast.Trace:
    """Three 10 ms steps with a 5 ms kernel each; the last step's host spends flush_ms inside
    torch/profiler/profiler.py frames (its stop and hand-over) after its kernel."""
    b = KinetoBuilder()
    t = 0.0
    for s in range(3):
        dur = 10_000 + (flush_ms * 1000 if s == 2 else 0)
        b.step(s, t, dur)
        b.kernel("void gemm_kernel", t + 10, t + 20, 5000)
        if s == 2:
            for depth, frame in enumerate(("step", "_transit_action", "stop_trace")):
                b._x(
                    "python_function",
                    f"torch/profiler/profiler.py({800 + depth}): {frame}",
                    t + 9000 + depth,
                    flush_ms * 1000 - 2 * depth,
                    CPU_PID,
                    CPU_TID,
                    {"Python id": 10 + depth},
                )
        t += dur + 10
    return b.load()


def test_a_step_that_is_mostly_the_profilers_flush_is_left_out():
    trace = flushing_trace(38.0)
    assert flush_steps(trace).tolist() == [2]
    d = diagnose(trace, model=False)
    assert d.steps == [0, 1]
    assert d.step_time_ns == pytest.approx(10_000_000, rel=0.01)
    assert any("step(s) 2 left out" in n and "profiler" in n for n in d.notes)
    # Asked for by number, it is analysed.
    assert diagnose(trace, steps=[2], model=False).steps == [2]


def test_a_short_profiler_call_flags_nothing():
    trace = flushing_trace(2.0)  # 2 ms of a 12 ms step
    assert flush_steps(trace).tolist() == []
    assert diagnose(trace, model=False).steps == [0, 1, 2]


def test_steps_table_after_with_steps(traces_dir):
    """Trace.steps after with_steps/with_steps_from builds (it raised TypeError: the core's
    int32 row column was handed int64)."""
    from hta_fast.steps.steps_from import with_steps_from

    trace = _load("modern/flux1_iteration/iteration_0.json.gz")
    steps = with_steps_from(trace, "denoise").steps
    assert steps.num_rows == 4 and steps.column("step").to_pylist() == [0, 1, 2, 3]
    same = _load("hta/trace_diff/test/test.json.gz")
    col = same.column
    again = same.with_steps(
        col("steps", "row"), col("steps", "step"), col("steps", "ts"), col("steps", "dur"), "x"
    )
    assert again.steps.equals(same.steps)


@pytest.mark.reference
@pytest.mark.parametrize("name", ["resnet50_num_workers_0", "resnet50_num_workers_4"])
def test_step_times_are_the_tensorboard_plugins(name, traces_dir):
    """The dataloader pair: each step's device-aware span is the one the TensorBoard
    profiler plugin computes (torch-tb-profiler, run in the reference environment), step by
    step within 1 %, and the doctor's step time is their mean."""
    from tests.analysis.test_operator_memory import _plugin

    rel = f"pairs/dataloader_workers/{name}.pt.trace.json.gz"
    plugin = _plugin(TRACES_DIR / rel)["steps"]
    trace = _load(rel)
    windows = step_windows(trace, None)
    assert [str(s) for s in windows.step] == [n for n, _ in plugin]
    ours = windows.dur / 1000.0
    theirs = np.array([us for _, us in plugin], float)
    np.testing.assert_allclose(ours, theirs, rtol=0.01)
    d = diagnose(trace, model=False)
    assert d.step_time_ns / 1000.0 == pytest.approx(theirs.mean(), rel=0.01)


def test_the_steps_analysis_gives_the_device_aware_span_beside_the_host_span(traces_dir):
    """What the report's step tables read: each step's span (device-aware) and dur (host)."""
    from hta_fast.analysis.steps import profiler_steps

    trace = _load("hta/trace_diff/test/test.json.gz")
    t = profiler_steps(trace).to_pandas()
    assert t.span.tolist() == step_windows(trace, None).dur.tolist()
    # the first step also starts after GPU work queued before it (the plugin's rule): 0.5 %
    assert t.span.tolist() == pytest.approx(device_aware_steps(trace), rel=0.01)
    assert t.dur.tolist() == trace.steps.to_pandas().sort_values("step").dur.tolist()
