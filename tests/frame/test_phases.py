"""Inference phases: passes from annotations and Python frames, iterations from repeated
launches, steps taken from either (Trace.with_steps, --steps-from), and the `phases`
analysis; synthetic traces whose answers are known by construction, then the real FLUX
trace (expected numbers worked out here from its JSON, not with hta_fast) and training
traces (no inference phase in them)."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.inference.phases import phases
from hta_fast.analysis.registry import ANALYSES
from hta_fast.cli import cli
from hta_fast.frame.graph_replays import GRAPH_LAUNCH
from hta_fast.frame.launch_pattern import find_repeat
from hta_fast.steps import SOURCES, steps_from, with_steps, with_steps_from
from hta_fast.steps.pass_patterns import PATTERNS, PHASES
from hta_fast.steps.passes import find_passes
from tests.support.kineto_builder import KinetoBuilder
from tests.support.paths import SHARED_TRACES

US = 1000  # ns

# --- prefill and decode, annotated as vLLM V1 does ----------------------------------------
# Prefill: host [0, 1000) µs, 4 kernels of 400 µs back to back from 100: GPU [100, 1700).
# Decode k: host [2000 + 1000k, +500), 2 kernels of 150 µs at +100 and +300: busy 300 µs,
# all inside the host span. One ProfilerStep holds everything.
DECODES = 3


def serving_builder() -> KinetoBuilder:
    b = KinetoBuilder()
    b.step(0, 0, 2000 + 1000 * DECODES)
    b.phase_pass(
        "execute_context_1(128)_generation_0(0)",
        0,
        1000,
        [("prefill_gemm", 100 + 400 * k, 400) for k in range(4)],
    )
    for k in range(DECODES):
        t0 = 2000 + 1000 * k
        b.phase_pass(
            "execute_context_0(0)_generation_1(1)",
            t0,
            500,
            [("decode_gemm", t0 + 100, 150), ("decode_attn", t0 + 300, 150)],
        )
    return b


@pytest.fixture
def serving():
    return serving_builder().load()


def test_prefill_and_decode_passes_have_the_windows_built(serving):
    res = phases(serving)
    t = res.table.to_pydict()
    assert t["phase"] == ["prefill"] + ["decode"] * DECODES
    assert t["index"] == [0] + list(range(DECODES))
    assert t["step"] == list(range(DECODES + 1))
    base = serving.column("steps", "ts")[0]
    assert [s - base for s in t["start"]] == [0] + [(2000 + 1000 * k) * US for k in range(3)]
    # The prefill runs to the end of its GPU work; a decode to the end of its host span.
    assert t["dur"] == [1700 * US] + [500 * US] * DECODES
    assert t["host_dur"] == [1000 * US] + [500 * US] * DECODES
    assert t["gpu_busy"] == [1600 * US] + [300 * US] * DECODES
    assert t["busy_share"] == pytest.approx([100 * 16 / 17] + [60.0] * DECODES)
    assert t["kernels"] == [4] + [2] * DECODES
    assert t["launches"] == [4] + [2] * DECODES
    summary = res["summary"].to_pylist()
    assert [r["phase"] for r in summary] == ["prefill", "decode"]
    decode = summary[1]
    assert decode["count"] == DECODES
    assert decode["mean_dur"] == decode["median_dur"] == 500 * US
    assert decode["busy_share"] == pytest.approx(60.0)
    assert any("vLLM" in n for n in res.notes)


def test_steps_from_decode_gives_the_decode_windows(serving):
    res = steps_from(serving, "decode")
    t = res.table.to_pydict()
    assert t["step"] == list(range(DECODES))
    assert t["phase"] == ["decode"] * DECODES
    assert t["dur"] == [500 * US] * DECODES
    assert t["name"] == ["execute_context_0(0)_generation_1(1)"] * DECODES
    made = with_steps_from(serving, "decode")
    assert made.steps_source == "decode"
    assert made.column("steps", "step").tolist() == list(range(DECODES))
    # Each decode step holds its annotation, its 2 launches and their 2 kernels.
    step = made.column("events", "step")
    assert np.bincount(step[step >= 0]).tolist() == [5] * DECODES
    # The profiler's own steps are untouched in the trace the passes came from.
    assert serving.column("steps", "step").tolist() == [0]


def test_steps_from_profiler_is_the_trace_itself(serving):
    assert with_steps_from(serving, "profiler") is serving
    assert steps_from(serving, "profiler").table.column("step").to_pylist() == [0]
    with pytest.raises(ValueError, match="no step source"):
        steps_from(serving, "warmup")


def test_per_step_analyses_see_the_steps_taken_from_passes(serving):
    made = with_steps_from(serving, "decode")
    steps = ANALYSES["steps"](made, hta_fast.frame.Selection()).table.to_pydict()
    assert steps["step"] == list(range(DECODES)) and steps["dur"] == [500 * US] * DECODES
    picked = ANALYSES["steps"](made, hta_fast.frame.Selection(steps=[1])).table
    assert picked.column("step").to_pylist() == [1]


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_cli_steps_from_changes_the_steps_of_analyze_and_doctor(tmp_path):
    path = tmp_path / "serving.json"
    path.write_bytes(serving_builder().to_bytes())
    prof = _cli("analyze", str(path), "-a", "steps", "--format", "json")
    dec = _cli("analyze", str(path), "-a", "steps", "--format", "json", "--steps-from", "decode")
    assert prof.exit_code == 0 and dec.exit_code == 0, prof.output + dec.output
    assert json.loads(prof.output)["tables"]["steps"][0]["dur"] == 5000 * US
    rows = json.loads(dec.output)["tables"]["steps"]
    assert [r["dur"] for r in rows] == [500 * US] * DECODES
    some = _cli("analyze", str(path), "-a", "steps", "--format", "json",
                "--steps-from", "decode", "--steps", "1:2")  # fmt: skip
    assert [r["step"] for r in json.loads(some.output)["tables"]["steps"]] == [1, 2]

    doc_prof = json.loads(_cli("doctor", str(path), "--json", "--no-model").output)
    doc_dec = json.loads(
        _cli("doctor", str(path), "--json", "--no-model", "--steps-from", "decode").output
    )
    assert doc_prof["steps"] == [0] and doc_prof["step_time_ns"] == 5000 * US
    # Decode steps are timed by their windows: 500 µs each. The doctor's utilization is
    # the busy share of those windows (the gaps between the passes left out): 3 x 300 µs
    # busy of 3 x 500 µs.
    assert doc_dec["steps"] == list(range(DECODES))
    assert doc_dec["step_time_ns"] == 500 * US
    assert doc_dec["utilization"] == pytest.approx(900 / 1500)
    assert doc_prof["utilization"] == pytest.approx((1600 + 900) / 5000)
    assert any("decode" in n for n in doc_dec["notes"])


def test_cli_steps_from_without_passes_is_bad_input(tmp_path):
    path = tmp_path / "serving.json"
    path.write_bytes(serving_builder().to_bytes())
    res = _cli("analyze", str(path), "-a", "steps", "--steps-from", "denoise")
    assert res.exit_code == 2
    assert "no denoise pass" in res.output


@pytest.mark.parametrize(
    "command",
    ["analyze", "doctor", "report", "critical-path", "replay", "whatif", "ops", "predict"],
)
def test_every_step_command_takes_steps_from(command):
    res = _cli(command, "--help")
    assert res.exit_code == 0 and "--steps-from" in res.output
    for source in SOURCES:
        assert source in res.output


def test_model_commands_walk_the_steps_taken_from_passes(tmp_path):
    path = tmp_path / "serving.json"
    path.write_bytes(serving_builder().to_bytes())
    res = _cli("replay", str(path), "--steps-from", "decode", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["tables"]["replay"]
    assert [r["step"] for r in rows] == list(range(DECODES))
    res = _cli("critical-path", str(path), "--steps-from", "prefill", "--format", "json")
    assert [r["step"] for r in json.loads(res.output)["tables"]["critical_path"]] == [0]


# --- other stacks' names, and names that are no phase ---------------------------------------
def test_sglang_frames_and_named_annotations_mark_their_phases():
    b = KinetoBuilder()
    b.phase_pass(
        "sglang/srt/model_executor/model_runner.py(1711): forward_extend",
        0,
        300,
        [("k", 50, 10)],
        cat="python_function",
    )
    b.phase_pass(
        "sglang/srt/model_executor/model_runner.py(1690): forward_decode",
        1000,
        300,
        [("k", 1050, 10)],
        cat="python_function",
    )
    b.phase_pass("## denoising step ##", 2000, 300, [("k", 2050, 10)])
    b.phase_pass("Prefill", 3000, 300, [("k", 3050, 10)])
    b.cpu_op("prefill_attention", 3100, 50, cat="user_annotation")  # held by the one above
    found = find_passes(b.load())
    assert found.phase.tolist() == ["prefill", "decode", "denoise", "prefill"]


def test_names_that_only_look_like_phases_mark_none():
    b = KinetoBuilder()
    b.phase_pass("## decoder fp8 None ##", 0, 300, [("k", 50, 10)])
    b.phase_pass("<built-in method decode of bytes object at 0xb380a8>", 400, 10, [],
                 cat="python_function")  # fmt: skip
    b.phase_pass("prefilled_cache_copy", 500, 10, [])
    b.phase_pass("nn.Module: Linear_3", 600, 10, [], cat="python_function")
    b.phase_pass("nn.Module: CLIPTextTransformer_0", 700, 10, [], cat="python_function")
    b.phase_pass("capture_32_DECODE", 800, 10, [])  # SGLang capturing its decode graph
    b.phase_pass("Capturing prefill graph", 900, 10, [])
    found = find_passes(b.load(), ("prefill", "decode", "denoise"))
    assert len(found.row) == 0
    assert find_passes(b.load(), ("forward",)).row.size == 1  # CLIPTextTransformer_0


def test_the_pattern_table_is_whole():
    assert {p.phase for p in PATTERNS} == set(PHASES)
    assert SOURCES == ("profiler", "host", "iterations", *PHASES)
    for p in PATTERNS:
        re.compile(p.match)  # RE2 is stricter; this at least catches a typo
        assert p.emitter


# --- iterations from repeated launches ------------------------------------------------------
# A prologue of 3 kernels, 5 iterations of [A, B, C, A, D] launched 100 µs apart on the
# host (iteration k starts at 1000 + 1000k), then 2 epilogue kernels; no annotation.
ITERS, PERIOD = 5, ["A", "B", "C", "A", "D"]


def unannotated_builder() -> KinetoBuilder:
    b = KinetoBuilder()
    for j, name in enumerate(["p0", "p1", "p2"]):
        b.kernel(name, 100 * j, 100 * j + 50, 40)
    for k in range(ITERS):
        t0 = 1000 + 1000 * k
        for j, name in enumerate(PERIOD):
            b.kernel(name, t0 + 100 * j, t0 + 100 * j + 50, 40)
    for j, name in enumerate(["e0", "e1"]):
        b.kernel(name, 7000 + 100 * j, 7000 + 100 * j + 50, 40)
    return b


def test_repeated_launches_are_iterations_with_their_boundaries():
    trace = unannotated_builder().load()
    res = steps_from(trace, "iterations")
    t = res.table.to_pydict()
    base = int(trace.column("events", "ts").min())
    assert t["step"] == list(range(ITERS))
    assert [s - base for s in t["ts"]] == [(1000 + 1000 * k) * US for k in range(ITERS)]
    # Each ends where the next starts; the last at the end of its last launch (5 µs long).
    assert t["dur"][:-1] == [1000 * US] * (ITERS - 1)
    assert t["dur"][-1] == (400 + 5) * US
    assert "5 iterations of 5 launches" in res.notes[0]
    table = phases(trace).table.to_pydict()
    assert table["phase"] == ["iteration"] * ITERS
    assert table["kernels"] == [5] * ITERS and table["launches"] == [5] * ITERS


def test_graph_launches_count_as_one_launch_each():
    b = KinetoBuilder()
    for k in range(4):
        t0 = 1000 * k
        b.memcpy("HtoD", t0, t0 + 20, 10, 1 << 20)
        kernels = [(f"graph_kernel_{j}", t0 + 50 + 10 * j, 8) for j in range(50)]
        b.graph_launch(t0 + 30, kernels)
    trace = b.load()
    res = phases(trace, source="iterations")
    t = res.table.to_pydict()
    assert t["phase"] == ["iteration"] * 4
    assert t["launches"] == [2] * 4 and t["kernels"] == [50] * 4
    assert re.search(GRAPH_LAUNCH, "cudaGraphLaunch") and re.search(GRAPH_LAUNCH, "hipGraphLaunch")


def test_no_repeat_means_no_iterations_and_a_note():
    b = KinetoBuilder()
    for j in range(12):
        b.kernel(f"kernel_{j}", 100 * j, 100 * j + 50, 40)
    trace = b.load()
    res = steps_from(trace, "iterations")
    assert res.table.num_rows == 0
    assert "no sequence of launches repeats" in res.notes[0]
    got = phases(trace)
    assert got.table.num_rows == 0 and got["summary"].num_rows == 0
    assert any("no passes found" in n for n in got.notes)
    # A rank without steps from the source is a rank without steps, analysed whole.
    made = with_steps(trace, res.table, "iterations")
    assert len(made.column("steps", "step")) == 0
    assert (made.column("events", "step") == -1).all()


def test_find_repeat_prefers_the_loop_that_holds_the_time():
    # 10 copies of a cheap pair, then 3 copies of an expensive triple.
    items = np.array([1, 2] * 10 + [7, 8, 9] * 3)
    weights = np.array([1, 1] * 10 + [100, 1, 1] * 3)
    assert find_repeat(items).period == 2
    rep = find_repeat(items, weights)
    assert (rep.start, rep.period, rep.copies) == (20, 3, 3)
    assert find_repeat(np.arange(10)) is None


def test_with_steps_checks_its_windows(serving):
    one = np.array([0])
    with pytest.raises(ValueError, match="one value per step"):
        serving.with_steps(one, np.array([0, 1]), one, one, "x")
    with pytest.raises(ValueError, match="outside"):
        serving.with_steps(np.array([10**9]), one, one, one, "x")
    with pytest.raises(ValueError, match="negative"):
        serving.with_steps(one, one, one, np.array([-1]), "x")


# --- real traces ----------------------------------------------------------------------------
FLUX = "pairs/attention_backend/flux_aiter.json.gz"
TRAINING = [
    "pairs/dataloader_workers/resnet50_num_workers_0.pt.trace.json.gz",
    "pairs/dataloader_workers/resnet50_num_workers_4.pt.trace.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/timeline_analysis/sampled_rank-0.json.gz",  # "## decoder fp8 None ##" annotations
    "hta/negative_queue_length_values_check/rank0.json.gz",
]


def _complete_events(path) -> list[dict]:
    with gzip.open(path) as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"]


def _flux_expected(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The FLUX denoising passes' windows (µs) and GPU busy time, from the JSON alone: the
    denoiser's module-call frames, the GPU work their launches queued (by correlation id),
    each window from the later of its host start and the last window's end to the later
    of its host end and its GPU work's end; busy: the union of all GPU work inside."""
    ev = _complete_events(path)
    frames = sorted(
        (e for e in ev if e.get("cat") == "python_function"
         and re.match(r"nn\.Module: \w*Transformer2D", e["name"])),
        key=lambda e: e["ts"],
    )  # fmt: skip
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_corr: dict[int, list[dict]] = {}
    for e in gpu:
        by_corr.setdefault(e["args"]["correlation"], []).append(e)
    runtime = [e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e["args"]]
    own_end, own_start, launched = [], [], set()
    for f in frames:
        mine = [
            g
            for r in runtime
            if r["tid"] == f["tid"] and f["ts"] <= r["ts"] < f["ts"] + f["dur"]
            for g in by_corr.get(r["args"]["correlation"], [])
        ]
        launched.update(id(g) for g in mine)
        own_end.append(max(g["ts"] + g["dur"] for g in mine))
        own_start.append(min(g["ts"] for g in mine))
    before = [g["ts"] + g["dur"] for g in gpu if id(g) not in launched]
    prev = max([b for b in before if b < own_start[0]], default=frames[0]["ts"])
    starts, ends = [], []
    for f, gpu_end in zip(frames, own_end):
        start = max(f["ts"], prev)
        end = max(f["ts"] + f["dur"], gpu_end, start)
        starts.append(start)
        ends.append(end)
        prev = end
    intervals = sorted((g["ts"], g["ts"] + g["dur"]) for g in gpu)
    merged: list[list[float]] = []
    for a, z in intervals:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], z)
        else:
            merged.append([a, z])
    busy = [sum(max(0.0, min(z, e) - max(a, s)) for a, z in merged) for s, e in zip(starts, ends)]
    return np.array(starts), np.array(ends), np.array(busy)


