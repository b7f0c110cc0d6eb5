"""What-if predictions against synthetic trace pairs whose only difference is the knob, made by
the same physics the graph encodes (a kernel starts once launched and once its stream is free;
a stream sync returns a few µs after the stream drains), and edits on a real trace."""

from __future__ import annotations

import functools
import gzip
import json

import numpy as np
import pytest

import hta_fast
from hta_fast.model.replay.steps import replay_steps
from hta_fast.model.whatif.edits import Edits
from hta_fast.model.whatif.steps import what_if
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def sync_bound_job(kernel_us: float, cpu_us: float, steps: int = 4) -> hta_fast.Trace:
    """Each step: 10 launches 10 µs apart (5 µs each, 10 µs to reach the GPU), a stream sync
    that returns 3 µs after the last kernel, then cpu_us of host work."""
    b = KinetoBuilder()
    t0 = 0.0
    for s in range(steps):
        events, free = [], -1.0
        for j in range(10):
            launch = t0 + 10 + 10 * j
            start = max(launch + 10, free)
            events.append((launch, start))
            free = start + kernel_us
        sync_start = t0 + 120
        sync_end = max(sync_start + 5, free + 3)
        work_start = sync_end + 2
        end = work_start + cpu_us + 1
        b.step(s, t0, end - t0)
        for launch, start in events:
            b.kernel(GEMM, launch, start, kernel_us)
        b.runtime("cudaStreamSynchronize", sync_start, sync_end - sync_start)
        b.cpu_op("aten::cpu_work", work_start, cpu_us)
        t0 = end
    return b.load()


def step_times(trace: hta_fast.Trace) -> np.ndarray:
    return replay_steps(trace).to_pandas().measured.to_numpy()


def test_the_synthetic_job_replays_exactly():
    r = replay_steps(sync_bound_job(400, 2000)).to_pandas()
    assert (r.error_pct == 0).all() and len(r) == 4


@pytest.mark.parametrize("factor", [0.5, 0.6, 1.5])
def test_faster_gemms_predict_the_faster_job(factor):
    base = sync_bound_job(400, 2000)
    actual = step_times(sync_bound_job(400 * factor, 2000))
    predicted = what_if(base, name={"gemm": factor}).to_pandas().predicted.to_numpy()
    # Exact: the pair differs only in kernel time, and the waits keep their measured costs.
    assert np.array_equal(predicted, actual)
    assert not np.allclose(step_times(base), actual, rtol=0.05)  # the knob matters


def test_less_cpu_time_predicts_the_job_with_less_cpu_work():
    # Scaling CPU time also scales the launch calls and gaps; the pair differs only in the
    # host work, so compare the change in step time, which is that work's.
    base = sync_bound_job(200, 4000)
    r = what_if(base, name={}, cpu=0.5).to_pandas()
    actual = step_times(sync_bound_job(200, 2000))
    assert np.allclose(r.predicted, actual, rtol=0.05)


def test_kernel_class_and_category_select_the_same_kernels():
    base = sync_bound_job(400, 2000)
    by_class = what_if(base, kernel_class={"COMP": 0.5}).to_pandas().predicted
    by_cat = what_if(base, category={"kernel": 0.5}).to_pandas().predicted
    by_name = what_if(base, name={"^ampere": 0.5}).to_pandas().predicted
    assert by_class.tolist() == by_cat.tolist() == by_name.tolist()


@functools.lru_cache(maxsize=None)
def control():
    return hta_fast.load_dir(TRACES_DIR / "hta/trace_diff/control")


def test_no_edit_predicts_the_measured_steps():
    r = what_if(control()).to_pandas()
    assert (r.predicted == r.measured).all() and (r.replayed == r.measured).all()


def test_edits_only_shorten_when_they_shrink():
    r0 = what_if(control()).to_pandas().predicted
    for kw in [
        dict(kernel_class={"COMM": 0.5}),
        dict(cpu=0.5),
        dict(zero_launch_overhead=True),
        dict(drop_comm_waits=True),
        dict(name={"nccl": 0.0}),
    ]:
        r = what_if(control(), **kw).to_pandas().predicted
        assert (r <= r0).all(), kw
    slower = what_if(control(), kernel_class={"COMP": 2.0}).to_pandas().predicted
    assert (slower >= r0).all() and (slower > r0).any()


