"""Graph replays and the operators that captured them (hta_fast.frame.graph_replays,
graph_captures, graph_attribution, capture_trace; analysis.graphs.graph_replays), on
synthetic traces whose answers hold by construction and on the shared traces that replay
graphs (their numbers worked out here from the JSON itself)."""

from __future__ import annotations

import collections
import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.graphs.graph_replays import graph_replays
from hta_fast.analysis.launch_stats import launch_stats
from hta_fast.analysis.ops.op_kernels import kernel_launch_configs, op_kernels
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.analysis.ops.roofline import roofline
from hta_fast.cli import cli
from hta_fast.frame.graph_attribution import operator_launch_pairs, with_capturing_ops
from hta_fast.frame.graph_captures import graph_captures
from hta_fast.frame.graph_replays import graph_replays as replays_of
from hta_fast.frame.select import Selection
from hta_fast.report.page.context import Context
from hta_fast.report.sections import graphs as sections_graphs
from tests.support.kineto_builder import BASE_US, KinetoBuilder
from tests.support.op_traces import OpTraceBuilder
from tests.support.paths import SHARED_TRACES

US = 1_000  # ns
OPS = ("aten::mm", "aten::add", "aten::relu")
# (name, GPU start after the replay's region starts, duration), in µs
KERNELS = (("k_mm", 100.0, 30.0), ("k_add", 140.0, 10.0), ("k_relu", 160.0, 5.0))
REPLAY_US = sum(k[2] for k in KERNELS)  # 45
EAGER_US = 15.0


def capture(b: KinetoBuilder, t0: float, ops=OPS, apis=None) -> None:
    """One operator per op name at t0, t0 + 30, ..., each making one captured launch."""
    for j, name in enumerate(ops):
        b.cpu_op(name, t0 + 30 * j, 20)
        b.captured_launch(t0 + 30 * j + 5, api=apis[j] if apis else "cudaLaunchKernel")


def replay(b: KinetoBuilder, t0: float, kernels=KERNELS, api: str = "cudaGraphLaunch") -> None:
    """A compiled region at t0 whose graph launch (at t0 + 10) replays `kernels`, then an
    eager aten::mul with one kernel of EAGER_US."""
    b.cpu_op("CompiledRegion", t0, 50)
    b.graph_launch(t0 + 10, [(n, t0 + off, d) for n, off, d in kernels], api=api)
    b.cpu_op("aten::mul", t0 + 300, 20)
    b.kernel("k_mul", t0 + 305, t0 + 400, EAGER_US)


