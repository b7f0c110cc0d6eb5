"""The evaluators in benchmarks/ (eval_pairs, eval_predict, eval_whatif_device): they run on
real pairs, print the spec-ratio baseline and the ratio fitted on B under names that say
which is which, and run on traces without ProfilerStep events (one step: the whole trace,
or the steps --steps-from finds); and eval_common's helpers on cases whose answer is known.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hta_fast
from hta_fast.costs.devices import Device
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import KinetoBuilder
from tests.support.paths import REPO

BENCH = REPO / "benchmarks"
sys.path.append(str(BENCH))
import eval_common  # noqa: E402

GPU_SWAP = TRACES_DIR / "pairs" / "gpu_swap"
FALCON = "Falconsai_nsfw_image_detection"


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [sys.executable, str(BENCH / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "ZeroDivisionError" not in res.stderr, res.stderr
    assert res.returncode == 0, res.stderr
    return res


def _last_json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


def _without_profiler_steps(src: Path, dst: Path) -> Path:
    """src with its ProfilerStep#N events left out, written to dst."""
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)
    return dst


@pytest.fixture(scope="module")
def stepless_pair(tmp_path_factory, traces_dir) -> tuple[Path, Path]:
    """The Falconsai H100 / MI300X pair without its ProfilerStep events (each recorded one),
    in a folder named gpu_swap as eval_pairs expects."""
    out = tmp_path_factory.mktemp("stepless") / "gpu_swap"
    out.mkdir()
    pair = []
    for gpu in ("h100", "mi300x"):
        src = GPU_SWAP / f"{FALCON}.{gpu}.json.gz"
        assert len(hta_fast.load(str(src)).column("steps", "row")) == 1
        dst = _without_profiler_steps(src, out / src.name)
        assert len(hta_fast.load(str(dst)).column("steps", "row")) == 0
        pair.append(dst)
    return pair[0], pair[1]


# --- the scripts on real pairs ----------------------------------------------------------------


def test_eval_pairs_prints_the_spec_ratio_beside_no_change(traces_dir):
    res = _run("eval_pairs.py", GPU_SWAP, "--json")
    head = res.stdout.splitlines()[0].split()
    assert head.index("spec") == head.index("chg") + 1
    rows = json.loads(res.stdout[res.stdout.index("[") :])
    assert {r["pair"] for r in rows} == {f"gpu_swap/{FALCON}", "gpu_swap/Qwen_Qwen1.5-0.5B-Chat"}
    for r in rows:
        assert r["spec_ratio_error_pct"] is not None
        assert r["steps"] == [1, 1]


def test_eval_predict_prints_the_spec_ratio_and_the_ratio_fitted_on_b(traces_dir):
    res = _run(
        "eval_predict.py",
        GPU_SWAP / f"{FALCON}.h100.json.gz",
        GPU_SWAP / f"{FALCON}.mi300x.json.gz",
    )
    assert "spec" in res.stdout and "fit on B" in res.stdout
    assert "fitted on B (an oracle, not a prediction)" in res.stdout
    r = _last_json(res.stdout)["families"]["(all)"]
    assert r["gm_error_spec_ratio"] > 0
    assert "gm_error_best_ratio_fitted_on_b" in r and "gm_error_one_ratio" not in r
    # the spec ratio of this pair moves every group: its total is not A's
    assert r["spec_ratio_b_ms"] != r["measured_a_ms"]


# --- traces without ProfilerStep events -------------------------------------------------------


@pytest.mark.parametrize("steps_from", [None, "iterations"])
def test_eval_whatif_device_without_profiler_steps(stepless_pair, steps_from):
    extra = ["--steps-from", steps_from] if steps_from else []
    res = _run("eval_whatif_device.py", *stepless_pair, *extra)
    out = _last_json(res.stdout)
    assert set(out) == {"H100-SXM -> MI300X", "MI300X -> H100-SXM"}
    for r in out.values():
        for key in ("target_step_ms", "spec_ratio_err_pct", "device_err_pct", "device_cpu_err_pct"):
            assert r[key] is not None, key
        if steps_from is None:
            assert r["source_steps"] == r["target_steps"] == 1
        else:
            assert r["source_steps"] > 1 and r["target_steps"] > 1


def test_eval_pairs_without_profiler_steps(stepless_pair):
    res = _run("eval_pairs.py", stepless_pair[0].parent, "--json")
    (row,) = json.loads(res.stdout[res.stdout.index("[") :])
    assert row["steps"] == [1, 1]
    assert row["kernel_sum_error_pct"] is not None and row["kernel_ms_per_step"][0] > 0


# --- eval_common on cases whose answer is known -----------------------------------------------


def _kernels(steps: bool) -> KinetoBuilder:
    """Two 1 ms windows, each with a 100 µs CPU op and kernels of 40 + 60 µs (step 0) and
    250 µs (step 1), with or without their ProfilerStep events."""
    b = KinetoBuilder()
    for s, durs in enumerate(((40, 60), (250,))):
        t0 = 1000.0 * s
        if steps:
            b.step(s, t0, 1000)
        b.cpu_op("aten::mul", t0 + 1, 100)
        for j, d in enumerate(durs):
            b.kernel("k", t0 + 10 + 5 * j, t0 + 200 + 100 * j, d)
    return b


def test_kernel_sum_per_step_of_a_trace_without_steps_is_all_its_kernels():
    t = _kernels(steps=False).load()
    assert len(t.column("steps", "row")) == 0
    assert eval_common.kernel_time_per_step(t) == pytest.approx(350_000)
    assert eval_common.cpu_op_time_per_step(t) == pytest.approx(200_000)


def test_kernel_sum_per_step_with_steps_is_their_mean():
    t = _kernels(steps=True).load()
    assert eval_common.kernel_time_per_step(t) == pytest.approx(175_000)
    assert eval_common.cpu_op_time_per_step(t) == pytest.approx(100_000)


def test_step_time_of_a_trace_without_steps_is_the_whole_trace():
    st = eval_common.step_time(_kernels(steps=False).load())
    assert st.steps == 1
    assert st.replayed == st.predicted and st.replayed > 0


def test_nothing_to_divide_by_prints_na():
    assert eval_common.ratio(1.0, 0.0) is None
    assert eval_common.pct_error(5.0, 0.0) is None
    assert eval_common.pct_error(None, 5.0) is None
    assert eval_common.pct_error(6.0, 5.0) == pytest.approx(20.0)
    assert eval_common.pct(None, 6) == "   n/a"
    assert eval_common.pct(-3.04, 6) == " -3.0%"


def _device(key: str, gbps: float) -> Device:
    return Device(key=key, vendor="x", tflops={"fp32": 10.0}, memory_gbps=gbps, source="test")


def test_spec_ratios_by_group_and_by_family():
    # the target has twice the source's bandwidth: 0.5 where a group has no roofline
    src, dst = _device("src", 1000.0), _device("dst", 2000.0)
    ops = pa.table(
        {
            "family": ["matmul", "matmul", "elementwise", "copy"],
            "roofline_source": [10.0, 30.0, 0.0, None],
            "roofline_device": [5.0, 30.0, 0.0, None],
        }
    )
    np.testing.assert_allclose(eval_common.group_spec_ratios(ops, src, dst), [0.5, 1.0, 0.5, 0.5])
    # per family: summed roofline on the target over that on the source; families without
    # a roofline are left to the caller's bandwidth ratio
    assert eval_common.family_spec_ratios(ops, src, dst) == {"matmul": pytest.approx(35 / 40)}
