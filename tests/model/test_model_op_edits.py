"""The what-if edits that change ops one by one: op_scale (CPU ops and what they hold take F
times as long) and durations_from (events take the durations another trace measured), on
synthetic pairs whose answer is known by construction, as properties, and on the real pairs
in ../shared/traces/pairs (the measured errors pinned as upper bounds)."""

from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.model.whatif.declared.durations_from import match_pairs
from hta_fast.model.whatif.edits import Edits
from hta_fast.model.whatif.steps import what_if
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
LOADER = r"enumerate\(DataLoader\)"
PAIRS = os.path.join(TRACES_DIR, "pairs")
STEPS = 4


def job_builder(
    loader_us: float,
    attention_us: Sequence[float] = (300, 300, 300, 300),
    attention: str = "attn_a_fwd",
    quant_us: Optional[Sequence[float]] = None,
    host_side_us: float = 0.0,
    steps: int = STEPS,
) -> KinetoBuilder:
    """Each step: a data loader of loader_us holding a collate op (its middle half) and a
    pin_memory op (from 80 to 90 % of it), then
    ten launches 10 µs apart (GEMMs of 100 µs; the sixth is `attention`, attention_us[step]
    long, preceded by a quantisation kernel of quant_us[step] when given), host work of
    host_side_us while the GPU runs, a stream sync that returns 3 µs after the GPU drains,
    and 50 µs of host work. A kernel starts 10 µs after its launch or when the stream is
    free: the physics the dependency graph encodes, so an edit's answer is the job made so."""
    b = KinetoBuilder()
    t0 = 0.0
    for s in range(steps):
        b.dataloader(t0 + 1, loader_us)
        b.cpu_op("aten::collate", t0 + 1 + loader_us / 4, loader_us / 2)
        b.cpu_op("aten::pin_memory", t0 + 1 + loader_us * 0.8, loader_us / 10)
        launch_at = t0 + 1 + loader_us + 2
        kernels = [(GEMM, 100.0)] * 10
        kernels[5] = (attention, attention_us[s])
        if quant_us is not None:
            kernels.insert(5, ("attn_quant", quant_us[s]))
        free = -1.0
        for j, (name, dur) in enumerate(kernels):
            launch = launch_at + 10 * j
            start = max(launch + 10, free)
            b.kernel(name, launch, start, dur)
            free = start + dur
        host_at = launch_at + 10 * len(kernels) + 2
        if host_side_us:
            b.cpu_op("aten::host_side", host_at, host_side_us)
        sync_start = host_at + max(host_side_us, 0) + 2
        sync_end = max(sync_start + 5, free + 3)
        b.runtime("cudaStreamSynchronize", sync_start, sync_end - sync_start)
        b.cpu_op("aten::cpu_work", sync_end + 2, 50)
        end = sync_end + 2 + 50 + 1
        b.step(s, t0, end - t0)
        t0 = end
    return b


def job(loader_us: float, *args, **kwargs) -> hta_fast.Trace:
    """job_builder's trace, loaded."""
    return job_builder(loader_us, *args, **kwargs).load()


def measured(trace: hta_fast.Trace) -> np.ndarray:
    return what_if(trace).to_pandas().measured.to_numpy()


def predicted(trace: hta_fast.Trace, **edits) -> np.ndarray:
    return what_if(trace, **edits).to_pandas().predicted.to_numpy()


# --- op_scale -------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [0.0, 0.5, 2.0])
def test_a_scaled_loader_predicts_the_job_with_that_loader(factor):
    # The loader and the collate op nested in it both scale: job(4000 * f) is that job.
    got = predicted(job(4000), op_scale={LOADER: factor})
    assert np.array_equal(got, measured(job(4000 * factor)))
    assert not np.allclose(measured(job(4000)), got, rtol=0.05)  # the knob matters


def test_scaling_only_the_nested_op_leaves_the_loaders_own_time():
    # collate is the middle half of the loader: at 0 the loader is half as long.
    assert np.array_equal(predicted(job(4000), op_scale={"collate": 0}), measured(job(2000)))


def test_nested_factors_multiply():
    # 0.5 on the loader and 0.5 on collate inside it: the loader's own quarters take half,
    # collate a quarter of its time. Loader 4000 -> 1000 + 1000 * 0.25 + ... = 1500 µs.
    got = predicted(job(4000), op_scale={LOADER: 0.5, "collate": 0.5})
    base = measured(job(4000))
    assert np.array_equal(base - got, np.full(STEPS, 2_500_000))


def test_op_scale_is_checked():
    with pytest.raises(ValueError, match="op_scale"):
        Edits(op_scale={"(": 0.5})
    with pytest.raises(ValueError, match="op_scale"):
        Edits(op_scale={LOADER: -1})


# --- durations_from -------------------------------------------------------------------------