def captured_then_replayed(replays: int = 2) -> KinetoBuilder:
    """Step 0 captures OPS' launches; steps 1.. each replay the graph once."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    capture(b, 10)
    for s in range(1, replays + 1):
        b.step(s, 1000 * s, 1000)
        replay(b, 1000 * s + 10)
    return b


def by_name(result) -> dict:
    return {r["name"]: r for r in result["by_name"].to_pylist()}


# --- a capture in the trace ----------------------------------------------------------------
def test_replayed_kernels_count_for_the_capturing_operators():
    t = captured_then_replayed().load()
    rows = by_name(op_table(t))
    for name, (_, _, dur) in zip(OPS, KERNELS):
        assert rows[name]["count"] == 1  # captured once
        assert rows[name]["gpu_events"] == 2  # replayed twice
        assert rows[name]["gpu_time_sum"] == 2 * dur * US
        assert rows[name]["self_gpu_time_sum"] == 2 * dur * US
    assert rows["CompiledRegion"]["count"] == 2
    assert rows["CompiledRegion"]["gpu_time_sum"] == 0
    assert rows["aten::mul"]["gpu_time_sum"] == 2 * EAGER_US * US
    total = 2 * (REPLAY_US + EAGER_US)
    note = (
        f"rank 0: 6 GPU events ({100 * 2 * REPLAY_US / total:.2f} % of the GPU time) of 2 "
        "graph replay(s) count for the operators that captured them"
    )
    assert note in op_table(t).notes


def test_op_kernels_instances_are_one_per_replay():
    t = captured_then_replayed().load()
    r = op_kernels(t)
    rows = {x["op_name"]: x for x in r.table.to_pylist()}
    assert rows["aten::mm"]["kernel_sequence"] == "k_mm"
    assert rows["aten::mm"]["occurrence_count"] == 2
    # op_launch_delay at the capture (launch 5 µs into the operator); runtime_delay from the
    # graph launch (t0 + 10) to the kernel (t0 + 100)
    assert rows["aten::mm"]["avg_op_launch_delay"] == 5 * US
    assert rows["aten::mm"]["avg_runtime_delay"] == 90 * US
    assert rows["aten::relu"]["avg_runtime_delay"] == 150 * US
    assert "CompiledRegion" not in rows
    configs = {x["kernel"]: x for x in kernel_launch_configs(t).table.to_pylist()}
    assert configs["k_add"]["op_name"] == "aten::add" and configs["k_add"]["calls"] == 2
    assert configs["k_mul"]["op_name"] == "aten::mul"


def test_launch_stats_keeps_the_graph_launch_and_says_so():
    t = captured_then_replayed().load()
    r = launch_stats(t)
    names = collections.Counter(str(n) for n in r.table["launch_name"].to_pylist())
    assert names == {"cudaGraphLaunch": 6, "cudaLaunchKernel": 2}
    assert any("count for the operators that captured them" in n for n in r.notes)


def test_graph_replays_analysis_by_construction():
    t = captured_then_replayed().load()
    r = graph_replays(t)
    rows = r.table.to_pylist()
    assert [x["replay"] for x in rows] == [0, 1]
    share = 100 * REPLAY_US / (2 * (REPLAY_US + EAGER_US))
    for s, x in enumerate(rows, start=1):
        assert str(x["launch_name"]) == "cudaGraphLaunch"
        assert x["launch_ts"] == (BASE_US + 1000 * s + 20) * US
        assert x["gpu_events"] == x["kernels"] == 3
        assert x["gpu_time"] == REPLAY_US * US
        assert x["gpu_time_pct"] == pytest.approx(share)
        assert x["capture_matched"] and x["captures_matching"] == 1
        assert x["capture_ts"] == (BASE_US + 15) * US  # the capture's first launch
        assert x["capturing_ops"] == ", ".join(OPS)
    events = r["events"].to_pylist()
    assert [(str(e["name"]), str(e["op_name"])) for e in events[:3]] == list(
        zip([k[0] for k in KERNELS], OPS)
    )
    assert [e["item"] for e in events] == [0, 1, 2, 0, 1, 2]


def test_step_selection_keeps_the_capturing_operators():
    t = captured_then_replayed().load()
    rows = by_name(op_table(t, steps=[2]))
    assert rows["aten::mm"]["count"] == 1
    assert rows["aten::mm"]["gpu_time_sum"] == 30 * US
    assert rows["CompiledRegion"]["count"] == 1
    r = graph_replays(t, steps=[2])
    assert r.table["replay"].to_pylist() == [1]
    assert r.table["gpu_time_pct"].to_pylist() == [pytest.approx(75.0)]


def test_roofline_and_modelled_share_charge_the_capturing_operator(tmp_path):
    def build(with_capture: bool) -> OpTraceBuilder:
        b = OpTraceBuilder()
        b.step(0, 0, 1000)
        if with_capture:
            b.op("aten::mm", 10, 20, [[512, 4096], [4096, 4096]], ["c10::BFloat16"] * 2)
            b.captured_launch(15)
        for s in (1, 2):
            b.step(s, 1000 * s, 1000)
            replay(b, 1000 * s + 10, kernels=(("k_mm", 100.0, 30.0),))
        return b

    t = build(True).load()
    rows = {x["name"]: x for x in roofline(t).table.to_pylist()}
    assert rows["aten::mm"]["gpu_time"] == 60 * US and rows["aten::mm"]["calls"] == 1
    for name, with_capture in (("with.json", True), ("without.json", False)):
        (tmp_path / name).write_bytes(build(with_capture).to_bytes())
    run = CliRunner().invoke
    out = run(cli, ["ops", str(tmp_path / "with.json")], catch_exceptions=False).output
    assert f"ran {100 * 60 / (60 + 30):.2f} % of the GPU time" in out
    out = run(cli, ["ops", str(tmp_path / "without.json")], catch_exceptions=False).output
    assert "ran 0.00 % of the GPU time" in out
    assert "2 graph replay(s) with no capture recorded" in out
    assert out.count("with no capture recorded") == 1  # said once, not per result


# --- replays that match no capture ---------------------------------------------------------
@pytest.mark.parametrize(
    "ops, apis, away",
    [
        (OPS[:2], None, 1),
        (OPS, ["cudaLaunchKernel", "cudaMemcpyAsync", "cudaLaunchKernel"], 2),
    ],
)
def test_a_capture_of_other_launches_is_not_matched(ops, apis, away):
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    capture(b, 10, ops=ops, apis=apis)
    for s in (1, 2):
        b.step(s, 1000 * s, 1000)
        replay(b, 1000 * s + 10)
    t = b.load()
    assert graph_captures(t).total == 1
    rows = by_name(op_table(t))
    assert rows["CompiledRegion"]["gpu_time_sum"] == 2 * REPLAY_US * US
    assert rows["aten::mm"]["gpu_time_sum"] == 0
    r = graph_replays(t)
    assert r.table["capture_matched"].to_pylist() == [False, False]
    assert r.table["capturing_ops"].to_pylist() == [None, None]
    share = 100 * REPLAY_US / (REPLAY_US + EAGER_US)
    # One launch of three is another graph, not a near match; a capture was recorded, so
    # the note does not ask for one.
    assert r.notes == [
        f"rank 0: 6 GPU events ({share:.2f} % of the GPU time) ran in 2 graph replay(s) with "
        f"no capture of the same launches (1 capture(s) recorded, the closest {away} "
        "launch(es) away; a replay takes a capture up to 4 launches and 2 % of its size "
        "away): they count for the operators around the graph launch"
    ]


def test_no_capture_recorded():
    b = KinetoBuilder()
    b.step(1, 1000, 1000)
    replay(b, 1010)
    t = b.load()
    assert graph_captures(t).total == 0
    notes = op_kernels(t).notes
    assert len(notes) == 1 and "1 graph replay(s) with no capture recorded" in notes[0]
    rows = {x["op_name"]: x for x in op_kernels(t, op_prefix="").table.to_pylist()}
    assert rows["CompiledRegion"]["kernel_sequence"] == "k_mm -> k_add -> k_relu"


def test_several_matching_captures_the_latest_before_the_replay():
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    capture(b, 10, ops=("aten::a0", "aten::a1", "aten::a2"))
    b.step(1, 1000, 1000)
    replay(b, 1010)  # after capture A only
    b.step(2, 2000, 1000)
    capture(b, 2010, ops=("aten::b0", "aten::b1", "aten::b2"))
    b.step(3, 3000, 1000)
    replay(b, 3010)  # after A and B: B is the latest
    t = b.load()
    r = graph_replays(t)
    assert r.table["captures_matching"].to_pylist() == [1, 2]
    assert r.table["capturing_ops"].to_pylist() == [
        "aten::a0, aten::a1, aten::a2",
        "aten::b0, aten::b1, aten::b2",
    ]
    assert "1 of these replays matched several captures" in r.notes[0]
    rows = by_name(op_table(t))
    assert rows["aten::a0"]["gpu_time_sum"] == rows["aten::b0"]["gpu_time_sum"] == 30 * US


@pytest.mark.parametrize("marked", [True, False])
def test_begin_and_end_capture_bound_a_capture(marked):
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    if marked:
        b.begin_capture(5)
    capture(b, 10, ops=OPS[:2])
    if marked:
        b.end_capture(70)
    b.captured_launch(80)  # a launch with no GPU event, after the capture ended
    b.step(1, 1000, 1000)
    replay(b, 1010, kernels=KERNELS[:2])
    t = b.load()
    c = graph_captures(t)
    assert c.total == 1
    assert len(c.launch) == (2 if marked else 3)
    assert graph_replays(t).table["capture_matched"].to_pylist() == [marked]


@pytest.mark.parametrize("api", ["cudaGraphLaunch_v10000", "hipGraphLaunch", "cuGraphLaunch"])
def test_graph_launch_names(api):
    b = KinetoBuilder()
    b.step(1, 1000, 1000)
    replay(b, 1010, api=api)
    b.runtime("cudaGraphInstantiate", 1500, 5)
    t = b.load()
    r = replays_of(t)
    assert r.total == 1 and r.offsets.tolist() == [0, 3]
    assert int(r.gpu_time[0]) == REPLAY_US * US


# --- a capture recorded in another trace ---------------------------------------------------
def capture_builder() -> KinetoBuilder:
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    capture(b, 10)
    return b


def replays_builder() -> KinetoBuilder:
    b = KinetoBuilder()
    for s in (1, 2):
        b.step(s, 1000 * s, 1000)
        replay(b, 1000 * s + 10)
    return b


def test_a_capture_given_beside_the_trace():
    rep, cap = replays_builder().load(), capture_builder().load()
    merged = hta_fast.with_capture(rep, cap)
    rows = by_name(op_table(merged))
    for name, (_, _, dur) in zip(OPS, KERNELS):
        assert rows[name]["count"] == 1 and rows[name]["gpu_time_sum"] == 2 * dur * US
    assert rows["CompiledRegion"]["gpu_time_sum"] == 0
    # the trace itself is unchanged, and so are its own events in the copy
    assert by_name(op_table(rep))["CompiledRegion"]["gpu_time_sum"] == 2 * REPLAY_US * US
    n = rep.num_rows("events")
    for c, values in rep.columns("events").items():
        assert np.array_equal(merged.column("events", c)[:n], values)
    assert merged.strings.slice(0, len(rep.strings)).equals(rep.strings)
    added = merged.events.slice(n).to_pylist()
    assert {e["step"] for e in added} == {None}
    assert max(e["ts"] + e["dur"] for e in added) < (BASE_US + 1020) * US  # before the replay
    assert list(merged.thread_names.values()) == ["graph capture from another trace"]
    # selected by step, the capturing operators come along with their replays
    rows = by_name(op_table(merged, steps=[1]))
    assert rows["aten::mm"]["gpu_time_sum"] == 30 * US
    sets = hta_fast.with_capture(hta_fast.TraceSet({0: rep}), cap)
    assert graph_replays(sets).table["capture_matched"].to_pylist() == [True, True]


def test_capture_file_on_the_command_line(tmp_path):
    (tmp_path / "rep.json").write_bytes(replays_builder().to_bytes())
    (tmp_path / "cap.json").write_bytes(capture_builder().to_bytes())
    run = CliRunner().invoke
    args = ["analyze", str(tmp_path / "rep.json"), "-a", "graph_replays", "--format", "json"]
    doc = json.loads(run(cli, args + ["--capture", str(tmp_path / "cap.json")]).output)
    assert [x["capture_matched"] for x in doc["tables"]["graph_replays"]] == [True, True]
    assert "count for the operators that captured them" in doc["notes"]["graph_replays"][0]
    doc = json.loads(run(cli, args).output)
    assert [x["capture_matched"] for x in doc["tables"]["graph_replays"]] == [False, False]
    res = run(cli, ["ops", str(tmp_path / "rep.json"), "--capture", str(tmp_path / "cap.json")])
    assert res.exit_code == 0 and "count for the operators that captured them" in res.output
    res = run(cli, ["ops", str(tmp_path / "rep.json"), "--capture", str(tmp_path / "nope.json")])
    assert res.exit_code != 0


# --- traces without graph launches are left as they were ------------------------------------
def test_without_graph_launches_nothing_changes(traces_dir):
    t = hta_fast.load(traces_dir / "hta" / "trace_diff" / "control" / "control.json.gz")
    launch, gpu, by = operator_launch_pairs(t, None)
    assert by is launch  # the same array: every consumer reads what it read before
    mask = Selection(steps=[int(t.column("steps", "step")[0])]).event_mask(t)
    assert with_capturing_ops(t, mask) is mask
    assert replays_of(t).total == 0
    r = graph_replays(t)
    assert r.table.num_rows == 0 and r.notes == ["no graph launches on the selected ranks"]
    for result in (op_table(t), op_kernels(t), launch_stats(t), roofline(t)):
        assert not any("graph" in n for n in result.notes)
    ctx = Context(hta_fast.TraceSet({0: t}), Selection())
    section = sections_graphs.graph_replays(ctx)
    assert section.intro == "No graph launches on the selected ranks."
    assert not section.tables and not section.figures and not section.notes


def test_report_section_with_replays():
    t = captured_then_replayed().load()
    section = sections_graphs.graph_replays(Context(hta_fast.TraceSet({0: t}), Selection()))
    per_rank, largest = section.tables
    assert per_rank["rows"][0][:3] == ["0", "2", "2"]  # rank, replays, matched
    assert largest["more"] == 0 and len(largest["rows"]) == 2
    assert len(section.figures) == 1


# --- the shared traces that replay graphs ----------------------------------------------------
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def expected_replays(path) -> tuple[list[tuple[str, int, int]], float]:
    """From the JSON: per graph launch (by start) its name, GPU events and their summed
    duration (µs, as written), and the total GPU time (µs)."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    launches = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e["name"]
    }
    count: collections.Counter = collections.Counter()
    time: collections.Counter = collections.Counter()
    total = 0.0
    for e in events:
        if e.get("cat") in GPU_CATS:
            total += e["dur"]
            c = (e.get("args") or {}).get("correlation")
            if c in launches:
                count[c] += 1
                time[c] += e["dur"]
    order = sorted(launches, key=lambda c: launches[c]["ts"])
    return [(launches[c]["name"], count[c], time[c]) for c in order], total


