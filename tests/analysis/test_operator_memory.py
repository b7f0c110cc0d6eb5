"""Memory per operator from the allocator's [memory] events: a synthetic trace whose every
figure is known by construction, and the TensorBoard profiler plugin's own operator memory
table on real traces (run in the reference environment)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hta_fast.analysis.registry import ANALYSES
from hta_fast.analysis.tensorboard.operator_memory import operator_memory
from hta_fast.frame.select import Selection
from tests.support.kineto_builder import CPU_PID, KinetoBuilder
from tests.support.paths import REPO

TRACES = REPO.parent / "shared" / "traces"


def _builder() -> KinetoBuilder:
    """Step 1 [0, 150): aten::linear [10, 100) holding aten::addmm [20, 60) and
    aten::empty [70, 80). Step 2 [150, 400): aten::arange [200, 260) calling itself
    [210, 250). aten::zeros on another thread spans both steps. GPU0's Total Allocated
    after each event is written beside it."""
    b = KinetoBuilder()
    b.step(1, 0, 150)
    b.step(2, 150, 250)
    b.cpu_op("aten::linear", 10, 90)
    b.cpu_op("aten::addmm", 20, 40)
    b.cpu_op("aten::empty", 70, 10)
    b.cpu_op("aten::arange", 200, 60)
    b.cpu_op("aten::arange", 210, 40)
    b.events.append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::zeros",
            "pid": CPU_PID,
            "tid": 7,
            "ts": b.events[0]["ts"],
            "dur": 400,
            "args": {},
        }
    )
    b.memory(15, 100, addr=1, allocated=100)  # linear's own
    b.memory(16, 8, addr=50, allocated=8, device_type=0, device_id=-1)  # linear's, on the CPU
    b.memory(30, 1000, addr=2, allocated=1100)  # addmm
    b.memory(50, -1000, addr=2, allocated=100)  # addmm frees it
    b.memory(60, 8, addr=5, allocated=108)  # addmm has ended: linear's own
    b.memory(75, 512, addr=3, allocated=620)  # empty
    b.memory(100, 64, addr=4, allocated=684)  # linear has ended: no operator's
    b.memory(220, 256, addr=6, allocated=940)  # the inner arange
    b.memory(300, -50, addr=99, allocated=890)  # a block from before the trace: no operator's
    return b


def _rows(result) -> dict:
    return {(r["device"], r["name"]): r for r in result.table.to_pylist()}


def test_self_inclusive_and_peaks_by_construction():
    result = operator_memory(_builder().load())
    rows = _rows(result)
    linear = rows[("GPU0", "aten::linear")]
    assert linear["calls"] == 1
    assert (linear["self_alloc_count"], linear["self_alloc_bytes"]) == (2, 108)
    assert (linear["self_free_count"], linear["self_free_bytes"]) == (0, 0)
    assert linear["self_increase"] == 108
    assert (linear["alloc_count"], linear["alloc_bytes"], linear["increase"]) == (4, 1620, 620)
    # Before its first event GPU0 held 0; at most 1,100 during it.
    assert (linear["peak_increase"], linear["peak_allocated"]) == (1100, 1100)
    addmm = rows[("GPU0", "aten::addmm")]
    assert (addmm["self_alloc_bytes"], addmm["self_free_bytes"], addmm["increase"]) == (
        1000,
        1000,
        0,
    )
    assert (addmm["peak_increase"], addmm["peak_allocated"]) == (1000, 1100)
    empty = rows[("GPU0", "aten::empty")]
    assert (empty["alloc_bytes"], empty["peak_increase"], empty["peak_allocated"]) == (
        512,
        512,
        620,
    )
    # The self-nested call: two calls, one allocation counted once.
    arange = rows[("GPU0", "aten::arange")]
    assert arange["calls"] == 2
    assert (arange["self_alloc_count"], arange["alloc_count"], arange["alloc_bytes"]) == (1, 1, 256)
    assert arange["peak_increase"] == 256
    cpu = rows[("CPU", "aten::linear")]
    assert (cpu["self_alloc_bytes"], cpu["alloc_bytes"], cpu["peak_increase"]) == (8, 8, 8)
    # Another thread's operator spans every event but holds none of them.
    assert not any(name == "aten::zeros" for _, name in rows)
    assert ("CPU", "aten::addmm") not in rows


def test_devices_curve_and_allocations():
    result = operator_memory(_builder().load())
    devices = {r["device"]: r for r in result.tables["devices"].to_pylist()}
    gpu = devices["GPU0"]
    assert gpu["events"] == 8
    assert (gpu["alloc_count"], gpu["alloc_bytes"]) == (6, 1940)
    assert (gpu["free_count"], gpu["free_bytes"]) == (2, 1050)
    assert (gpu["unattributed_events"], gpu["unattributed_alloc_bytes"]) == (2, 64)
    assert (gpu["first_allocated"], gpu["peak_allocated"]) == (0, 1100)
    assert devices["CPU"]["events"] == 1
    curve = result.tables["curve"].filter(
        result.tables["curve"]["device"].to_numpy(zero_copy_only=False) == "GPU0"
    )
    assert curve["allocated"].to_pylist() == [100, 1100, 100, 108, 620, 684, 940, 890]
    assert curve["ts"].to_pylist() == sorted(curve["ts"].to_pylist())
    blocks = {r["addr"]: r for r in result.tables["allocations"].to_pylist()}
    assert blocks[2]["duration"] == 20_000 and blocks[2]["bytes"] == 1000
    assert blocks[2]["alloc_op"] == blocks[2]["free_op"] == "aten::addmm"
    assert blocks[1]["free_ts"] is None and blocks[1]["alloc_op"] == "aten::linear"
    assert blocks[99]["alloc_ts"] is None and blocks[99]["free_op"] is None
    assert blocks[4]["alloc_op"] is None
    assert any("2 of 9 memory events happened outside" in n for n in result.notes)


def test_steps_select_events_by_their_operator_or_time():
    result = operator_memory(_builder().load(), selection=Selection(steps=[1]))
    rows = _rows(result)
    assert ("GPU0", "aten::arange") not in rows
    assert rows[("GPU0", "aten::linear")]["alloc_bytes"] == 1620
    gpu = {r["device"]: r for r in result.tables["devices"].to_pylist()}["GPU0"]
    # The event at 100 µs is in step 1's span; the lone free at 300 µs is not.
    assert (gpu["events"], gpu["unattributed_events"], gpu["free_count"]) == (6, 1, 1)


def test_hip_devices_are_gpus_and_no_events_says_how():
    b = KinetoBuilder()
    b.cpu_op("aten::mm", 0, 10)
    b.memory(5, 4096, addr=1, allocated=4096, device_type=6, device_id=1)
    assert list(_rows(operator_memory(b.load()))) == [("GPU1", "aten::mm")]
    plain = KinetoBuilder()
    plain.cpu_op("aten::mm", 0, 10)
    result = operator_memory(plain.load())
    assert result.table.num_rows == 0
    assert any("profile_memory=True" in n for n in result.notes)


def test_registered_for_the_command_line():
    result = ANALYSES["operator_memory"](_builder().load(), Selection())
    assert result.name == "operator_memory"


# --- the plugin's own table on real traces ------------------------------------------------
PLUGIN_ORDER = (
    "self_increase",
    "self_alloc_bytes",
    "self_alloc_count",
    "increase",
    "alloc_bytes",
    "alloc_count",
    "calls",
)


def _plugin(path: Path) -> dict:
    python = REPO / ".venv-ref" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make .venv-ref/.deps` in the repository root")
    out = subprocess.run(
        [str(python), str(REPO / "tests" / "reference" / "run_tb_plugin.py"), str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout)


@pytest.mark.reference
@pytest.mark.parametrize(
    "name, expected_differences",
    [
        # The plugin's calls count only the calls its memory walk reached: five aten::sum
        # under operators with no memory event of their own.
        ("hta/df_index_resolver/df_index_resolver.json.gz", {("GPU1", "aten::sum", "calls")}),
        # aten::arange calls itself: the plugin counts the inner call's allocation twice.
        (
            "pairs/gpu_swap/Qwen_Qwen1.5-0.5B-Chat.h100.json.gz",
            {("GPU0", "aten::arange", k) for k in ("increase", "alloc_bytes", "alloc_count")},
        ),
    ],
)
def test_matches_the_plugin_on_real_traces(name, expected_differences):
    import hta_fast

    path = TRACES / name
    assert path.exists(), f"missing shared trace {path}"
    plugin = _plugin(path)["memory"]
    ours = _rows(operator_memory(hta_fast.load(path)))
    differences, compared = set(), 0
    for device, ops in plugin.items():
        for op, values in ops.items():
            row = ours.get((device, op))
            assert row is not None, (device, op)
            for key, value in zip(PLUGIN_ORDER, values):
                compared += 1
                if row[key] != value:
                    differences.add((device, op, key))
    assert compared > 200
    assert differences == expected_differences
    # Every row of ours is one of the plugin's (it leaves out rows of zeros too).
    assert set(ours) == {(d, op) for d, ops in plugin.items() for op in ops}


@pytest.mark.reference
def test_hip_memory_the_plugin_drops():
    """The plugin names only CPU and CUDA devices: an MI300X trace's HIP (type 6) events
    give it no table at all; here they are GPU0's."""
    import hta_fast

    path = TRACES / "pairs/gpu_swap/Falconsai_nsfw_image_detection.mi300x.json.gz"
    assert _plugin(path)["memory"] == {}
    rows = _rows(operator_memory(hta_fast.load(path)))
    assert rows and {d for d, _ in rows} == {"GPU0"}
    devices = operator_memory(hta_fast.load(path)).tables["devices"].to_pylist()
    assert devices[0]["events"] == 620


def test_a_trace_of_memory_rows_only_still_gives_its_curve():
    """A trace whose only events are [memory] instants (no operator at all): no operator
    rows, but the memory curve, the devices' totals and the allocations come out."""
    import json

    import hta_fast
    from hta_fast.analysis.tensorboard.operator_memory import operator_memory

    events = []
    for i, (addr, nbytes, total) in enumerate([(7, 1024, 1024), (8, 512, 1536), (7, -1024, 512)]):
        args = {"Addr": addr, "Bytes": nbytes, "Total Allocated": total}
        args.update({"Total Reserved": 4096, "Device Type": 1, "Device Id": 0})
        events.append(
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
             "ts": 10 + i, "s": "t", "args": args}
        )  # fmt: skip
    r = operator_memory(hta_fast.load(json.dumps({"traceEvents": events}).encode()))
    assert r.table.num_rows == 0
    assert r["curve"]["allocated"].to_pylist() == [1024, 1536, 512]
    alloc = r["allocations"].to_pylist()
    assert [(a["addr"], a["duration"]) for a in alloc if a["free_ts"] is not None] == [(7, 2000)]
    assert any("outside every operator" in n for n in r.notes)
