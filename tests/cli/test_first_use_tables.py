"""Rough edges a new user hits first, one test each: one time unit per printed table (and one
that suits the whole column), shapes on one line, a window that misses some ranks of a set,
renamed equivalents paired in a diff, only step sources that work suggested, and notes said
of many ranks said once on the command line as in the report."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis import trace_diff
from hta_fast.cli import cli
from hta_fast.cli.output import emit, text_table
from hta_fast.frame.fields import NS, display_unit
from hta_fast.report.sections.findings import what_if_table
from tests.support.kineto_builder import KinetoBuilder

PAIR = "pairs/dataloader_workers/resnet50_num_workers_{}.pt.trace.json.gz"
SGLANG = "modern/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
VLLM = "modern/vllm_decode_full/graph_execution.json.gz"
B200 = "modern/b200_eager/eager_trace.json.gz"
DLRM = "param_dlrm_8rank"


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def run_subprocess(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hta_fast", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def header_units(line: str) -> set[str]:
    """The time units a text table's header names: '(ms)', '(ms from trace start)'..."""
    return set(re.findall(r"\((ns|µs|ms|s)(?: from [a-z ]+)?\)", line))


def ns_table(**columns: list) -> pa.Table:
    return pa.table(
        [pa.array(v) for v in columns.values()],
        schema=pa.schema(
            [
                pa.field(k, pa.float64() if isinstance(v[0], float) else pa.int64(), metadata=NS)
                for k, v in columns.items()
            ]
        ),
    )


# --- 1. one time unit per table --------------------------------------------------------------
def test_every_time_column_of_a_text_table_shares_one_unit():
    # A pass that starts at the trace's start (0 ns) and did no graph work: start and
    # graph_busy alone would be shown in ns beside ms.
    origin = 1_700_000_000_000_000_000
    t = ns_table(
        start=[origin],
        end=[origin + 473_830_000],
        dur=[473_830_000],
        gpu_busy=[9_770_000],
        graph_busy=[0],
    )
    head = text_table(t, origin_ns=origin).splitlines()[0]
    assert header_units(head) == {"ms"}, head


def test_a_column_reaching_seconds_is_not_shown_in_microseconds():
    # A top-N table sorted by time: one row of seconds above many of microseconds.
    values = [2_651_409_080] + [5_000 + i for i in range(40)]
    t = ns_table(total=values)
    text = text_table(t, limit=20)
    assert "(µs)" not in text.splitlines()[0]
    assert "2,651,409.08" not in text
    assert display_unit(values) != (1e3, "µs")
    # The unit is the whole column's, whatever the rows shown.
    assert text_table(t, limit=20).splitlines()[0] == text_table(t).splitlines()[0]


def test_phases_on_a_real_trace_print_one_unit(traces_dir):
    res = run("analyze", "-a", "phases", traces_dir / SGLANG)
    assert res.exit_code == 0, res.output
    heads = [line for line in res.stdout.splitlines() if line.startswith("rank  phase")]
    assert heads and all(len(header_units(h)) == 1 for h in heads), heads


def test_the_reports_what_if_table_has_one_unit():
    findings = [
        {"cause": "a", "saving_edit": "x", "saving_ns": 1_490_000_000.0, "cost_ns": 300.0},
        {"cause": "b", "saving_edit": "y", "saving_ns": 4_730_000.0, "cost_ns": 900_000.0},
    ]
    table = what_if_table(findings, step_ns=2e9)
    assert table["saving_unit"] == table["cost_unit"]


# --- 2. shapes on one line -------------------------------------------------------------------
def test_json_text_in_a_cell_is_printed_on_one_line():
    dims = "[\n  [\n    8,\n    128\n  ],\n  [\n    128,\n    64\n  ]\n]"
    t = pa.table({"name": ["aten::mm"], "input_dims": [dims]})
    text = text_table(t)
    assert "[[8, 128], [128, 64]]" in text and "\\n" not in text


def test_predict_ops_show_input_dims_on_one_line(traces_dir):
    res = run("predict", "--device", "H100", traces_dir / B200, "--limit", "5")
    assert res.exit_code == 0, res.output
    ops = res.stdout.split("predict.ops", 1)[1]
    assert "\\n" not in ops and "[[" in ops


def test_ops_narrow_cells_cut_the_one_line_shape(traces_dir):
    res = run("ops", traces_dir / B200, "--limit", "5")
    assert res.exit_code == 0, res.output
    assert "\\n" not in res.stdout and "[[" in res.stdout