@pytest.mark.parametrize(
    "relative, replays, events",
    [
        ("pairs/attention_backend/flux_aiter.json.gz", 4, 3972),
        ("hta/trace_diff/test/test.json.gz", 12, 5046),
    ],
)
def test_shared_traces_with_graph_replays(traces_dir, relative, replays, events):
    path = traces_dir / relative
    expected, total = expected_replays(path)
    assert len(expected) == replays and sum(n for _, n, _ in expected) == events
    r = graph_replays(hta_fast.load(path))
    got = r.table.to_pylist()
    assert [(str(x["launch_name"]), x["gpu_events"]) for x in got] == [
        (name, n) for name, n, _ in expected
    ]
    for x, (_, _, us) in zip(got, expected):
        assert x["gpu_time_pct"] == pytest.approx(100 * us / total, abs=1e-6)
        assert not x["capture_matched"]
    share = 100 * sum(us for _, _, us in expected) / total
    assert r.notes[0].startswith(
        f"rank {got[0]['rank']}: {events:,} GPU events ({share:.2f} % of the GPU time) ran "
        f"in {replays} graph replay(s) with no capture recorded"
    )


def test_flux_aiter_replays_993_kernels_each_for_89_percent(traces_dir):
    t = hta_fast.load(traces_dir / "pairs" / "attention_backend" / "flux_aiter.json.gz")
    r = graph_replays(t)
    assert r.table["kernels"].to_pylist() == [993] * 4
    assert sum(r.table["gpu_time_pct"].to_pylist()) == pytest.approx(89.11, abs=0.01)
    assert np.all(np.diff(replays_of(t).offsets) == 993)


