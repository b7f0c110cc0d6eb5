"""Small traces (tests/tb_plugin_cases.py) run through the PyTorch TensorBoard profiler
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
import tb_plugin_cases as cases

import hta_fast
from hta_fast.analysis.overlap import comm_comp_overlap
from hta_fast.analysis.tensorboard.step_breakdown import CATEGORIES, step_breakdown
from hta_fast.frame.steps_from import with_steps_from
from hta_fast.trace import Trace

pytestmark = pytest.mark.reference  # runs the TensorBoard plugin

REPO = Path(__file__).resolve().parents[1]
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


def test_nccl_distributed_view_counts_kernels_not_the_host_calls(run: Any) -> None:
    """The plugin's one step of a trace without ProfilerStep#N is its host events' span
    (0-235 µs): ours with the host step source. Computation and communication are then
    kernels for both, but the plugin adds each nccl:* host call's span to communication
    (the call only queues its kernel); ours leaves it out (docs/differences.md)."""
    plugin, traces = run("distributed_nccl")
    for k, (worker, trace, events) in enumerate(
        zip(plugin["workers"], traces, cases.CASES["distributed_nccl"])
    ):
        host = with_steps_from(trace, "host")
        win = comm_comp_overlap(host)["steps"].to_pylist()
        assert [[r["dur"] // US] for r in win] == [[hi - lo] for lo, hi in worker["step_windows"]]
        (lo, hi), = worker["step_windows"]  # fmt: skip
        kernels = [e for e in events if e["cat"] == "kernel"]
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if e["name"].startswith("nccl")]
        comp = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if not e["name"].startswith("nccl")]
        calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("nccl:")]
        ours, theirs = _split(comp, comm, lo, hi), _split(comp, comm + calls, lo, hi)
        assert _distributed(host) == [ours], k
        assert plugin["distributed"]["overlap"]["0"][f"worker{k}"] == theirs, k
        assert ours != theirs
        # Without steps our default window runs to the last GPU work's end (the all-reduce).
        (default,) = comm_comp_overlap(trace)["steps"].to_pylist()
        assert default["dur"] == (max(e["ts"] + e["dur"] for e in kernels) - lo) * US


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