def test_bad_edits_are_clear_errors():
    with pytest.raises(ValueError, match="unknown kernel class 'GEMM'"):
        what_if(control(), kernel_class={"GEMM": 0.5})
    with pytest.raises(ValueError, match="bad name pattern '\\('"):
        what_if(control(), name={"(": 0.5})
    with pytest.raises(ValueError, match="factors must be numbers >= 0"):
        what_if(control(), cpu=-1.0)


@pytest.mark.parametrize(
    "edits, message",
    [
        (dict(cpu=-1.0), r"Edits\.cpu: what-if factors must be numbers >= 0"),
        (dict(cpu=float("inf")), r"Edits\.cpu: what-if factors must be numbers >= 0"),
        (dict(kernel_class={"COMP": "fast"}), r"Edits\.kernel_class\['COMP'\]: what-if factors"),
        (dict(kernel_class={"GEMM": 0.5}), r"Edits\.kernel_class: unknown kernel class 'GEMM'"),
        (dict(name={"(": 0.5}), r"Edits\.name: bad name pattern '\('"),
        (dict(category=[("kernel", 0.5)]), r"Edits\.category: expected a mapping"),
        (dict(zero_launch_overhead="yes"), r"Edits\.zero_launch_overhead: expected True or False"),
        (dict(collective_bandwidth=-2.0), r"Edits\.collective_bandwidth: .*positive number"),
        (
            dict(collective_bandwidth=2.0, collective_busbw_gbps=10.0),
            r"Edits\.collective_bandwidth / collective_busbw_gbps: .*one of a scale",
        ),
        (dict(device=3), r"Edits\.device: a device table key or name"),
        (dict(allow_tf32="sometimes"), r"Edits\.allow_tf32: True, False or 'auto'"),
        (dict(duration_change={0: ([1, 2], [5.0])}), r"Edits\.duration_change: rank 0"),
    ],
)
def test_edits_are_checked_once_when_made(edits, message):
    with pytest.raises(ValueError, match=message):
        Edits(**edits)


def test_edits_and_keywords_are_one_spelling():
    job = sync_bound_job(400, 2000)
    edits = Edits(name={"gemm": 0.5}, cpu=0.8, zero_launch_overhead=True)
    by_value = what_if(job, edits).table
    assert by_value.equals(
        what_if(job, name={"gemm": 0.5}, cpu=0.8, zero_launch_overhead=True).table
    )
    # Keywords next to an Edits replace those fields.
    assert what_if(job, Edits(cpu=0.8, zero_launch_overhead=True), name={"gemm": 0.5}).table.equals(
        by_value
    )
    assert edits.edit_ranks is None and Edits(edit_ranks=[3, 1, 3]).edit_ranks == (1, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        what_if(job, gemm=0.5)
    with pytest.raises(AttributeError):
        edits.cpu = 0.5  # type: ignore[misc]


def test_a_trace_without_syncs_says_so_instead_of_claiming_cpu_bound():
    from hta_fast.model.path.critical_path import critical_path

    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel(GEMM, 10, 20, 100)
    notes = critical_path(b.load()).notes
    assert len(notes) == 1 and "no sync or stream-wait events" in notes[0]
    assert critical_path(sync_bound_job(400, 2000)).notes == []


def test_the_path_trace_loads_back_and_marks_the_path(tmp_path):
    from hta_fast.model.path.critical_path import critical_path
    from hta_fast.model.path.overlay import write_critical_path_trace

    job = sync_bound_job(400, 2000, steps=2)
    out = write_critical_path_trace(job, tmp_path / "path.json.gz")
    back = hta_fast.load(out)
    assert len(back.column("events", "ts")) == len(job.column("events", "ts")) - int(
        np.count_nonzero(job.column("events", "kind") == 0)
    )  # "other" rows are not in graphs
    flows = back.flows.to_pandas()
    assert (flows.phase == "s").sum() == (flows.phase == "f").sum() > 0
    # Every wait on the path is an arrow: launches, the sync wait, ...
    b = critical_path(job).to_pandas("breakdown")
    assert {"launch", "sync_wait"} <= set(b.type)
    doc = json.loads(gzip.open(out).read())
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "s"}
    assert {"launch", "sync_wait"} <= names
    critical = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["args"]["critical"]]
    assert "cudaStreamSynchronize" in critical and GEMM in critical