def test_trace_copy_keeps_ids_and_checks_tables():
    t = captured_then_replayed().load()
    graph_replays(t)  # fills t's memo
    c = t.copy(strings=["a string of the copy's own"])
    assert len(c.memo) == 0  # a memo of its own
    assert c.strings.slice(0, len(t.strings)).equals(t.strings)
    assert c.strings[len(t.strings)].as_py() == "a string of the copy's own"
    assert c.column("events", "ts") is t.column("events", "ts")  # shared, not copied
    events = dict(t.columns("events"))
    events.pop("step")
    with pytest.raises(ValueError, match="every column"):
        t.copy({"events": events})


# --- many captures, and captures that replays only nearly match -----------------------------
def _capture_of(b: KinetoBuilder, t0: float, tag: str, apis: list) -> None:
    """One operator per launch at t0, t0 + 30, ..., named `tag_j`, making the launches of
    the given APIs (cudaLaunchKernel or cudaMemcpyAsync), between a begin and an end of
    capture."""
    b.begin_capture(t0 - 5)
    capture(b, t0, ops=[f"{tag}_{j}" for j in range(len(apis))], apis=apis)
    b.end_capture(t0 + 30 * len(apis))


def _replay_of(b: KinetoBuilder, t0: float, tag: str, n: int) -> None:
    """A graph launch at t0 + 10 replaying n kernels of 2 µs named `tag_k<j>`."""
    b.graph_launch(t0 + 10, [(f"{tag}_k{j}", t0 + 50 + 3 * j, 2.0) for j in range(n)])