def test_flux_denoising_passes(traces_dir):
    path = traces_dir / FLUX
    starts, ends, busy = _flux_expected(path)
    assert len(starts) == 4
    trace = hta_fast.load(str(path))
    res = phases(trace)
    t = res.table.to_pydict()
    assert t["phase"] == ["denoise"] * 4
    assert np.allclose(np.array(t["dur"]) / US, ends - starts, atol=1.0)
    assert np.allclose(np.array(t["gpu_busy"]) / US, busy, atol=1.0)
    assert np.allclose(t["busy_share"], 100 * busy / (ends - starts), atol=0.01)
    # One graph replay of 993 kernels per pass, launched once.
    assert t["kernels"] == [993] * 4
    made = with_steps_from(trace, "denoise")
    assert made.column("steps", "step").tolist() == [0, 1, 2, 3]


def test_flux_iterations_hold_one_graph_replay_each(traces_dir):
    path = traces_dir / FLUX
    graph_ts = sorted(e["ts"] for e in _complete_events(path) if re.search(GRAPH_LAUNCH, e["name"]))
    trace = hta_fast.load(str(path))
    t = steps_from(trace, "iterations").table.to_pydict()
    assert len(t["ts"]) == len(graph_ts) == 4
    base = trace.meta.base_time_ns
    for ts, end, g in zip(t["ts"], t["end"], graph_ts):
        assert ts <= base + g * US < end


