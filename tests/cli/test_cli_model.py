"""`hta-fast critical-path`, `replay` and `whatif` on the real critical-path traces."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.cli import cli
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.whatif.steps import what_if
from tests.cli.test_cli import one_error_line, run_subprocess


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def folder(traces_dir, name="cuda_event_sync"):
    return traces_dir / "hta" / "critical_path" / name


def test_critical_path_json_equals_the_analysis(traces_dir, tmp_path):
    out = tmp_path / "path.json.gz"
    res = run("critical-path", str(folder(traces_dir)), "--format", "json", "--trace-out", str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[: res.output.rindex("}") + 1])
    expected = critical_path(hta_fast.load_dir(folder(traces_dir)))
    assert doc["tables"]["critical_path"] == expected.table.to_pylist()
    assert doc["tables"]["critical_path.breakdown"] == expected["breakdown"].to_pylist()
    assert hta_fast.load(str(out)).events.num_rows > 0  # the overlay opens as a trace


def test_critical_path_by_event_prints_the_time_per_event(traces_dir):
    res = run("critical-path", str(folder(traces_dir)), "--format", "json", "--by-event")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[: res.output.rindex("}") + 1])
    expected = critical_path(hta_fast.load_dir(folder(traces_dir)), breakdown=False)
    rows = doc["tables"]["critical_path.on_path"]
    assert (
        rows == expected["on_path"].to_pylist() and "critical_path.breakdown" not in doc["tables"]
    )
    durations = [r["duration"] for r in rows]
    assert durations == sorted(durations, reverse=True)  # one rank here: the most time first
    res = run("critical-path", str(folder(traces_dir)), "--by-event", "--together")
    assert res.exit_code == 2 and "--by-event" in res.output


@pytest.mark.slow  # every window of a real job
def test_critical_path_windows_walks_each_window_alone(traces_dir, tmp_path):
    # trace_diff/control: 6 steps. Chained (the default), each step's path stops at its
    # start; --windows begins each with the window's 0 µs release.
    path = traces_dir / "hta" / "trace_diff" / "control"
    rows = {}
    for flag in ([], ["--windows"]):
        out = tmp_path / f"path{len(flag)}.json"
        res = run("critical-path", str(path), "--format", "json", "--trace-out", str(out), *flag)
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output[: res.output.rindex("}") + 1])
        expected = critical_path(hta_fast.load_dir(path), chained=not flag)
        assert doc["tables"]["critical_path.breakdown"] == expected["breakdown"].to_pylist()
        rows[len(flag)] = expected["breakdown"].num_rows
        assert hta_fast.load(str(out)).events.num_rows > 0
    assert rows[1] == rows[0] + 6


def test_replay_reproduces_the_steps(traces_dir):
    res = run("replay", str(folder(traces_dir, "simple_add")), "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["tables"]["replay"]
    assert rows and all(r["replayed"] == r["measured"] for r in rows)


def test_whatif_equals_the_model(traces_dir):
    res = run(
        "whatif", str(folder(traces_dir)), "--scale", "COMP=0.5", "--cpu", "0.5", "--format", "json"
    )
    assert res.exit_code == 0, res.output
    expected = what_if(hta_fast.load_dir(folder(traces_dir)), kernel_class={"COMP": 0.5}, cpu=0.5)
    rows = json.loads(res.output)["tables"]["what_if"]
    assert rows == expected.table.to_pylist()
    assert all(r["predicted"] < r["measured"] for r in rows)  # everything got faster


def test_whatif_bad_factor_is_one_line(traces_dir):
    res = run_subprocess("whatif", str(folder(traces_dir)), "--scale", "COMM")
    assert res.returncode == 2
    assert "KEY=FACTOR" in one_error_line(res.stderr)


def _write(trace_json: bytes, path) -> str:
    path.write_bytes(trace_json)
    return str(path)


def test_whatif_op_edits_equal_the_model(tmp_path):
    from tests.model.test_model_op_edits import LOADER, job_builder

    slow = _write(job_builder(4000).to_bytes(), tmp_path / "slow.json")
    fast = _write(job_builder(1000).to_bytes(), tmp_path / "fast.json")
    res = run("whatif", slow, "--scale-op", f"{LOADER}=0.25", "--format", "json")
    assert res.exit_code == 0, res.output
    scaled = json.loads(res.output[: res.output.rindex("}") + 1])["tables"]["what_if"]
    assert scaled == what_if(hta_fast.load(slow), op_scale={LOADER: 0.25}).table.to_pylist()
    res = run(
        "whatif",
        slow,
        "--durations-from",
        fast,
        "--match",
        "DataLoader=Data\\=?Loader",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[: res.output.rindex("}") + 1])
    # A loader 4x as fast, either way: the same prediction, and the pairing table beside it.
    assert [r["predicted"] for r in doc["tables"]["what_if"]] == [r["predicted"] for r in scaled]
    assert {r["paired_by"] for r in doc["tables"]["durations_from"]} == {"shapes"}


def test_whatif_match_without_durations_from_is_one_line(tmp_path):
    from tests.model.test_model_op_edits import job_builder

    path = _write(job_builder(1000).to_bytes(), tmp_path / "t.json")
    res = run_subprocess("whatif", path, "--match", "DataLoader")
    assert res.returncode == 2
    assert "go together" in one_error_line(res.stderr)


def test_whatif_device_equals_the_model(traces_dir):
    control = traces_dir / "hta" / "trace_diff" / "control"
    res = run("whatif", str(control), "--device", "V100-SXM2", "--format", "json")
    assert res.exit_code == 0, res.output
    expected = what_if(hta_fast.load_dir(control), device="V100-SXM2")
    rows = json.loads(res.output[: res.output.rindex("}") + 1])["tables"]["what_if"]
    assert rows == expected.table.to_pylist()
    assert all(r["predicted"] > r["measured"] for r in rows)  # a V100 is slower than an A100


def test_whatif_unknown_device_is_one_line(traces_dir):
    res = run_subprocess(
        "whatif", str(folder(traces_dir)), "--device", "Nope", "--source-device", "A100-SXM4-40GB"
    )
    assert res.returncode == 2
    assert "unknown device 'Nope'" in one_error_line(res.stderr)


def test_critical_path_together_equals_the_analysis(traces_dir):
    path = traces_dir / "param_dlrm_8rank"
    res = run("critical-path", str(path), "--together", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[: res.output.rindex("}") + 1])
    expected = critical_path(hta_fast.load_dir(path), cross_rank=True)
    assert doc["tables"]["critical_path"] == expected.table.to_pylist()
    assert doc["tables"]["critical_path.breakdown"] == expected["breakdown"].to_pylist()
    (row,) = doc["tables"]["critical_path"]
    assert row["end_rank"] == 4 and "cross_rank" in row  # one row per step, not per rank


def test_critical_path_together_refuses_trace_out_in_one_line(traces_dir, tmp_path):
    res = run_subprocess(
        "critical-path",
        str(traces_dir / "param_dlrm_8rank"),
        "--together",
        "--trace-out",
        str(tmp_path / "p.json"),
    )
    assert res.returncode == 2
    assert "--together" in one_error_line(res.stderr)


def test_whatif_windows_flag_replays_each_window_alone(traces_dir):
    trace_dir = traces_dir / "hta" / "trace_diff" / "control"
    rows = {}
    for flag in ([], ["--windows"]):
        res = run("whatif", str(trace_dir), "--scale", "COMP=3", "--format", "json", *flag)
        assert res.exit_code == 0, res.output
        rows[bool(flag)] = json.loads(res.output)["tables"]["what_if"]
    trace = hta_fast.load_dir(trace_dir)
    for windows, got in rows.items():
        expected = what_if(trace, kernel_class={"COMP": 3.0}, chained=not windows)
        assert [r["predicted"] for r in got] == expected.to_pandas().predicted.tolist()
    assert rows[True] != rows[False]  # the chain changes the prediction on this trace