def _ops_of_replays(t) -> list[list[str]]:
    """Per replay, the operator each of its GPU events counts for."""
    events = graph_replays(t)["events"].to_pylist()
    out: dict[int, list[str]] = {}
    for e in events:
        out.setdefault(e["replay"], []).append(str(e["op_name"]))
    return [out[k] for k in sorted(out)]


def test_many_captures_replayed_in_another_order_each_match_their_own():
    sizes = {"a": 4, "b": 15, "c": 12, "d": 7}
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    for i, (tag, n) in enumerate(sizes.items()):
        _capture_of(b, 10 + 2000 * i, tag, ["cudaLaunchKernel"] * n)
    order = ["c", "a", "d", "b", "b", "a"]
    for s, tag in enumerate(order, start=1):
        b.step(s, 10_000 * s, 10_000)
        _replay_of(b, 10_000 * s, tag, sizes[tag])
    t = b.load()
    got = _ops_of_replays(t)
    assert got == [[f"{tag}_{j}" for j in range(sizes[tag])] for tag in order]
    assert graph_replays(t).table["capture_matched"].to_pylist() == [True] * len(order)


def test_captures_of_one_size_are_told_apart_by_their_kinds():
    k, m = "cudaLaunchKernel", "cudaMemcpyAsync"
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    _capture_of(b, 10, "x", [k, m, k, k])
    _capture_of(b, 2010, "y", [k, k, m, k])
    b.step(1, 10_000, 10_000)
    b.graph_launch(
        10_010,
        [
            ("k0", 10_050, 2),
            ("k1", 10_053, 2),
            ("copy", 10_056, 2, "gpu_memcpy"),
            ("k2", 10_059, 2),
        ],
    )
    t = b.load()
    # The replay's third item is a copy: y's order, though x is as large and came first.
    assert graph_replays(t).table["capturing_ops"].to_pylist() == ["y_0, y_1, y_2, y_3"]


