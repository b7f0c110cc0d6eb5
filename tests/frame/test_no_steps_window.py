"""A trace without ProfilerStep#N: its one window runs from the first host event to the end
of the last GPU work, including work with no launch in the trace, and the notes say so;
`--steps-from host` gives the TensorBoard plugin's window (the host events and the work
launched in them). Answers known by construction."""

from __future__ import annotations

import json

from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.tensorboard.gpu_utilization import gpu_utilization
from hta_fast.cli import cli
from hta_fast.steps import with_steps_from

# aten::mm on the host [100, 150) µs launches k [120, 140); an orphan kernel with no launch
# in the trace runs [300, 700).
EVENTS = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
     "ts": 110, "dur": 5, "args": {"External id": 1, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120, "dur": 20,
     "args": {"correlation": 1, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 300, "dur": 400,
     "args": {"correlation": 99, "stream": 7, "device": 0}},
]  # fmt: skip


def _trace() -> hta_fast.Trace:
    return hta_fast.load(json.dumps({"traceEvents": EVENTS}).encode())


def test_the_one_window_takes_unlaunched_work_in_and_says_so():
    r = gpu_utilization(_trace())
    row = r.table.to_pylist()[0]
    assert row["steps_time"] == 600_000 and row["kernel_busy_in_steps"] == 420_000
    (note,) = r.notes
    assert "1 GPU events (400.0 us) have no launch in the trace" in note
    assert "550.0 us past the host events" in note and "--steps-from host" in note


def test_steps_from_host_is_the_plugins_window():
    r = gpu_utilization(with_steps_from(_trace(), "host"))
    row = r.table.to_pylist()[0]
    assert row["steps"] == 1 and row["steps_time"] == 50_000
    assert row["kernel_busy_in_steps"] == 20_000  # the launched kernel only


def test_cli_steps_from_host(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    res = CliRunner().invoke(
        cli,
        [
            "-q",
            "analyze",
            "-a",
            "gpu_utilization",
            "--steps-from",
            "host",
            "--format",
            "json",
            str(path),
        ],
    )
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["tables"]["gpu_utilization"][0]
    assert (row["steps_time"], row["kernel_busy_in_steps"]) == (50_000, 20_000)
