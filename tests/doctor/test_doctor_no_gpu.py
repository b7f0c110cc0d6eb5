"""The doctor on traces without GPU activity: a trace whose launches have no GPU events (GPU
activity was not traced) and a CPU-only trace are not healthy. The rank counts, the text
says "no GPU activity recorded", and the gate fails with its own exit status (3)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hta_fast import TraceSet
from hta_fast.cli import cli
from hta_fast.doctor import diagnose
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.synthetic_traces import STEP_US, STEPS, cpu_only, healthy, healthy_builder


def launches_without_gpu_events() -> KinetoBuilder:
    """Steps whose host launches 20 kernels each, none of which the trace recorded."""
    b = KinetoBuilder()
    for s in range(STEPS):
        t0 = s * STEP_US
        b.step(s, t0, STEP_US)
        b.cpu_op("aten::mm", t0 + 10, 500)
        for j in range(20):
            b.runtime("cudaLaunchKernel", t0 + 20 + j * 20, 5)
    return b


def test_launches_without_gpu_events_are_no_gpu_activity():
    d = diagnose(launches_without_gpu_events().load())
    assert d.ranks == [0]
    assert not d.healthy
    assert list(d.no_gpu_activity) == [0]
    assert "100 CUDA runtime/driver calls" in d.no_gpu_activity[0]
    text = d.to_text()
    assert "no GPU activity recorded" in text and "Healthy" not in text
    assert "1 rank(s)" in text
    reasons = d.failed()
    assert len(reasons) == 1 and reasons[0].startswith("rank 0: no GPU activity recorded")
    # whatever gates are asked for, a rank without GPU activity fails
    assert d.failed(fail_on=["rank_imbalance"]) == reasons
    doc = json.loads(json.dumps(d.to_dict()))
    assert doc["healthy"] is False and doc["ranks"] == [0]
    assert list(doc["no_gpu_activity"]) == ["0"]


def test_cpu_only_trace_is_no_gpu_activity():
    d = diagnose(cpu_only().load())
    assert d.ranks == [0] and not d.healthy
    assert "CPU-only" in d.no_gpu_activity[0]
    assert "no GPU activity recorded" in d.to_text()


def test_one_rank_without_gpu_activity_fails_a_set():
    good = healthy()[0]
    d = diagnose(TraceSet({0: good, 1: traceset([cpu_only()])[0]}))
    assert d.ranks == [0, 1]
    assert list(d.no_gpu_activity) == [1]
    assert not d.healthy
    assert all(not f.above_threshold for f in d.findings)  # rank 0 alone is healthy
    assert d.utilization > 0.99  # over the ranks with GPU activity
    assert d.failed() == [d.failed()[0]] and "rank 1" in d.failed()[0]


def test_cli_exit_status_3_for_no_gpu_activity(tmp_path):
    path = tmp_path / "launches.json"
    path.write_bytes(launches_without_gpu_events().to_bytes())
    runner = CliRunner()
    res = runner.invoke(cli, ["doctor", str(path)])
    assert res.exit_code == 3, res.output
    assert "no GPU activity recorded" in res.output
    assert "1 rank(s)" in res.output
    res = runner.invoke(cli, ["doctor", str(path), "--fail-on", "launch_bound"])
    assert res.exit_code == 3
    res = runner.invoke(cli, ["doctor", str(path), "--json"])
    assert res.exit_code == 3
    doc = json.loads(res.stdout)
    assert doc["gate"]["passed"] is False
    assert doc["gate"]["reasons"][0].startswith("rank 0: no GPU activity recorded")


def test_cli_healthy_still_exits_0(tmp_path):
    path = tmp_path / "healthy.json"
    b = healthy_builder()
    path.write_bytes(b.to_bytes())
    res = CliRunner().invoke(cli, ["doctor", str(path)])
    assert res.exit_code == 0, res.output


def test_real_traces_without_gpu_activity(traces_dir):
    """cupti_profiler: 1,862 runtime calls, no GPU event; cpu_only: a CPU-only trace."""
    runner = CliRunner()
    for name, words in (
        ("hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", "runtime"),
        ("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "CPU-only"),
    ):
        res = runner.invoke(cli, ["doctor", str(traces_dir / name)])
        assert res.exit_code == 3, res.output
        assert "no GPU activity recorded" in res.output and words in res.output
        assert "0 rank(s)" not in res.output and "Healthy" not in res.output