@pytest.mark.parametrize("named", [True, False])
def test_captures_of_one_shape_are_told_apart_by_the_kernels_their_launches_name(named):
    """Two captures of as many kernels (one graph per batch size): where the launch calls
    name their kernels (ROCm), each replay takes the capture that launched its kernels;
    where they do not (CUDA), the latest capture before it, and a note says so."""
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    for i, tag in enumerate(("bs1", "bs8")):
        b.begin_capture(10 + 2000 * i - 5)
        for j in range(3):
            b.cpu_op(f"{tag}_{j}", 10 + 2000 * i + 30 * j, 20)
            kernel = f"gemm_{tag}_{j}" if named else None
            b.captured_launch(10 + 2000 * i + 30 * j + 5, api="hipLaunchKernel", kernel=kernel)
        b.end_capture(10 + 2000 * i + 100)
    for s, tag in enumerate(("bs1", "bs8", "bs1"), start=1):
        b.step(s, 10_000 * s, 10_000)
        kernels = [(f"gemm_{tag}_{j}", 10_000 * s + 50 + 3 * j, 2.0) for j in range(3)]
        b.graph_launch(10_000 * s + 10, kernels, api="hipGraphLaunch")
    t = b.load()
    got = graph_replays(t).table["capturing_ops"].to_pylist()
    notes = " ".join(graph_replays(t).notes)
    if named:
        assert got == [f"{tag}_0, {tag}_1, {tag}_2" for tag in ("bs1", "bs8", "bs1")]
        assert "matched several captures" not in notes
    else:
        assert got == ["bs8_0, bs8_1, bs8_2"] * 3
        assert "3 of these replays matched several captures" in notes


