"""Small traces (tests/support/tb_plugin_cases.py) run through the PyTorch TensorBoard profiler
plugin (tests/reference/run_tb_plugin_cases.py, in .venv-ref) and through hta_fast: each of
the plugin's figures equal to ours, or differing as docs/differences.md says (section "The
TensorBoard profiler plugin's metrics")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.collectives import collectives
from hta_fast.analysis.kernel_breakdown import kernel_breakdown
from hta_fast.analysis.ops.op_kernels import kernel_launch_configs
from hta_fast.analysis.ops.op_table import op_table
from hta_fast.analysis.overlap import comm_comp_overlap
from hta_fast.analysis.tensorboard.achieved_occupancy import achieved_occupancy
from hta_fast.analysis.tensorboard.gpu_utilization import gpu_utilization
from hta_fast.analysis.tensorboard.modules import modules
from hta_fast.analysis.tensorboard.sm_efficiency import sm_efficiency
from hta_fast.analysis.tensorboard.step_breakdown import CATEGORIES, step_breakdown
from hta_fast.analysis.tensorboard.tensor_cores import tensor_cores
from hta_fast.steps.step_windows import plugin_kept_steps, step_windows
from hta_fast.steps.steps_from import with_steps_from
from hta_fast.trace import Trace
from tests.support import tb_plugin_cases as cases
from tests.support.paths import REPO

pytestmark = pytest.mark.reference  # runs the TensorBoard plugin

DLRM = REPO.parent / "shared" / "traces" / "param_dlrm_8rank"
US = 1000  # ns


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """run(case) -> (the plugin's figures, our traces of the case's ranks); each case once."""
    folder = tmp_path_factory.mktemp("tb_cases")
    done: dict[str, tuple[dict, list[Trace]]] = {}

    def once(name: str) -> tuple[dict, list[Trace]]:
        if name not in done:
            paths = cases.write_case(name, folder)
            done[name] = (_plugin(paths), [hta_fast.load(str(p)) for p in paths])
        return done[name]

    return once


def _plugin(paths: list[Path]) -> dict:
    python = REPO / ".venv-ref" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make .venv-ref/.deps` in the repository root")
    script = REPO / "tests" / "reference" / "run_tb_plugin_cases.py"
    out = subprocess.run(
        [str(python), str(script), *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _us(values: Any) -> list[float]:
    return [float(v) / US for v in values]


def _breakdown(trace: Trace) -> list[list[float]]:
    """Ours, per step, in the plugin's order: the categories, then the step's time (µs)."""
    rows = step_breakdown(trace).table.to_pylist()
    return [_us([r[c] for c in CATEGORIES] + [r["dur"]]) for r in rows]


def _distributed(trace: Trace) -> list[list[float]]:
    """Ours, per step: computation, overlap, communication, other (µs)."""
    rows = comm_comp_overlap(trace)["steps"].to_pylist()
    return [_us([r[k] for k in ("computation", "overlap", "communication", "other")]) for r in rows]


def _length(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    """The length of the union of the intervals inside [lo, hi) (µs, by a plain walk)."""
    covered = np.zeros(hi - lo, bool)
    for s, e in intervals:
        covered[max(s, lo) - lo : max(min(e, hi), lo) - lo] = True
    return int(covered.sum())


def _split(comp: list, comm: list, lo: int, hi: int) -> list[int]:
    """computation only, both, communication only, neither, inside [lo, hi) (µs)."""
    c, m, either = _length(comp, lo, hi), _length(comm, lo, hi), _length(comp + comm, lo, hi)
    both = c + m - either
    return [c - both, both, m - both, hi - lo - either]


# --- The distributed view -----------------------------------------------------------------


@pytest.mark.parametrize("case", ["distributed_gloo_gpu", "distributed_gloo_cpu"])
def test_gloo_distributed_view_and_breakdown_equal_the_plugins(run: Any, case: str) -> None:
    """gloo moves data on host threads: its calls' spans are the communication; computation
    is the kernels, or the CPU operators on a rank without kernels (gloo_cpu). The one step
    is the host events' span in both tools (no GPU work runs past it), and so is the host
    step source's, whose step is marked by the first host event (an aten::add_ that is CPU
    Exec all the same)."""
    plugin, traces = run(case)
    for k, (worker, trace) in enumerate(zip(plugin["workers"], traces)):
        view = plugin["distributed"]["overlap"]["0"][f"worker{k}"]
        costs = [costs for _, costs in worker["steps"]]
        for ours in (trace, with_steps_from(trace, "host")):
            assert _distributed(ours) == [view], (case, k)
            assert _breakdown(ours) == costs, (case, k)
        assert worker["has_communication"] and worker["comm_nodes"] == 5


@pytest.mark.parametrize("case", ["distributed_nccl", "distributed_nccl_steps"])
def test_nccl_distributed_view_counts_kernels_not_the_host_calls(run: Any, case: str) -> None:
    """Steps timed alike: distributed_nccl has no ProfilerStep#N, and the plugin's one step
    is its host events' span (0-235 µs), ours with the host step source; the steps of
    distributed_nccl_steps run to the end of the GPU work they launched in both tools.
    Computation and communication are kernels for both, but the plugin adds each nccl:*
    host call's span to communication (the call only queues its kernel); ours leaves it out
    (docs/differences.md)."""
    plugin, traces = run(case)
    for k, (worker, trace, events) in enumerate(zip(plugin["workers"], traces, cases.CASES[case])):
        ours = with_steps_from(trace, "host") if case == "distributed_nccl" else trace
        win = step_windows(ours, None)
        windows = [[int(a) // US, int(b) // US] for a, b in zip(win.ts, win.end)]
        assert windows == worker["step_windows"], k
        kernels = [e for e in events if e["cat"].lower() == "kernel"]
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if e["name"].startswith("nccl")]
        comp = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if not e["name"].startswith("nccl")]
        calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("nccl:")]
        mine = [_split(comp, comm, lo, hi) for lo, hi in windows]
        theirs = [_split(comp, comm + calls, lo, hi) for lo, hi in windows]
        view = plugin["distributed"]["overlap"]
        assert _distributed(ours) == mine, k
        assert [view[name][f"worker{k}"] for name, _ in worker["steps"]] == theirs, k
        assert mine != theirs
        if case == "distributed_nccl_steps":  # the overview: every category equal
            assert _breakdown(trace) == [c for _, c in worker["steps"]], k
    if case == "distributed_nccl":
        # Without steps our default window runs to the last GPU work's end (the all-reduce).
        (default,) = comm_comp_overlap(traces[0])["steps"].to_pylist()
        assert default["dur"] == 1718 * US
    else:
        assert windows == [[0, 400], [400, 560]]  # rank 1: the kernels ran past the steps


def test_nccl_breakdown_equals_the_plugins_but_where_a_kernel_covers_the_step(run: Any) -> None:
    """Rank 0: every category equal. Rank 1: the kernel and the collectives cover the whole
    step, and the plugin then counts the CPU operator's 20 µs anew and the whole step less
    them as "other" (its categories add up to 470 µs of a 235 µs step); ours add up."""
    plugin, traces = run("distributed_nccl")
    ours = [_breakdown(with_steps_from(t, "host")) for t in traces]
    theirs = [[costs for _, costs in w["steps"]] for w in plugin["workers"]]
    assert ours[0] == theirs[0]
    (mine,), (other,) = ours[1], theirs[1]
    cpu, rest = CATEGORIES.index("cpu_exec"), CATEGORIES.index("other")
    assert mine[:cpu] == other[:cpu] and sum(mine[:-1]) == mine[-1] == other[-1]
    assert (mine[cpu], mine[rest]) == (0, 0) and other[cpu] + other[rest] == other[-1]


def _merged(intervals: list[tuple[int, int]]) -> int:
    """The length of the union of the intervals (µs)."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