def test_a_loader_from_another_run_predicts_that_run():
    fast = job(1000)
    r = what_if(job(4000), durations_from=fast, match=LOADER)
    assert np.array_equal(r.to_pandas().predicted.to_numpy(), measured(fast))
    pairing = r.tables["durations_from"].to_pandas()
    assert (pairing.paired_by == "shapes").all() and len(pairing) == STEPS  # same name


def test_one_kernel_swapped_for_another_takes_its_durations_step_by_step():
    a_us, b_us = [300, 320, 280, 310], [150, 500, 90, 260]
    b = job(500, b_us, attention="attn_b_fwd")
    r = what_if(job(500, a_us), durations_from=b, match={"attn_a": "attn_b"})
    assert np.array_equal(r.to_pandas().predicted.to_numpy(), measured(b))
    pairing = r.tables["durations_from"].to_pandas()
    assert (pairing.paired_by == "order").all() and pairing.gpu.all()
    assert pairing.new_dur.tolist() == [u * 1000 for u in b_us]


def test_one_kernel_become_two_takes_their_summed_time():
    b_us, q_us = [200, 210, 190, 205], [40, 45, 50, 35]
    b = job(500, b_us, attention="attn_b_fwd", quant_us=q_us)
    r = what_if(job(500), durations_from=b, match={"attn_a": "attn_b|attn_quant"})
    pairing = r.tables["durations_from"].to_pandas()
    assert (pairing.paired_by == "step_share").all()
    assert pairing.new_dur.tolist() == [(x + y) * 1000 for x, y in zip(b_us, q_us)]
    # The other job also launches one more kernel (10 µs of launch and queue): within it.
    assert np.abs(r.to_pandas().predicted.to_numpy() - measured(b)).max() <= 10_000


def test_events_without_a_counterpart_in_the_step_take_the_mean():
    # The other run has two steps: steps 3 and 4 here take the mean of its two kernels.
    b = job(500, [150, 250], attention="attn_b_fwd", steps=2)
    r = what_if(job(500), durations_from=b, match={"attn_a": "attn_b"})
    pairing = r.tables["durations_from"].to_pandas()
    assert pairing.paired_by.tolist() == ["order", "order", "mean", "mean"]
    assert pairing.new_dur.tolist() == [150_000, 250_000, 200_000, 200_000]


def test_events_the_other_trace_lacks_keep_their_time():
    a = job(500)
    r = what_if(a, durations_from=job(500), match={"attn_a": "no such kernel"})
    assert (r.tables["durations_from"].to_pandas().paired_by == "unpaired").all()
    assert np.array_equal(r.to_pandas().predicted.to_numpy(), measured(a))


def test_durations_from_and_match_go_together():
    with pytest.raises(ValueError, match="go together"):
        Edits(durations_from=job(1000))
    with pytest.raises(ValueError, match="go together"):
        Edits(match=LOADER)
    with pytest.raises(ValueError, match="match"):
        Edits(durations_from=job(1000), match={"(": "x"})
    assert match_pairs({"a": "b"}) == [("a", "b")] and match_pairs("a") == [("a", "a")]
    with pytest.raises(ValueError, match="durations_from: no such file"):
        what_if(job(100), durations_from="/no/such/trace.json", match=LOADER)


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    loader=st.integers(100, 5000),
    attention=st.lists(st.integers(20, 800), min_size=STEPS, max_size=STEPS),
    pattern=st.sampled_from([".", "aten", "attn", LOADER, "gemm", "Synchronize"]),
)
def test_durations_from_a_copy_of_the_trace_changes_nothing(loader, attention, pattern):
    a, copy = job(loader, attention), job(loader, attention)
    r = what_if(a, durations_from=copy, match=pattern).to_pandas()
    assert np.array_equal(r.predicted.to_numpy(), r.replayed.to_numpy())


@settings(max_examples=15, deadline=None)
@given(host=st.integers(1, 400), factor=st.floats(0, 1))
def test_shortening_host_work_off_the_critical_path_changes_nothing(host, factor):
    # The host works while the GPU runs its 1.2 ms of kernels, then waits for it.
    a = job(500, host_side_us=host)
    got = predicted(a, op_scale={"host_side": factor})
    assert np.array_equal(got, measured(a))


@settings(max_examples=10, deadline=None)
@given(f1=st.floats(0, 3), f2=st.floats(0, 3))
def test_a_longer_op_never_shortens_a_step(f1, f2):
    lo, hi = sorted([f1, f2])
    a = job(800)
    assert (predicted(a, op_scale={LOADER: lo}) <= predicted(a, op_scale={LOADER: hi})).all()


# --- real pairs: errors pinned as upper bounds ----------------------------------------------


def _pair(folder: str, a: str, b: str) -> tuple[hta_fast.Trace, hta_fast.Trace]:
    paths = [os.path.join(PAIRS, folder, name) for name in (a, b)]
    if not all(os.path.exists(p) for p in paths):
        pytest.skip(f"{folder} pair not present")
    return hta_fast.load(paths[0]), hta_fast.load(paths[1])