@pytest.mark.parametrize("captured, replayed, distance", [(100, 99, 1), (200, 197, 3), (60, 61, 1)])
def test_a_replay_nearly_matching_its_capture_takes_it(captured, replayed, distance):
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    _capture_of(b, 10, "op", ["cudaLaunchKernel"] * captured)  # ends by 6 ms
    for s in (1, 2):
        b.step(s, 10_000 * s, 10_000)
        _replay_of(b, 10_000 * s, "r", replayed)
    t = b.load()
    r = graph_replays(t)
    assert r.table["capture_matched"].to_pylist() == [True, True]
    # Alike kinds: the items pair from the start, the ones left out come last.
    paired = min(captured, replayed)
    want = [f"op_{j}" for j in range(paired)] + ["CompiledRegion"] * (replayed - paired)
    got = _ops_of_replays(t)
    assert [ops[:paired] for ops in got] == [want[:paired]] * 2
    note = next(n for n in r.notes if "differs" in n)
    assert f"differs by up to {distance} launch(es)" in note
    assert f"{replayed} GPU events replayed, {captured} launches captured" in note


def test_a_replay_too_far_from_any_capture_says_how_far():
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    _capture_of(b, 10, "op", ["cudaLaunchKernel"] * 100)
    b.step(1, 10_000, 10_000)
    _replay_of(b, 10_000, "r", 90)
    r = graph_replays(b.load())
    assert r.table["capture_matched"].to_pylist() == [False]
    assert "the closest 10 launch(es) away" in r.notes[0]
    assert "--capture" not in r.notes[0]  # a capture was recorded: nothing to ask for


def test_flux_replays_take_the_capture_one_launch_longer():
    root = SHARED_TRACES / "modern/flux1_iteration"
    if not root.is_dir():
        pytest.skip("modern traces not present")
    t = hta_fast.with_capture(
        hta_fast.load(next(root.glob("*.json*"))), hta_fast.load(next(root.glob("capture/*")))
    )
    r = graph_replays(t)
    assert r.table["kernels"].to_pylist() == [993] * 4
    assert r.table["capture_matched"].to_pylist() == [True] * 4
    assert any("993 GPU events replayed, 994 launches captured" in n for n in r.notes)


def test_graph_instantiations_keep_unmarked_captures_apart():
    # No begin/end capture recorded, no real launch between the captures (a piecewise
    # capture): each instantiation closes one graph.
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    sizes = {"p": 4, "q": 15, "r": 12}
    t0 = 10.0
    for tag, n in sizes.items():
        capture(b, t0, ops=[f"{tag}_{j}" for j in range(n)])
        b.runtime("cudaGraphInstantiateWithFlags", t0 + 30 * n, 20)
        t0 += 30 * n + 100
    for s, tag in enumerate(["q", "r", "p"], start=1):
        b.step(s, 10_000 * s, 10_000)
        _replay_of(b, 10_000 * s, tag, sizes[tag])
    t = b.load()
    assert graph_captures(t).total == 3
    assert _ops_of_replays(t) == [
        [f"{tag}_{j}" for j in range(sizes[tag])] for tag in ["q", "r", "p"]
    ]