# --- 3. a window that misses some ranks of a set ---------------------------------------------
def two_ranks(tmp_path: Path) -> Path:
    """Rank 0's events in the first ms, rank 1's from 5 ms on."""
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank, at in ((0, 0), (1, 5_000)):
        b = KinetoBuilder(rank=rank, world_size=2)
        b.step(1, at, 800)
        b.cpu_op("aten::add", at + 10, 50)
        b.kernel("k", at + 20, at + 40, 30)
        (folder / f"rank-{rank}.json").write_bytes(b.to_bytes())
    return folder


def test_a_window_empty_on_some_ranks_writes_the_others(tmp_path):
    folder, out = two_ranks(tmp_path), tmp_path / "out"
    res = run_subprocess("slice", folder, "--window", "0:1000000", "-o", out)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["rank-0.json.gz"]
    warnings = [line for line in res.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1 and "rank(s) [1]" in warnings[0], res.stderr
    assert hta_fast.load(out / "rank-0.json.gz").num_rows("events") > 0
    # Empty on every rank: an error, as on one rank.
    res = run_subprocess("slice", folder, "--window", "900000000:900000001", "-o", tmp_path / "o2")
    assert res.returncode == 2 and "holds no event on rank(s) [0, 1]" in res.stderr


# --- 4. renamed equivalents paired in a diff -------------------------------------------------
def test_the_data_loader_renamed_by_its_workers_is_one_row(traces_dir):
    a, b = (hta_fast.load(traces_dir / PAIR.format(n)) for n in (0, 4))
    res = trace_diff.step_diff(a, b)
    rows = {r["name"]: r for r in res.table.to_pylist()}
    assert not any("_SingleProcessDataLoaderIter" in n for n in rows)
    assert not any("_MultiProcessingDataLoaderIter" in n for n in rows)
    loader = rows[trace_diff.DATALOADER_NEXT_NAME]
    assert loader["control_duration_per_step"] == pytest.approx(46.82e6, rel=0.01)
    assert 0 < loader["test_duration_per_step"] < 5e6
    assert loader["counts_change_categories"] == "unchanged"
    note = [n for n in res.notes if "DataLoader" in n]
    assert len(note) == 1
    assert "_SingleProcessDataLoaderIter.__next__" in note[0]
    assert "_MultiProcessingDataLoaderIter.__next__" in note[0]
    text = run("diff", traces_dir / PAIR.format(0), traces_dir / PAIR.format(4), "--limit", "3")
    assert text.exit_code == 0, text.output
    assert "_MultiProcessingDataLoaderIter.__next__" in text.stdout  # the note, printed


def test_names_that_are_the_same_on_both_sides_are_left_as_they_are(traces_dir):
    a = hta_fast.load(traces_dir / PAIR.format(0))
    names = trace_diff.step_diff(a, a).table.column("name").to_pylist()
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in names


# --- 5. only step sources that work suggested ------------------------------------------------
def test_a_trace_without_steps_is_told_only_sources_that_work(traces_dir):
    res = run("diff", traces_dir / VLLM, traces_dir / SGLANG)
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "--steps-from iterations" not in line  # no repeated launches there: it fails
    assert "--steps-from decode" in line and "--steps-from host" in line
    for source in re.findall(r"--steps-from (\w+)", line):
        ok = run("diff", traces_dir / VLLM, traces_dir / SGLANG, "--steps-from", source)
        assert ok.exit_code == 0, (source, ok.output)


# --- 6. notes said of many ranks said once ---------------------------------------------------
def test_the_cli_folds_notes_said_of_many_ranks(capsys):
    notes = {"critical_path": [f"rank {r} step 10: 2 waits untied" for r in range(8)]}
    emit({}, notes, "table", None, 20)
    out = capsys.readouterr().out.splitlines()
    assert out == ["note (critical_path): 8 ranks (0, 1, 2, 3, 4, 5, 6, 7) step 10: 2 waits untied"]


def test_critical_path_on_eight_ranks_prints_fewer_notes_than_ranks(traces_dir):
    res = run("critical-path", traces_dir / DLRM)
    assert res.exit_code == 0, res.output
    notes = [line for line in res.stdout.splitlines() if line.startswith("note (critical_path)")]
    assert notes and len(notes) < 8, notes
