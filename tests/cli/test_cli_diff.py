"""`hta-fast diff A B` as a person meets it: a headline first (mean step A -> B, the steps
compared, the warm-up ones left out, the largest changes per step), every step compared by
default, time per step by name, and a side that selects nothing stopped with what to pass.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis import trace_diff
from hta_fast.cli import cli
from hta_fast.steps import warmup
from tests.support.kineto_builder import KinetoBuilder

PAIR = "pairs/dataloader_workers/resnet50_num_workers_{}.pt.trace.json.gz"
# The pair's README: mean ProfilerStep over all 6 steps, DataLoader workers 0 -> 4.
README_MS = {"A": 154.8, "B": 128.2}


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def diff_json(*args: str) -> dict:
    res = run("diff", *args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def error_of(res) -> str:
    """The one error line of a run that stopped on bad input (exit 2)."""
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("hta-fast: error: "), res.stderr
    return lines[0]


# --- the dataloader pair -------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair(traces_dir) -> tuple[str, str]:
    return str(traces_dir / PAIR.format(0)), str(traces_dir / PAIR.format(4))


@pytest.fixture(scope="module")
def pair_default(pair) -> dict:
    return diff_json(*pair)


@pytest.fixture(scope="module")
def pair_with_warmup(pair) -> dict:
    return diff_json(*pair, "--keep-warmup")


def test_pair_headline_leaves_the_first_step_out_and_b_is_faster(pair_default):
    top = pair_default["headline"]
    for side in ("A", "B"):
        assert top[side]["steps"] == [6, 7, 8, 9, 10]
        assert top[side]["left_out"] == [{"step": 5, "warmup": "the first step"}]
    # Mean ProfilerStep#N host span over steps 6-10 (ms).
    assert top["A"]["mean_step_ms"] == pytest.approx(153.859, abs=1e-3)
    assert top["B"]["mean_step_ms"] == pytest.approx(123.551, abs=1e-3)
    assert top["change_pct"] == pytest.approx(-19.7, abs=0.05)
    assert top["text"] == "mean step A -> B: 153.9 -> 123.6 ms (-19.7 %)"
    assert top["step_time"] == "its ProfilerStep#N span on the host"


def test_pair_headline_with_warmup_equals_the_readme(pair_default, pair_with_warmup):
    top = pair_with_warmup["headline"]
    for side in ("A", "B"):
        assert top[side]["steps"] == [5, 6, 7, 8, 9, 10] and top[side]["left_out"] == []
        assert top[side]["mean_step_ms"] == pytest.approx(README_MS[side], abs=0.06)
    assert top["change_pct"] < 0  # B, with 4 DataLoader workers, is faster
    assert top["text"] == "mean step A -> B: 154.7 -> 128.2 ms (-17.1 %)"
    # The default run says what the warm-up steps would give.
    assert "mean step A -> B: " + pair_default["headline"]["with_warmup"]["text"] == top["text"]


def test_pair_top_contributor_is_the_data_loader(pair_default):
    # Its iterator's class changes with the workers: one row for both names, said so.
    top = pair_default["headline"]["top_contributors"]
    assert 3 <= len(top) <= 5
    first = top[0]
    assert first["name"] == trace_diff.DATALOADER_NEXT_NAME
    assert first["change_ms_per_step"] == pytest.approx(-46.82 + 1.16, abs=0.05)
    (renamed,) = pair_default["headline"]["renamed"]
    assert renamed["A"] == ["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]
    assert renamed["B"] == ["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"]
    assert all(c["name"] != trace_diff.STEP_MARKERS for c in top)


def test_pair_rows_are_time_per_step(pair_default):
    rows = {r["name"]: r for r in pair_default["rows"]}
    # The step markers are one row whose time per step is the mean step.
    marker = rows[trace_diff.STEP_MARKERS]
    assert marker["control_counts_per_step"] == 1.0
    assert marker["control_duration_per_step"] == pytest.approx(153_859_200, abs=1)
    assert marker["test_duration_per_step"] == pytest.approx(123_551_200, abs=1)
    assert not any(name.startswith("ProfilerStep#") and name[-1].isdigit() for name in rows)


def test_pair_text_starts_with_the_headline(pair):
    res = run("diff", *pair, "--limit", "3")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "mean step A -> B: 153.9 -> 123.6 ms (-19.7 %)"
    assert "step time: its ProfilerStep#N span on the host" in lines[1]
    assert lines[2].startswith("  A: rank 0, steps 6:10 (5 of 6); left out as warm-up: step 5")
    assert "with the warm-up steps: 154.7 -> 128.2 ms (-17.1 %)" in res.stdout
    assert "largest changes in time per step (B - A):" in res.stdout


# --- the warm-up rule ----------------------------------------------------------------------
# Step times (µs) with a known answer: the first step is warm-up; of the rest (median 100),
# step 4 is over twice the median and step 6 (exactly twice) is not.
STEPS_US = {1: 900, 2: 100, 3: 90, 4: 250, 5: 110, 6: 200, 7: 100, 8: 100}


def run_file(tmp_path, name: str, steps_us: dict[int, int], kernel_us: float = 20) -> str:
    """A run of back-to-back steps, each with one operator launching one kernel."""
    tb = KinetoBuilder()
    ts = 0.0
    for n, dur in steps_us.items():
        tb.step(n, ts, dur)
        tb.cpu_op("aten::mm", ts + 1, 10)
        tb.kernel("gemm_kernel", ts + 2, ts + 5, kernel_us)
        ts += dur
    path = tmp_path / f"{name}.json"
    path.write_bytes(tb.to_bytes())
    return str(path)


def test_warmup_rule_on_known_step_times():
    flagged = warmup.warmup_steps(STEPS_US)
    assert flagged == {1: "the first step", 4: "2.5x the median step"}
    assert warmup.WARMUP_FACTOR == 2.0
    assert warmup.warmup_steps({3: 1000}) == {}  # a lone step is the whole run


def test_warmup_steps_are_left_out_and_said(tmp_path):
    a = run_file(tmp_path, "a", STEPS_US)
    b = run_file(tmp_path, "b", {n: d // 2 for n, d in STEPS_US.items()}, kernel_us=10)
    top = diff_json(a, b)["headline"]
    assert top["A"]["steps"] == [2, 3, 5, 6, 7, 8]
    assert [w["step"] for w in top["A"]["left_out"]] == [1, 4]
    assert top["A"]["mean_step_ms"] == pytest.approx(0.7 / 6)  # (100+90+110+200+100+100)/6 µs
    assert top["B"]["mean_step_ms"] == pytest.approx(0.35 / 6)
    assert top["change_pct"] == pytest.approx(-50.0)
    assert top["top_contributors"][0] == {"name": "gemm_kernel", "change_ms_per_step": -0.01}
    kept = diff_json(a, b, "--keep-warmup")["headline"]
    assert kept["A"]["steps"] == sorted(STEPS_US) and kept["A"]["left_out"] == []
    assert kept["A"]["mean_step_ms"] == pytest.approx(sum(STEPS_US.values()) / 8 / 1000)
    assert [w["step"] for w in kept["A"]["warmup_compared"]] == [1, 4]


def test_steps_asked_for_are_compared_as_given(tmp_path):
    a = run_file(tmp_path, "a", STEPS_US)
    top = diff_json(a, a, "--control-steps", "1:2", "--test-steps", "5")["headline"]
    assert top["A"]["steps"] == [1, 2] and top["A"]["left_out"] == []
    assert top["A"]["warmup_compared"] == [
        {"step": 1, "warmup": "the first step", "compared_as": "compared as asked"}
    ]
    assert top["A"]["mean_step_ms"] == pytest.approx(0.5)
    assert top["B"]["steps"] == [5] and top["B"]["mean_step_ms"] == pytest.approx(0.110)


# --- a side that selects nothing -----------------------------------------------------------
@pytest.fixture()
def no_steps(tmp_path) -> str:
    tb = KinetoBuilder()
    tb.cpu_op("aten::add", 10, 5)
    path = tmp_path / "no_steps.json"
    path.write_bytes(tb.to_bytes())
    return str(path)


def test_a_trace_without_steps_says_how_to_give_it_some(no_steps, tmp_path):
    line = error_of(run("diff", no_steps, run_file(tmp_path, "b", STEPS_US)))
    assert f"A ({no_steps}) has no ProfilerStep#N events on rank 0" in line
    # Only what finds steps on both sides: A launches nothing, so no iterations.
    assert "--steps-from host" in line and "--steps-from iterations" not in line
    # Steps asked for on traces without them: the same, not an empty diff.
    line = error_of(run("diff", no_steps, no_steps, "--control-steps", "0", "--test-steps", "0"))
    assert "has no ProfilerStep#N events" in line


def test_steps_the_trace_does_not_have(tmp_path):
    b = run_file(tmp_path, "b", STEPS_US)
    line = error_of(run("diff", b, b, "--test-steps", "90:99"))
    assert f"B ({b}) has no step 90:99 on rank 0; its steps there are 1:8" in line
    assert "pass --test-steps with some of them" in line


def test_a_rank_the_trace_does_not_hold(tmp_path):
    a = run_file(tmp_path, "a", STEPS_US)
    line = error_of(run("diff", a, a, "--control-rank", "3"))
    assert f"A ({a}) has no rank 3; it holds ranks 0: pass --control-rank" in line


def test_step_diff_says_which_side_selects_nothing(no_steps, tmp_path):
    with_steps = hta_fast.load(run_file(tmp_path, "b", STEPS_US))
    with pytest.raises(trace_diff.EmptySelection) as caught:
        trace_diff.step_diff(with_steps, hta_fast.load(no_steps))
    assert caught.value.side == "test" and caught.value.missing == "no_steps"
    assert isinstance(caught.value, ValueError)  # as the analyses' other bad arguments


def test_steps_from_compares_the_passes_of_that_source(no_steps, tmp_path):
    top = diff_json(no_steps, run_file(tmp_path, "b", STEPS_US), "--steps-from", "host")["headline"]
    assert top["step_time"] == "its host step's span (--steps-from host)"
    assert top["A"]["steps"] == [0] and top["A"]["left_out"] == []


# --- --device gpu, JSON, files -------------------------------------------------------------
def annotated_run(tmp_path, name: str, kernel_us: float, annotation_us: float) -> str:
    """Two steps, each with a kernel inside a `## forward ##` annotation whose GPU copy
    (gpu_user_annotation) changes more than the kernel does."""
    tb = KinetoBuilder()
    for n, ts in ((1, 0), (2, 1000)):
        tb.step(n, ts, 1000)
        tb.cpu_op("## forward ##", ts + 1, 900, cat="user_annotation")
        ext = tb.external - 1  # the annotation's External id
        tb.kernel("gemm_kernel", ts + 2, ts + 10, kernel_us)
        tb.events.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": "## forward ##",
                "pid": 0,
                "tid": 7,
                "ts": tb.events[-3]["ts"] + 8,
                "dur": annotation_us,
                "args": {"External id": ext},
            }
        )
    path = tmp_path / f"{name}.json"
    path.write_bytes(tb.to_bytes())
    return str(path)


def test_device_gpu_lists_kernels_before_annotations(tmp_path):
    a = annotated_run(tmp_path, "a", kernel_us=20, annotation_us=100)
    b = annotated_run(tmp_path, "b", kernel_us=30, annotation_us=500)
    doc = diff_json(a, b, "--device", "gpu", "--keep-warmup")
    names = [r["name"] for r in doc["rows"]]
    assert names.index("gemm_kernel") < names.index("## forward ##")
    forward = next(r for r in doc["rows"] if r["name"] == "## forward ##")
    assert forward["diff_duration_per_step"] == 400_000  # the larger change, listed last
    assert [c["name"] for c in doc["headline"]["top_contributors"]] == ["gemm_kernel"]
    text = run("diff", a, b, "--device", "gpu", "--keep-warmup").stdout
    table = text[text.index("time per step by name") :]
    assert table.index("gemm_kernel") < table.index("## forward ##")


def test_json_has_the_headline_the_rows_and_the_steps(tmp_path):
    a = run_file(tmp_path, "a", STEPS_US)
    doc = diff_json(a, a)
    assert set(doc) == {"headline", "params", "rows", "steps"}
    assert {"text", "step_time", "change_pct", "A", "B", "with_warmup", "top_contributors"} <= set(
        doc["headline"]
    )
    assert doc["headline"]["text"] == "mean step A -> B: 0.117 -> 0.117 ms (+0.0 %)"
    steps = [(s["side"], s["step"], s["compared"]) for s in doc["steps"]]
    assert ("control", 1, False) in steps and ("test", 2, True) in steps


def test_csv_writes_the_rows_and_the_steps(tmp_path):
    a = run_file(tmp_path, "a", STEPS_US)
    out = tmp_path / "out"
    res = run("diff", a, a, "--format", "csv", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["trace_diff.csv", "trace_diff.steps.csv"]