def test_flux_doctor_per_denoising_step(traces_dir):
    path = traces_dir / FLUX
    starts, ends, _ = _flux_expected(path)
    prof = json.loads(_cli("doctor", str(path), "--json", "--no-model").output)
    dec = json.loads(
        _cli("doctor", str(path), "--json", "--no-model", "--steps-from", "denoise").output
    )
    assert prof["steps"] == [3]
    assert dec["steps"] == [0, 1, 2, 3]
    assert dec["step_time_ns"] / US == pytest.approx((ends - starts).mean(), abs=1.0)
    assert dec["healthy"]


@pytest.mark.parametrize("relative", TRAINING)
def test_training_traces_have_no_inference_phases(traces_dir, relative):
    trace = hta_fast.load(str(traces_dir / relative))
    assert find_passes(trace, ("prefill", "decode", "denoise")).row.size == 0
    # What they have is iterations: as many as the profiler recorded steps (the six
    # ResNet-50 steps, ...), which is what a repeated launch sequence is in training.
    found = steps_from(trace, "iterations").table.num_rows
    if relative.startswith("pairs/dataloader_workers"):
        assert found == len(trace.column("steps", "step")) == 6


@pytest.mark.parametrize("relative", TRAINING[:4] + [FLUX])
def test_step_columns_are_the_cores_for_the_profilers_windows(traces_dir, relative):
    """Trace.with_steps restates the loader's rule: given the ProfilerStep#N windows it
    must give the core's own events.step."""
    trace = hta_fast.load(str(traces_dir / relative))
    col = trace.column
    made = trace.with_steps(
        col("steps", "row"), col("steps", "step"), col("steps", "ts"), col("steps", "dur"), "p"
    )
    assert np.array_equal(made.column("events", "step"), col("events", "step"))