def _per_step(trace: hta_fast.Trace, **edits) -> tuple[float, float]:
    """(predicted, replayed) ns per step: the steps' time together over their count
    (what_if's totals; a mean of spans would overstate where the host runs ahead)."""
    t = what_if(trace, **edits)["totals"]
    n = t["steps"].to_numpy().sum()
    return t["predicted"].to_numpy().sum() / n, t["replayed"].to_numpy().sum() / n


def _errors(a: hta_fast.Trace, b: hta_fast.Trace, **edits) -> tuple[float, float]:
    """(error of A predicted under the edits, error of "no change") against B's measured
    time per step, as fractions."""
    measured_b = _per_step(b)[1]
    return _per_step(a, **edits)[0] / measured_b - 1, _per_step(a)[1] / measured_b - 1


def test_dataloader_pair_four_workers_from_the_loader_of_the_run_with_them():
    a, b = _pair(
        "dataloader_workers",
        "resnet50_num_workers_0.pt.trace.json.gz",
        "resnet50_num_workers_4.pt.trace.json.gz",
    )
    err, no_change = _errors(a, b, durations_from=b, match=LOADER)
    assert abs(err) <= 0.045  # measured -3.5 % (123.8 ms predicted, 128.3 measured)
    assert abs(err) < abs(no_change) / 3  # no change: +20.7 %


def test_attention_pair_sage_attention_from_its_kernels():
    a, b = _pair("attention_backend", "flux_aiter.json.gz", "flux_aiter_sage.json.gz")
    err, no_change = _errors(a, b, durations_from=b, match={"fmha_fwd": "sage_fwd|sage_quant"})
    assert abs(err) <= 0.045  # measured -3.7 % (754.9 ms predicted, 783.9 measured)
    assert abs(err) < abs(no_change)  # no change: -5.3 %


def test_doctor_input_pipeline_saving_is_the_free_loader_and_bounds_four_workers():
    from hta_fast.doctor import diagnose

    a, b = _pair(
        "dataloader_workers",
        "resnet50_num_workers_0.pt.trace.json.gz",
        "resnet50_num_workers_4.pt.trace.json.gz",
    )
    saving = diagnose(a).finding("input_pipeline").saving_ns_per_step
    predicted, replayed = _per_step(a, op_scale={LOADER: 0})
    assert saving == round(replayed - predicted)  # 31.0 ms
    four_workers = replayed - _per_step(b)[1]  # 26.5 ms measured
    assert four_workers <= saving <= 1.25 * four_workers


# --- the replay predicts nothing ----------------------------------------------------------


def test_the_replay_command_says_its_error_is_zero_by_construction(tmp_path):
    """The replay meets every step by construction; no forecast is printed beside it (a
    step "predicted from the one before" read the step it predicted: its graph, its gaps)."""
    import json

    from click.testing import CliRunner

    from hta_fast.cli import cli
    from hta_fast.model.replay.steps import replay_steps

    trace = job(800, [300, 300, 500, 300])
    replay = replay_steps(trace)
    assert (replay.to_pandas().error_pct == 0).all()
    assert "by construction" in replay.notes[0]
    path = tmp_path / "t.json"
    path.write_bytes(job_builder(800, [300, 300, 500, 300]).to_bytes())
    res = CliRunner().invoke(cli, ["replay", str(path), "--format", "json"])
    doc = json.loads(res.output[: res.output.rindex("}") + 1])
    assert list(doc["tables"]) == ["replay"]


# --- an annotation that outlasts the frame that opens it -----------------------------------
def _opened_annotation(copy_us: float) -> KinetoBuilder:
    """As SGLang records a step: a 4 µs Python frame (record_function's __enter__) opens an
    annotation that outlasts it; inside, a blocking copy of copy_us with the GPU idle, then
    a kernel. The trace nests the annotation under the short frame by its start."""
    b = KinetoBuilder()
    end = 10 + copy_us + 200
    b.python_function("torch/autograd/profiler.py(783): __enter__", 1, 4)
    b.cpu_op("step[DECODE bs=32]", 2, end - 2, cat="user_annotation")
    b.cpu_op("aten::copy_", 5, copy_us + 2)
    b.runtime("hipMemcpyWithStream", 6, copy_us)
    b.kernel("decode_kernel", copy_us + 20, copy_us + 30, 100)
    b.step(0, 0, end + 1)
    return b


@pytest.mark.parametrize("copy_us", [500.0, 50_000.0])
def test_removing_a_stall_inside_an_annotation_that_outlasts_its_opener_saves_it(copy_us):
    got = predicted(_opened_annotation(copy_us).load(), op_scale={"hipMemcpyWithStream": 0})
    base = measured(_opened_annotation(copy_us).load())
    assert base[0] - got[0] == pytest.approx(copy_us * 1000, rel=0.02)
