"""Traces written by PyTorch 2.14.1 (tests/data/torch_2_14, recorded by
scripts/record_torch_traces.py): each loads exactly, every event of the file kept in the
table of its phase and nothing counted as skipped; the profiler steps, the allocator's
instants and the operators' arguments are what the file says; report, slice and doctor run
on them. The expected values are read from the file with the json module."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.cli import cli
from tests.support.paths import DATA

TORCH_2_14 = DATA / "torch_2_14"
TRAIN = ["mlp_train.json.gz", "mlp_train_stack.json.gz"]
INFER = ["mlp_infer.json.gz", "mlp_infer_python_export.json.gz"]
ALL = TRAIN + INFER
# The loader's table for each phase the profiler writes.
TABLE_OF_PHASE = {"X": "events", "s": "flows", "f": "flows", "i": "instants", "M": "meta"}


def read(name: str) -> dict[str, Any]:
    """The file as the json module reads it, times as exact decimals."""
    with gzip.open(TORCH_2_14 / name, "rt") as f:
        return json.load(f, parse_float=Decimal)


def abs_ns(doc: dict[str, Any], ts: Any) -> int:
    """A `ts` (µs after baseTimeNanoseconds) as ns since the epoch."""
    return int(doc["baseTimeNanoseconds"]) + int(Decimal(ts) * 1000)


def complete(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("name", ALL)
def test_every_event_is_kept_in_the_table_of_its_phase(name):
    doc = read(name)
    phases = Counter(e["ph"] for e in doc["traceEvents"])
    assert set(phases) <= set(TABLE_OF_PHASE), phases
    trace = hta_fast.load(TORCH_2_14 / name)
    rows = Counter[str]()
    for phase, n in phases.items():
        rows[TABLE_OF_PHASE[phase]] += n
    for table, n in rows.items():
        assert trace.num_rows(table) == n, table
    assert sum(trace.stats["count"].to_pylist()) == 0, trace.stats
    # the same events, by name and start
    names = trace.strings_at(trace.column("events", "name")).to_pylist()
    assert Counter(zip(names, trace.column("events", "ts").tolist())) == Counter(
        (e["name"], abs_ns(doc, e["ts"])) for e in complete(doc)
    )


@pytest.mark.parametrize("name", ALL)
def test_header_is_kept(name):
    """Every top-level field (trace_id, host_name and the profiler's options among them)."""
    with gzip.open(TORCH_2_14 / name, "rt") as f:
        doc = json.load(f)
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    assert "record_shapes" in header and "baseTimeNanoseconds" in header
    meta = hta_fast.load(TORCH_2_14 / name).meta
    assert meta.header == header
    assert meta.base_time_ns == header["baseTimeNanoseconds"]
    assert meta.devices == [] and meta.distributed == {}


@pytest.mark.parametrize("name", TRAIN)
def test_profiler_steps_are_the_active_steps(name):
    doc = read(name)
    marks = [e for e in complete(doc) if e["name"].startswith("ProfilerStep#")]
    trace = hta_fast.load(TORCH_2_14 / name)
    steps = trace.to_arrow("steps").to_pydict()
    assert steps["step"] == [int(e["name"].split("#")[1]) for e in marks] == [2, 3, 4]
    assert steps["ts"] == [abs_ns(doc, e["ts"]) for e in marks]
    assert steps["dur"] == [int(Decimal(e["dur"]) * 1000) for e in marks]
    # every operator inside a step's window is on that step
    ts, step = trace.column("events", "ts"), trace.column("events", "step")
    for n, start, dur in zip(steps["step"], steps["ts"], steps["dur"]):
        inside = (ts >= start) & (ts < start + dur)
        assert inside.any() and (step[inside] == n).all()
    info = json.loads(run("info", "--json", TORCH_2_14 / name).output)["ranks"][0]
    assert (info["steps"], info["first_step"], info["last_step"]) == (3, 2, 4)
    assert info["events"] == len(complete(doc))


@pytest.mark.parametrize("name", TRAIN)
def test_memory_instants_keep_their_arguments(name):
    doc = read(name)
    memory = [e for e in doc["traceEvents"] if e["name"] == "[memory]"]
    assert len(memory) > 10
    trace = hta_fast.load(TORCH_2_14 / name)
    instants = trace.to_arrow("instants").to_pydict()
    kept = [i for i, n in enumerate(instants["name"]) if n == "[memory]"]
    assert len(kept) == len(memory)
    for column, arg in (
        ("bytes", "Bytes"),
        ("total_allocated", "Total Allocated"),
        ("total_reserved", "Total Reserved"),
        ("addr", "Addr"),
        ("device_type", "Device Type"),
    ):
        assert [instants[column][i] for i in kept] == [e["args"][arg] for e in memory], column
    assert [instants["ts"][i] for i in kept] == [abs_ns(doc, e["ts"]) for e in memory]
    # Device Id -1 (the CPU) is the column's missing value
    assert {e["args"]["Device Id"] for e in memory} == {-1}
    assert {instants["device_id"][i] for i in kept} == {None}


@pytest.mark.parametrize("name", ALL)
def test_operator_arguments_are_kept(name):
    doc = read(name)
    trace = hta_fast.load(TORCH_2_14 / name)
    ops = trace.to_arrow("op_args").to_pydict()
    external = trace.column("events", "external_id")
    by_row = {r: i for i, r in enumerate(ops["row"])}
    events = complete(doc)
    with_dims = 0
    # the loader keeps the events in file order within a thread; match them by start
    row_of = {
        (n, t): r
        for r, (n, t) in enumerate(
            zip(
                trace.strings_at(trace.column("events", "name")).to_pylist(),
                trace.column("events", "ts").tolist(),
            )
        )
    }
    for e in events:
        args = e.get("args", {})
        row = row_of[(e["name"], abs_ns(doc, e["ts"]))]
        if "External id" in args:
            assert external[row] == args["External id"]
        if "Input Dims" in args:
            with_dims += 1
            i = by_row[row]
            assert json.loads(ops["input_dims"][i]) == args["Input Dims"]
            assert json.loads(ops["input_type"][i]) == args["Input type"]
            assert json.loads(ops["input_strides"][i]) == args["Input Strides"]
            assert ops["record_function_id"][i] == args["Record function id"]
            assert ops["ev_idx"][i] == args["Ev Idx"]
            if "Sequence number" in args:
                assert ops["sequence_number"][i] == args["Sequence number"]
    assert with_dims > 10


def test_stacks_are_python_function_events():
    doc = read("mlp_train_stack.json.gz")
    trace = hta_fast.load(TORCH_2_14 / "mlp_train_stack.json.gz")
    cats = Counter(trace.strings_at(trace.column("events", "cat")).to_pylist())
    assert cats["python_function"] == sum(
        e.get("cat") == "python_function" for e in doc["traceEvents"]
    )
    assert cats["python_function"] > 100
    plain = hta_fast.load(TORCH_2_14 / "mlp_train.json.gz")
    assert "python_function" not in plain.strings_at(plain.column("events", "cat")).to_pylist()


@pytest.mark.parametrize("name", INFER)
def test_user_annotation_encloses_the_forward(name):
    trace = hta_fast.load(TORCH_2_14 / name)
    names = np.array(trace.strings_at(trace.column("events", "name")).to_pylist())
    regions = np.flatnonzero(names == "my_region")
    assert len(regions) == 3
    parent = trace.column("events", "parent")
    linear = np.flatnonzero(names == "aten::linear")
    assert len(linear) == 6  # two layers, three forwards
    assert sorted(Counter(parent[linear].tolist()).items()) == [(int(r), 2) for r in regions]
    assert not len(trace.column("steps", "step"))


@pytest.mark.parametrize("name", ALL)
def test_report_writes_a_page(name, tmp_path):
    out = tmp_path / "report.html"
    res = run("report", TORCH_2_14 / name, "-o", out)
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "</html>" in page


@pytest.mark.parametrize("name", TRAIN)
def test_slice_of_a_step(name, tmp_path):
    doc = read(name)
    mark = next(e for e in complete(doc) if e["name"] == "ProfilerStep#3")
    start = abs_ns(doc, mark["ts"])
    end = start + int(Decimal(mark["dur"]) * 1000)
    expected = Counter(
        (e["name"], abs_ns(doc, e["ts"]))
        for e in complete(doc)
        if start <= abs_ns(doc, e["ts"]) <= end
    )
    out = tmp_path / "step3.json.gz"
    res = run("slice", TORCH_2_14 / name, "--steps", "3", "-o", out)
    assert res.exit_code == 0, res.output
    sliced = hta_fast.load(out)
    names = sliced.strings_at(sliced.column("events", "name")).to_pylist()
    assert Counter(zip(names, sliced.column("events", "ts").tolist())) == expected
    assert sliced.column("steps", "step").tolist() == [3]


@pytest.mark.parametrize("name", INFER)
def test_slice_of_a_window(name, tmp_path):
    trace = hta_fast.load(TORCH_2_14 / name)
    names = np.array(trace.strings_at(trace.column("events", "name")).to_pylist())
    ts, dur = trace.column("events", "ts"), trace.column("events", "dur")
    second = np.flatnonzero(names == "my_region")[1]
    lo, hi = int(ts[second]), int(ts[second] + dur[second]) + 1
    first = int(ts.min())
    out = tmp_path / "window.json"
    res = run("slice", TORCH_2_14 / name, "--window", f"{lo - first}:{hi - first}", "-o", out)
    assert res.exit_code == 0, res.output
    sliced = hta_fast.load(out)
    inside = (ts >= lo) & (ts < hi)
    got = sliced.strings_at(sliced.column("events", "name")).to_pylist()
    assert Counter(zip(got, sliced.column("events", "ts").tolist())) == Counter(
        zip(names[inside].tolist(), ts[inside].tolist())
    )
    assert got.count("my_region") == 1 and got.count("aten::linear") == 2


@pytest.mark.parametrize("name", ALL)
def test_doctor_says_no_gpu_activity(name):
    res = run("doctor", TORCH_2_14 / name)
    assert res.exit_code == 3, res.output
    assert "no GPU activity recorded" in res.output
    assert "CPU-only" in res.output
