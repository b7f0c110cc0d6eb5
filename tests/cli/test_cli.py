"""The command line as a user meets it: click's runner in-process and a real subprocess,
on the real traces in ../shared/traces, bad paths and corrupt files included."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis import Selection, temporal, trace_diff
from hta_fast.analysis.registry import ANALYSES
from hta_fast.cli import cli
from tests.support import fake_doctor

DLRM = "param_dlrm_8rank"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_subprocess(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hta_fast", *args], capture_output=True, text=True, timeout=120, **kw
    )


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("hta-fast: error: ")
    return lines[0]


@pytest.fixture(scope="module")
def dlrm(traces_dir):
    return traces_dir / DLRM


@pytest.fixture()
def truncated(tmp_path, traces_dir):
    """A real trace cut in the middle of its events, as when a profiler dies writing it."""
    text = gzip.decompress(
        (traces_dir / "hta" / "trace_filter" / "sampled_rank-0.json.gz").read_bytes()
    )
    path = tmp_path / "cut.json"
    path.write_bytes(text[: len(text) // 2])
    return path


# --- info ----------------------------------------------------------------------------------
def test_info_json_counts_match_the_loader(dlrm):
    res = run("info", "--json", str(dlrm))
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    loaded = hta_fast.load_dir(dlrm)
    assert [r["rank"] for r in doc["ranks"]] == list(range(8))
    for row in doc["ranks"]:
        t = loaded[row["rank"]]
        assert row["events"] == t.events.num_rows
        assert row["world_size"] == 8
        assert row["steps"] == 1 and row["first_step"] == 10
        assert row["kernels"] == sum(
            1 for k in t.events.column("kind").to_pylist() if k == "kernel"
        )
        assert row["file_bytes"] == os.path.getsize(t.meta.path)


def test_info_table_names_every_file(dlrm):
    res = run("info", str(dlrm))
    assert res.exit_code == 0
    assert res.output.startswith("8 rank(s)")
    for r in range(8):
        assert f"worker{r}.pt.trace.json.gz" in res.output


# --- analyze -------------------------------------------------------------------------------
def test_analyze_json_equals_the_analysis(dlrm):
    res = run("analyze", str(dlrm), "-a", "temporal", "--ranks", "2:4", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["tables"]["temporal"]
    expected = temporal.temporal_breakdown(hta_fast.load_dir(dlrm), ranks=[2, 3, 4]).table
    assert rows == expected.to_pylist()


def test_analyze_writes_csv_and_parquet(dlrm, tmp_path):
    res = run(
        "analyze",
        str(dlrm),
        "-a",
        "kernel_breakdown",
        "-a",
        "steps",
        "--format",
        "parquet",
        "-o",
        str(tmp_path / "pq"),
    )
    assert res.exit_code == 0, res.output
    names = sorted(os.listdir(tmp_path / "pq"))
    assert names == [
        "kernel_breakdown.distribution.parquet",
        "kernel_breakdown.kernels.parquet",
        "kernel_breakdown.parquet",
        "steps.parquet",
        "steps.steps.parquet",
    ]
    assert pq.read_table(tmp_path / "pq" / "steps.parquet").num_rows == 8
    res = run(
        "analyze", str(dlrm), "-a", "idle_time", "--format", "csv", "-o", str(tmp_path / "csv")
    )
    assert res.exit_code == 0
    lines = (tmp_path / "csv" / "idle_time.csv").read_text().splitlines()
    assert lines[0] == '"rank","stream","idle_category","idle_time","idle_time_ratio","intervals"'
    assert len(lines) == 1 + 96


def test_analyze_steps_select(traces_dir):
    folder = traces_dir / "hta" / "negative_queue_length_values_check"
    all_steps = json.loads(run("analyze", str(folder), "-a", "steps", "--format", "json").output)
    steps = [r["step"] for r in all_steps["tables"]["steps"]]
    assert len(steps) >= 2
    pick = json.loads(
        run(
            "analyze", str(folder), "-a", "steps", "--steps", f"{steps[1]}", "--format", "json"
        ).output
    )
    assert [r["step"] for r in pick["tables"]["steps"]] == [steps[1]]


def test_analyze_table_format_limits_rows(dlrm):
    res = run("analyze", str(dlrm), "-a", "idle_time", "--limit", "5")
    assert res.exit_code == 0
    assert "idle_time (96 rows)" in res.output
    assert "... 91 more rows" in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--steps", "x"], "--steps"),
        (["--steps", "5:2"], "ends before it starts"),
        (["--ranks", "9"], "no such rank(s): [9]"),
        (["--format", "csv"], "give a folder with -o DIR"),
        (["-a", "nonsense"], "nonsense"),
    ],
)
def test_analyze_bad_options(dlrm, args, message):
    res = run_subprocess("analyze", str(dlrm), *args)
    assert res.returncode == 2
    assert message in one_error_line(res.stderr)


# --- bad input: exit 2, one line, no traceback ----------------------------------------------
def test_missing_path(tmp_path):
    missing = tmp_path / "nope.json"
    for command in ("info", "analyze", "report", "convert"):
        extra = ["-o", str(tmp_path / "out")] if command == "convert" else []
        res = run_subprocess(command, str(missing), *extra)
        assert res.returncode == 2, (command, res.stderr)
        assert (
            one_error_line(res.stderr) == f"hta-fast: error: {missing}: no such file or directory"
        )


def test_truncated_trace_names_file_and_offset_and_what_to_do(truncated):
    res = run_subprocess("report", str(truncated), "-o", str(truncated.parent / "r.html"))
    assert res.returncode == 2
    line = one_error_line(res.stderr)
    assert str(truncated) in line and "at byte " in line and "--recover" in line
    assert not (truncated.parent / "r.html").exists()
    recovered = run("info", "--json", "--recover", str(truncated))
    assert recovered.exit_code == 0
    assert json.loads(recovered.stdout)["ranks"][0]["events"] > 100  # the summary: stderr


def test_not_a_trace(traces_dir, tmp_path):
    res = run_subprocess(
        "info", str(traces_dir / "hta" / "execution_trace" / "benchmark_simple_add_et.json.gz")
    )
    assert res.returncode == 2
    assert "not a trace" in one_error_line(res.stderr)
    garbage = tmp_path / "garbage.json.gz"
    garbage.write_bytes(gzip.compress(b"hello, world"))
    res = run_subprocess("analyze", str(garbage))
    assert res.returncode == 2
    assert f"{garbage} at byte 0" in one_error_line(res.stderr)
    broken_gzip = tmp_path / "broken.json.gz"
    broken_gzip.write_bytes(gzip.compress(b'{"traceEvents": []}')[:12])
    res = run_subprocess("info", str(broken_gzip))
    assert res.returncode == 2
    assert str(broken_gzip) in one_error_line(res.stderr)


def test_folder_without_traces(tmp_path):
    res = run_subprocess("info", str(tmp_path))
    assert res.returncode == 2
    assert "no trace files" in one_error_line(res.stderr)


def test_debug_shows_the_traceback(truncated):
    res = run_subprocess("--debug", "info", str(truncated))
    assert res.returncode != 0
    assert "Traceback" in res.stderr and "TraceFormatError" in res.stderr


def test_usage_errors_are_one_line():
    for args in (["nocommand"], ["analyze"], ["doctor", "--fail-under-utilization", "200", "x"]):
        res = run_subprocess(*args)
        assert res.returncode == 2, args
        one_error_line(res.stderr)


def test_help_and_entry_points():
    res = run_subprocess("--help")
    assert res.returncode == 0
    for command in ("info", "analyze", "report", "doctor", "diff", "convert", "demo"):
        assert command in res.stdout
    script = os.path.join(os.path.dirname(sys.executable), "hta-fast")
    assert os.path.exists(script), "pip install -e . installs the hta-fast script"
    out = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and hta_fast.__version__ in out.stdout


def test_no_progress_bar_into_a_pipe(dlrm, tmp_path):
    # stdout is a pipe here: no bar, so stderr stays empty on success
    res = run_subprocess("report", str(dlrm), "-o", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""


def test_broken_pipe_is_quiet(dlrm):
    cmd = f"{sys.executable} -m hta_fast analyze {dlrm} -a idle_time --limit 0 | head -1"
    res = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120
    )
    assert res.stdout.startswith("idle_time")
    assert res.stderr == ""


# --- diff ----------------------------------------------------------------------------------
def test_diff_equals_trace_diff(traces_dir):
    a = traces_dir / "hta" / "trace_diff" / "control"
    b = traces_dir / "hta" / "trace_diff" / "test"
    res = run("diff", str(a), str(b), "--device", "gpu", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    # The command compares time per step over every step but warm-up (step_diff).
    expected = trace_diff.step_diff(hta_fast.load_dir(a), hta_fast.load_dir(b), device="gpu")
    assert rows == expected.table.to_pylist()
    text = run("diff", str(a), str(b), "--limit", "3")
    assert text.exit_code == 0
    assert text.output.startswith("mean step A -> B: ")
    assert "time per step by name, largest change first" in text.output
    assert "... " in text.output


def test_diff_bad_side(traces_dir, tmp_path):
    res = run_subprocess(
        "diff", str(traces_dir / "hta" / "trace_diff" / "control"), str(tmp_path / "missing")
    )
    assert res.returncode == 2
    assert "missing: no such file or directory" in one_error_line(res.stderr)


# --- convert -------------------------------------------------------------------------------
def test_convert_round_trip(dlrm, tmp_path):
    out = tmp_path / "dataset"
    res = run("convert", str(dlrm), "-o", str(out))
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "hta_fast.parquet_dataset"
    assert sorted(manifest["ranks"]) == [str(r) for r in range(8)]
    assert (out / "events" / "rank=3" / "part-0.parquet").is_file()
    loaded = hta_fast.load_dir(dlrm)
    events = ds.dataset(out / "events", partitioning="hive").to_table()
    assert events.num_rows == sum(t.events.num_rows for t in loaded.values())
    for r, t in loaded.items():
        mine = events.filter(ds.field("rank") == r).drop_columns(["rank"])
        assert mine.column("ts").to_pylist() == t.events.column("ts").to_pylist()
        assert mine.column("name").to_pylist() == t.events.column("name").to_pylist()
        assert manifest["ranks"][str(r)]["rows"]["events"] == t.events.num_rows
    for table in manifest["tables"]:
        assert len(list((out / table).glob("rank=*/part-0.parquet"))) == 8
    again = run("convert", str(dlrm), "-o", str(out))
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert run("convert", str(dlrm), "-o", str(out), "--overwrite").exit_code == 0


def test_convert_refuses_to_replace_a_foreign_folder(dlrm, tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    res = run_subprocess("convert", str(dlrm), "-o", str(tmp_path), "--overwrite")
    assert res.returncode == 2
    assert "refusing" in one_error_line(res.stderr)
    assert (tmp_path / "mine.txt").exists()


# --- doctor (against the agreed interface, with a stand-in diagnosis) ------------------------
@pytest.fixture()
def doctor_says(monkeypatch):
    def install(**kw):
        mod = fake_doctor.module(**kw)
        monkeypatch.setitem(sys.modules, "hta_fast.doctor", mod)
        return mod

    return install


def test_doctor_healthy_exits_0(dlrm, doctor_says):
    mod = doctor_says(utilization=0.9, findings=[fake_doctor.launch_bound_finding(above=False)])
    res = run("doctor", str(dlrm), "--steps", "10")
    assert res.exit_code == 0, res.output
    assert "GPU utilization 90.0 %" in res.output
    assert mod.calls == [{"ranks": list(range(8)), "steps": [10], "thresholds": None}]


def test_doctor_finding_above_threshold_exits_1(dlrm, doctor_says):
    doctor_says(findings=[fake_doctor.launch_bound_finding()])
    res = CliRunner().invoke(cli, ["doctor", str(dlrm)])
    assert res.exit_code == 1
    assert "FAIL: launch_bound" in res.output


def test_doctor_gates(dlrm, doctor_says):
    doctor_says(utilization=0.42, findings=[fake_doctor.launch_bound_finding()])
    assert run("doctor", str(dlrm), "--fail-under-utilization", "40").exit_code == 0
    assert run("doctor", str(dlrm), "--fail-under-utilization", "50").exit_code == 1
    assert run("doctor", str(dlrm), "--fail-on", "rank_imbalance").exit_code == 0
    assert run("doctor", str(dlrm), "--fail-on", "launch_bound").exit_code == 1


def test_doctor_json(dlrm, doctor_says):
    doctor_says(utilization=0.42, findings=[fake_doctor.launch_bound_finding()])
    res = run("doctor", str(dlrm), "--json", "--fail-under-utilization", "50")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert doc["utilization"] == 0.42
    assert doc["findings"][0]["cause"] == "launch_bound"
    assert doc["gate"] == {"passed": False, "reasons": ["utilization 42.0 % < 50.0 %"]}


def test_doctor_thresholds(dlrm, doctor_says, tmp_path):
    mod = doctor_says()
    assert run("doctor", str(dlrm), "--threshold", "min_share=0.2").exit_code == 0
    assert mod.calls[-1]["thresholds"] == fake_doctor.Thresholds(min_share=0.2)
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"tiny_kernel_ns": 5000}))
    assert (
        run("doctor", str(dlrm), "--thresholds", str(f), "--threshold", "min_share=0.1").exit_code
        == 0
    )
    assert mod.calls[-1]["thresholds"] == fake_doctor.Thresholds(min_share=0.1, tiny_kernel_ns=5000)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--threshold", "nope=1"], "KEY one of min_share, tiny_kernel_ns"),
        (["--threshold", "min_share=abc"], "is not a number"),
        (["--fail-on", "gremlins"], "gremlins: not a cause"),
    ],
)
def test_doctor_bad_options_exit_2(dlrm, doctor_says, args, message):
    doctor_says()
    res = CliRunner().invoke(cli, ["doctor", str(dlrm), *args])
    assert res.exit_code == 2
    assert message in res.output


def test_doctor_bad_input_exit_2(truncated, doctor_says):
    mod = doctor_says()
    res = run("doctor", str(truncated))
    assert res.exit_code == 2
    assert mod.calls == []


def test_doctor_without_the_doctor_package(dlrm, monkeypatch):
    monkeypatch.setitem(sys.modules, "hta_fast.doctor", None)  # import raises ImportError
    res = run("doctor", str(dlrm))
    assert res.exit_code == 2
    assert "the doctor is not available" in res.output


# --- demo ----------------------------------------------------------------------------------
@pytest.mark.slow  # generates a trace set and its report
def test_demo_writes_traces_and_a_report(tmp_path):
    res = run_subprocess("demo", "-o", str(tmp_path), "--ranks", "2", "--size-mb", "2")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "rank0.json.gz",
        "rank1.json.gz",
        "report.html",
    ]
    traces = hta_fast.load_dir(tmp_path)
    assert traces.ranks == [0, 1]
    assert all(t.meta.world_size == 2 for t in traces.values())
    assert "report: " in res.stdout
    assert (tmp_path / "report.html").stat().st_size > 1_000_000  # plotly.js inlined


def test_demo_without_a_base(tmp_path):
    res = run_subprocess("demo", "-o", str(tmp_path), "--base", str(tmp_path / "none.json"))
    assert res.returncode == 2
    one_error_line(res.stderr)


# --- every analysis by name ------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_every_analysis_runs_by_name(traces_dir, name):
    folder = traces_dir / "hta" / "trace_filter"
    res = run("analyze", str(folder), "-a", name, "--format", "json")
    assert res.exit_code == 0, res.output
    tables = json.loads(res.output)["tables"]
    expected = ANALYSES[name](hta_fast.load_dir(folder), Selection())
    assert len(tables[name]) == expected.table.num_rows
    assert sorted(tables) == sorted([name] + [f"{name}.{k}" for k in expected.tables])


def test_progress_only_for_a_terminal(monkeypatch):
    from hta_fast.cli.app import Options

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert Options().progress and not Options(quiet=True).progress
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert not Options().progress


def test_a_bar_shows_only_once_work_has_lasted(monkeypatch, capsys):
    from hta_fast.cli import progress

    with progress.Progress(True, 4, "quick", None) as quick:
        quick.update(4)  # done within DELAY_S: never shown
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    with progress.Progress(True, 4, "slow", None) as slow:
        slow.update(1)
        slow.update(3)
    with progress.Progress(False, 4, "asked not to", None) as hidden:
        hidden.update(4)
    assert list(progress.Progress(True, None, "items", ["a", "b"])) == ["a", "b"]
    err = capsys.readouterr().err
    assert "slow" in err and "items" in err  # into a file click writes the label alone
    assert "quick" not in err and "asked not to" not in err


def test_doctor_ranks(dlrm, doctor_says):
    mod = doctor_says()
    assert run("doctor", str(dlrm), "--ranks", "1,3").exit_code == 0
    assert mod.calls[-1]["ranks"] == [1, 3]
    res = run_subprocess("report", str(dlrm), "--ranks", "8", "-o", "never.html")
    assert res.returncode == 2
    assert "no such rank(s) [8]" in one_error_line(res.stderr)


def test_text_tables_show_units_for_people_and_files_keep_ns(tmp_path):
    """Every duration and point in time in the one unit that suits the whole table, points in
    time from the trace's start (or from the column's first, without one); CSV keeps the raw
    ns."""
    import pyarrow as pa

    from hta_fast.cli.output import text_table, write_tables
    from hta_fast.frame.fields import NS

    t = pa.table(
        [pa.array([5_000_000, 7_250_000]), pa.array([1_700_000_000_002_000_000, 1_700_000_000_004_500_000]),
         pa.array([800, 900]), pa.array([2.5e9, 1.0e9])],
        schema=pa.schema([pa.field("dur", pa.int64(), metadata=NS), pa.field("start", pa.int64(), metadata=NS),
                          pa.field("gap", pa.int64(), metadata=NS), pa.field("total", pa.float64(), metadata=NS)]),
    )  # fmt: skip
    text = text_table(t, origin_ns=1_700_000_000_000_000_000)
    head, _, first, second = text.splitlines()
    assert "dur (ms)" in head and "start (ms from trace start)" in head
    assert "gap (ms)" in head and "total (ms)" in head
    assert first.split() == ["5.00", "2.00", "0.00", "2,500.00"]
    assert second.split() == ["7.25", "4.50", "0.00", "1,000.00"]
    assert "start (ms from the first)" in text_table(t).splitlines()[0]
    (path,) = write_tables({"t": t}, "csv", str(tmp_path))
    assert open(path).read().splitlines()[1].startswith("5000000,1700000000002000000,800")
    # A table of short gaps alone stays in ns.
    assert "gap (ns)" in text_table(t.select(["gap"])).splitlines()[0]


def test_columns_that_name_a_row_print_as_written():
    """A step, a rank or a pid is a name: 1009, not 1,009 (the CLI and the report alike);
    a count beside it keeps its separators, and a key column of text is still made safe."""
    import pyarrow as pa

    from hta_fast.cli.output import text_table
    from hta_fast.report.page.tables import html_table

    t = pa.table({"step": [1009], "pid": [123456], "count": [1009], "device": ["a\x1b[31mb"]})
    head, _, row = text_table(t).splitlines()
    assert row.split()[:3] == ["1009", "123456", "1,009"]
    assert "\x1b" not in row
    assert html_table("t", t)["rows"][0][:3] == ["1009", "123456", "1,009"]