def test_module_calls_inside_a_serving_step_are_no_forward_passes():
    # Current vLLM V1 names: a step of 32 decode requests with the token layout of each part;
    # inside it, a module call (the logits processor) that is no model forward of its own.
    b = KinetoBuilder()
    for k in range(DECODES):
        t0 = 1000 * k
        b.phase_pass(
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)",
            t0,
            500,
            [("decode_gemm", t0 + 100, 150)],
        )
        b.python_function("nn.Module: LogitsProcessor_0", t0 + 300, 100)
    b.python_function("nn.Module: LlamaForCausalLM_0", 5000, 400)  # outside any step
    trace = b.load()
    found = find_passes(trace)
    assert found.phase.tolist() == ["decode"] * DECODES + ["forward"]
    names = trace.strings_at(trace.column("events", "name")[found.row]).to_pylist()
    assert names[-1] == "nn.Module: LlamaForCausalLM_0"


def test_vllm_decode_step_as_current_vllm_names_it():
    path = SHARED_TRACES / "modern/vllm_decode_full"
    if not path.is_dir():
        pytest.skip("modern traces not present")
    res = phases(hta_fast.load_dir(path))
    t = res.table
    assert t["phase"].to_pylist() == ["decode"]
    assert t["name"][0].as_py().startswith("execute_32_context_0(")
    assert t["busy_share"][0].as_py() > 99  # the trace opens mid-flight: noted, left out
    # 32 decode requests, one query token each, attending to 55,086 cached tokens in all.
    row = t.to_pylist()[0]
    assert (row["prefill_requests"], row["decode_requests"]) == (0, 32)
    assert (row["prefill_tokens"], row["decode_tokens"], row["context_tokens"]) == (0, 32, 55086)
    assert any("opens with the GPU busy" in n for n in res.notes)
    res = _cli("-q", "doctor", "--steps-from", "forward", str(path))
    assert res.exit_code == 2
    assert "its module calls all run inside prefill, decode or denoising passes" in res.output