@pytest.mark.parametrize(
    "case",
    ["distributed_nccl", "distributed_nccl_steps", "distributed_gloo_gpu", "distributed_gloo_cpu"],
)
def test_collective_table_merges_what_ours_counts_per_collective(
    run: Any, case: str, tmp_path: Path
) -> None:
    """The plugin's collective table per worker and name: calls, bytes, latency and data
    transfer time. Ours (`collectives`) has each collective's own time (its per-rank span)
    and data time (the shortest of its ranks' spans, as the plugin's), summed per type; the
    plugin merges a worker's overlapping collectives first, and adds each nccl:* call's
    host span (its shortest over the workers as transfer). Its numbers are those unions of
    our intervals (docs/differences.md, "Per-worker collective time"), and so is a step's
    split into data transfer and synchronizing (all its collectives together)."""
    plugin, _ = run(case)
    res = collectives(hta_fast.load_dir([str(p) for p in cases.write_case(case, tmp_path)]))
    data = {(r["group"], r["index"]): r["data_time"] // US for r in res.table.to_pylist()}
    by_type = {r["collective"]: r for r in res["by_type"].to_pylist()}
    events = cases.CASES[case]
    calls = [[e for e in rank if e["name"].startswith("nccl:")] for rank in events]
    for k in range(len(events)):
        rows = [r for r in res["per_rank"].to_pylist() if r["rank"] == k]
        every: list[list] = [[], []]  # the worker's spans and transfers, all names
        for name, count, size, _, latency, _, transfer, _ in plugin["distributed"]["comm_ops"][
            f"worker{k}"
        ]:
            kind = name.split(":")[1]
            mine = [r for r in rows if r["collective"] == kind]
            spans = [(r["ts"] // US, (r["ts"] + r["dur"]) // US) for r in mine]
            moved = [(e - data[(r["group"], r["index"])], e) for r, (_, e) in zip(mine, spans)]
            for j, call in enumerate(calls[k]):
                if call["name"] == name:
                    shortest = min(rank[j]["dur"] for rank in calls)
                    end = call["ts"] + call["dur"]
                    spans.append((call["ts"], end))
                    moved.append((end - shortest, end))
            every[0] += spans
            every[1] += moved
            assert count == len(mine) == by_type[kind]["count"], (k, name)
            assert (latency, transfer) == (_merged(spans), _merged(moved)), (k, name)
            if case != "distributed_nccl":  # sized from the calls' Input Dims, as the plugin
                assert size == by_type[kind]["bytes"]
            else:  # kernels tied to their calls by External id only, no launch: no size
                assert size > 0 and by_type[kind]["bytes"] is None
        if len(plugin["workers"][k]["steps"]) == 1:
            transfer, latency = _merged(every[1]), _merged(every[0])
            assert plugin["distributed"]["wait"]["0"][f"worker{k}"] == [
                transfer,
                latency - transfer,
            ]
    if case == "distributed_gloo_gpu":  # worker1's broadcasts overlap: summed 64 µs, merged 44
        assert by_type["broadcast"]["data_time"] == 64 * US


# --- The overview, operators, kernels and tensor cores: one rank each -------------------

OVERVIEW = [
    "all_categories",
    "external_id",
    "self_nested",
    "top_level_runtime",
    "runtime_in_step",
    "no_profilerstep",
    "steps_no_overlap",
    "steps_with_overlap",
    "self_time",
    "last_steps_no_kernel",
    "pure_cpu",
    "gpu_utilization",
    "kernel_out_of_step",
    "tensor_core",
    "same_start",
    "same_end",
    "launch_two_kernels",
    "kernel_launch_configs",
    "datapipe",
    "module_hierarchy",
]
# The zero-length launch (ts 190 µs) at the instant its aten::mm (120-190 µs) ends: the
# plugin follows its External id into aten::mm; hta_fast's nesting puts it in the enclosing
# aten::mat_mul (docs/differences.md). Its kernel is 7 µs.
END_INSTANT_LAUNCH = {
    "aten::mm": [1, 70, 12 - 7, 70, 12 - 7],
    "aten::mat_mul": [1, 100, 26, 30, 14 + 7],
}


def _figures(trace: Trace) -> dict:
    """Ours, in the harness's form (µs; ratios as fractions)."""
    ops = {
        r["name"]: [r["count"], *_us([r[k] for k in ("cpu_time_sum", "gpu_time_sum",
                                                    "self_cpu_time_sum", "self_gpu_time_sum")])]
        for r in op_table(trace, plugin_view=True)["by_name"].to_pylist()
    }  # fmt: skip
    kernels = {
        r["name"]: [r["count"], *_us([r[k] for k in ("sum", "mean", "min", "max")])]
        for r in kernel_breakdown(trace, include_memory_kernels=False)["kernels"].to_pylist()
    }
    by_launch = sorted(
        [r["kernel"], r["op_name"], _dims(r, "grid"), _dims(r, "block"),
         r["registers_per_thread"], r["shared_memory"], r["calls"],
         *_us([r[k] for k in ("total_time", "mean_time", "min_time", "max_time")])]
        for r in kernel_launch_configs(trace).table.to_pylist()
        if r["op_name"] is not None  # the plugin's view: kernels launched by operators
    )  # fmt: skip
    mods = {
        r["path"]: [r["calls"], *_us([r["forward_host"], r["forward_gpu"]])]
        for r in modules(trace).table.to_pylist()
    }
    (util,) = gpu_utilization(trace).table.to_pylist()
    (sm,) = sm_efficiency(trace).table.to_pylist()
    (occ,) = achieved_occupancy(trace).table.to_pylist()
    (tc,) = tensor_cores(trace).table.to_pylist()
    frac = lambda v: None if v is None else v / 100  # noqa: E731
    return {
        "ops": ops,
        "kernels": kernels,
        "kernels_by_launch": by_launch,
        "modules": mods,
        "gpu_utilization": frac(util["kernel_busy_of_steps_pct"]),
        "sm_efficiency": frac(sm["sm_efficiency_pct"]),
        "occupancy": occ["achieved_occupancy_pct"],
        "tc_ratio": frac(tc["tc_kernel_pct"]),
        "tc_eligible_ops_kernel_ratio": frac(tc["tc_eligible_ops_kernel_pct"]),
    }


def _dims(row: dict, what: str) -> list:
    """A launch configuration's grid or block as the plugin lists it ([] where none)."""
    dims = [row[f"{what}_{a}"] for a in "xyz"]
    return [] if dims[0] is None else dims


def _theirs(worker: dict) -> dict:
    """The plugin's, in the form of _figures; its kernel view without the kernels it files
    under a profiler step or its call tree's root (no operator launched them: ours leaves
    their operator null)."""
    one = lambda d: d.get("0")  # noqa: E731  (the one device of these cases)
    return {
        "ops": worker["ops"],
        "kernels": worker["kernels"],
        "kernels_by_launch": sorted(
            r
            for r in worker["kernels_by_launch"]
            if r[1] != "CallTreeRoot" and not r[1].startswith("ProfilerStep#")
        ),
        "modules": {p: [m[0], m[2], m[4]] for p, m in worker["modules"].items()},
        "gpu_utilization": one(worker["gpu_utilization"]),
        "sm_efficiency": one(worker["sm_efficiency"]),
        "occupancy": one(worker["occupancy"]),
        "tc_ratio": one(worker["tc_ratio"]),
        "tc_eligible_ops_kernel_ratio": worker["tc_eligible_ops_kernel_ratio"],
    }


@pytest.mark.parametrize("case", OVERVIEW)
def test_overview_operators_kernels_and_tensor_cores_equal_the_plugins(run: Any, case: str):
    """Every figure equal (floats to 1e-6), but where docs/differences.md says otherwise:
    the last steps the plugin leaves out, GPU utilization of a rank without GPU work and SM
    efficiency of steps without kernels (plugin none, ours 0), the share of kernel time from eligible operators where no kernel was
    launched inside an operator (plugin 0, ours none), and the launch at an operator's end
    instant (external_id)."""
    plugin, (trace,) = run(case)
    (worker,) = plugin["workers"]
    theirs, ours = _theirs(worker), _figures(trace)

    # The steps: windows and breakdown (a trace without steps: ours is step -1, theirs "0").
    win = step_windows(trace, None)
    kept = plugin_kept_steps(win.gpu_events)
    windows = [[int(a) // US, int(b) // US] for a, b in zip(win.ts, win.end)][:kept]
    breakdown = _breakdown(trace)
    if case == "module_hierarchy":  # no steps: the plugin's window leaves Python frames out
        (events,) = cases.CASES[case]
        ops = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "cpu_op"]
        every = [(e["ts"], e["ts"] + e["dur"]) for e in events]
        spans = [[min(a for a, _ in x), max(b for _, b in x)] for x in (ops, every)]
        assert (worker["step_windows"], windows) == ([spans[0]], [spans[1]])
        ((mine,), ((_, theirs_costs),)) = breakdown, worker["steps"]
        cpu, other = CATEGORIES.index("cpu_exec"), CATEGORIES.index("other")
        assert mine[cpu] == theirs_costs[cpu] and mine[other] == mine[-1] - mine[cpu]
        windows, breakdown = worker["step_windows"], [theirs_costs]
    assert windows == worker["step_windows"]
    if case == "launch_two_kernels":  # NCCL kernels under an operator not named nccl:*
        kernel, comm = CATEGORIES.index("kernel"), CATEGORIES.index("communication")
        ((mine, theirs_costs),) = zip(breakdown, [c for _, c in worker["steps"]])
        assert (mine[kernel], mine[comm]) == (0, theirs_costs[kernel] > 0 and theirs_costs[kernel])
        assert theirs_costs[comm] == 0
        mine[kernel], mine[comm] = mine[comm], 0
    plugin_steps = [list(costs) for _, costs in worker["steps"]]
    for mine, costs in zip(breakdown, plugin_steps):
        if sum(costs[:-1]) > costs[-1]:  # the step used up: the plugin starts it over
            assert case == "datapipe" and sum(mine[:-1]) == mine[-1]
            assert costs[-2] == costs[-1] - sum(costs[-3:-2]) and mine[-2] == 0
            costs[-2] = 0
    assert breakdown[:kept] == plugin_steps
    names = [str(max(int(n), 0)) for n in win.step[:kept]]
    assert names == [name for name, _ in worker["steps"]]
    if case == "last_steps_no_kernel":  # steps 2 and 3 queued nothing: the plugin drops them
        assert (kept, len(win.step)) == (1, 3)
        notes = step_breakdown(trace).notes
        assert any("leaves the last steps 2, 3 out" in n for n in notes), notes
        (step1, *_) = gpu_utilization(trace)["steps"].to_pylist()
        assert step1["kernel_busy_of_step_pct"] / 100 == pytest.approx(theirs["gpu_utilization"])
        theirs["gpu_utilization"] = ours["gpu_utilization"]
    else:
        assert kept == len(win.step)
    if not worker["kernels"]:  # no GPU work at all: the plugin sees no device
        assert (theirs["gpu_utilization"], ours["gpu_utilization"]) == (None, 0)
        theirs["gpu_utilization"] = 0
    if case == "kernel_out_of_step":  # no kernel runs in the step
        assert (theirs["sm_efficiency"], ours["sm_efficiency"]) == (None, 0)
        assert theirs["gpu_utilization"] == ours["gpu_utilization"] == 0
        theirs["sm_efficiency"] = 0
    if ours["tc_ratio"] is None:  # no kernel launched inside an operator
        assert theirs["tc_eligible_ops_kernel_ratio"] == 0 and theirs["tc_ratio"] is None
        assert ours["tc_eligible_ops_kernel_ratio"] is None
        theirs["tc_eligible_ops_kernel_ratio"] = None
    if case == "external_id":
        assert theirs["ops"] == {
            "aten::mm": [1, 70, 12, 70, 12],
            "aten::mat_mul": [1, 100, 26, 30, 14],
        }
        assert ours["ops"] == END_INSTANT_LAUNCH
        assert (theirs["tc_eligible_ops_kernel_ratio"], ours["tc_eligible_ops_kernel_ratio"]) == (
            pytest.approx(12 / 26),
            pytest.approx(5 / 26),
        )
        theirs["ops"], theirs["tc_eligible_ops_kernel_ratio"] = ours["ops"], 5 / 26
        calls = {r[1]: r[6:8] for r in ours["kernels_by_launch"]}
        assert calls == {"aten::mm": [1, 5], "aten::mat_mul": [3, 21]}
        assert {r[1]: r[6:8] for r in theirs["kernels_by_launch"]} == {
            "aten::mm": [2, 12],
            "aten::mat_mul": [2, 14],
        }
        theirs["kernels_by_launch"] = ours["kernels_by_launch"]
    if case == "kernel_launch_configs":
        # op1 (thread 123) and the calls that launched its kernels (thread 456) share
        # External ids only: the plugin follows the ids, ours finds no operator around the
        # calls; op2's launch lies inside it on its thread, and is equal.
        assert {r[1] for r in theirs["kernels_by_launch"]} == {"op1", "op2"}
        assert {r[1] for r in ours["kernels_by_launch"]} == {"op2"}
        assert theirs["ops"]["op1"] == [1, 60, 38, 45, 38] and ours["ops"]["op1"] == [
            1,
            60,
            0,
            60,
            0,
        ]
        theirs["kernels_by_launch"] = [r for r in theirs["kernels_by_launch"] if r[1] == "op2"]
        theirs["ops"]["op1"] = ours["ops"]["op1"]
    assert ours.pop("ops") == theirs.pop("ops")
    assert ours.pop("kernels") == theirs.pop("kernels")
    assert ours.pop("kernels_by_launch") == theirs.pop("kernels_by_launch")
    assert ours.pop("modules") == theirs.pop("modules")
    for key, value in theirs.items():
        assert ours[key] == (None if value is None else pytest.approx(value, rel=1e-6)), key


# --- A real trace: two ranks of param_dlrm_8rank ------------------------------------------


PLUGIN_NCCL = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")


def _union_in(trace: Trace, names: Any, lo: int, hi: int) -> int:
    """µs of [lo, hi) (ns) covered by the host events whose name starts with `names` (a
    string or a tuple of them)."""
    name = trace.events.column("name").to_pylist()
    ts, dur = trace.column("events", "ts"), trace.column("events", "dur")
    kind = trace.column("events", "kind")
    host = {int(hta_fast.EventKind.cpu_op), int(hta_fast.EventKind.user_annotation)}
    spans = [
        (int(ts[i]) // US, int(ts[i] + dur[i]) // US)
        for i, n in enumerate(name)
        if n and n.startswith(names) and int(kind[i]) in host
    ]
    return _length(spans, lo // US, hi // US)


def test_a_current_trace_the_plugin_reads_without_runtime_dataloader_or_nccl_kernels() -> None:
    """On a current Kineto trace the plugin (0.4.3) reads no `cuda_runtime` call (it knows
    the category "Runtime" only), drops user annotations but its step and collective names
    (the DataLoader's included), and ties no NCCL kernel to its nccl:* call (their External
    ids differ): its runtime and DataLoader shares are 0, and its distributed view's
    communication is the nccl:* calls' host spans alone, the NCCL kernels computation.
    Both steps end where the host step ends (their GPU work ends inside it)."""
    paths = [DLRM / f"worker{k}.pt.trace.json.gz" for k in (0, 1)]
    assert all(p.exists() for p in paths), f"missing shared traces in {DLRM}"
    plugin = _plugin(paths)
    runtime, loader = CATEGORIES.index("runtime"), CATEGORIES.index("dataloader")
    for k, (worker, path) in enumerate(zip(plugin["workers"], paths)):
        trace = hta_fast.load(str(path))
        win = step_windows(trace, None)
        # The plugin's step is the host step: seeing no launch, it cannot start the step
        # after GPU work queued before it (rank 1: 1.3 ms of it), as its code means to.
        ((lo_us, hi_us),) = worker["step_windows"]
        assert (lo_us, hi_us) == (win.host_ts[0] // US, win.end[0] // US)
        assert win.ts[0] // US >= lo_us
        ((mine,), (theirs,)) = _breakdown(trace), [c for _, c in worker["steps"]]
        assert theirs[runtime] == theirs[loader] == 0 and mine[runtime] > 0
        lo, hi = int(win.ts[0]), int(win.end[0])
        # The DataLoader's time in the step but where a category before it runs (kernels,
        # runtime, ...); rank 1's step starts after it.
        data = _union_in(trace, "enumerate(DataLoader)#", lo, hi)
        assert 0.9 * data <= mine[loader] <= data and (data > 0) == (k == 0)
        comp, both, comm, _ = plugin["distributed"]["overlap"]["10"][f"worker{k}"]
        # The plugin's collectives by name: all-to-all is none of them.
        assert both + comm == _union_in(trace, tuple(f"nccl:{c}" for c in PLUGIN_NCCL), lo, hi)
        ((o_comp, o_both, o_comm, _),) = _distributed(trace)
        assert o_both + o_comm > 10 * (both + comm)  # the NCCL kernels: communication here
        assert o_comp + o_both < comp + both