@pytest.mark.parametrize(
    "name, phase, counts",
    [
        ("execute_context_2(256)_generation_0(0)", "prefill", [2, 0, 256, 0, None]),
        ("execute_context_1(128)_generation_5(5)", "mixed", [1, 5, 128, 5, None]),
        ("execute_context_0(0)_generation_3(3)", "decode", [0, 3, 0, 3, None]),
        (
            "execute_6_context_1(sq512sk512sqsq262144sqsk262144)_generation_5(sq5sk900sqsq5sqsk900)",
            "mixed",
            [1, 5, 512, 5, 1412],
        ),
        (
            "execute_4_context_4(sq64sk64sqsq1024sqsk1024)_generation_0(sq0sk0sqsq0sqsk0)",
            "prefill",
            [4, 0, 64, 0, 64],
        ),
    ],
)
def test_vllm_step_names_give_their_phase_and_requests(name, phase, counts):
    b = KinetoBuilder()
    b.phase_pass(name, 0, 500, [("gemm", 100, 150)])
    res = phases(b.load())
    row = res.table.to_pylist()[0]
    assert row["phase"] == phase
    keys = ["prefill_requests", "decode_requests", "prefill_tokens", "decode_tokens"]
    assert [row[k] for k in keys + ["context_tokens"]] == counts


def test_a_capture_given_beside_marks_no_pass_and_replays_count_as_graph_busy():
    """SGLang records its capture under an annotation that reads like a step
    (capture_32_DECODE); given beside the trace, its events sit on the trace's timeline but
    mark no pass. The step's replayed kernels are its graph_busy, its eager kernel not."""
    cap = KinetoBuilder()
    cap.cpu_op("capture_32_DECODE", 0, 300, cat="user_annotation")
    cap.begin_capture(5)
    for j in range(2):
        cap.cpu_op(f"op_{j}", 10 + 30 * j, 20)
        cap.captured_launch(15 + 30 * j)
    cap.end_capture(100)
    b = KinetoBuilder()
    b.phase_pass("step[DECODE bs=32]", 0, 1000, [("eager", 100, 50)])
    b.graph_launch(300, [("k0", 400, 100), ("k1", 500, 200)])
    trace = hta_fast.with_capture(b.load(), cap.load())
    t = phases(trace).table
    assert t["phase"].to_pylist() == ["decode"]
    assert t["name"].to_pylist() == ["step[DECODE bs=32]"]
    assert t["gpu_busy"][0].as_py() == 350 * US
    assert t["graph_busy"][0].as_py() == 300 * US
    summary = phases(trace)["summary"].to_pylist()[0]
    assert summary["graph_share"] == pytest.approx(100 * 300 / 350)


def test_sglang_batch_annotations_give_their_phase_and_requests():
    b = KinetoBuilder()
    for k, name in enumerate(("step[EXTEND bs=4]", "step[DECODE bs=32]", "step[MIXED bs=8]")):
        b.phase_pass(name, 1000 * k, 500, [("k", 1000 * k + 100, 50)])
    t = phases(b.load()).table
    assert t["phase"].to_pylist() == ["prefill", "decode", "mixed"]
    assert t["prefill_requests"].to_pylist() == [4, 0, None]
    assert t["decode_requests"].to_pylist() == [0, 32, None]
