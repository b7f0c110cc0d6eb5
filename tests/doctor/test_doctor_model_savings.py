"""The doctor's predicted savings: each cause's edit replayed by the model (doctor.model_savings),
on the synthetic scenarios whose answer is known by construction and on a real trace where the
model and the heuristic disagree."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from hta_fast.cli import cli
from hta_fast.doctor import diagnose, ranking
from tests.conftest import TRACES_DIR
from tests.support import synthetic_traces as synth
from tests.support.kineto_builder import KinetoBuilder, traceset

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
RESNET_0 = os.path.join(
    TRACES_DIR, "pairs", "dataloader_workers", "resnet50_num_workers_0.pt.trace.json.gz"
)


def test_a_free_loader_saves_the_time_the_gpu_waited_for_it():
    # Each step waits 4 ms in the loader with the GPU idle, then runs its kernels.
    f = diagnose(synth.input_pipeline()).finding("input_pipeline")
    assert f.saving_ns_per_step == 4_000_000
    assert f.saving_edit == "the data loader costs nothing"


def test_a_datapipe_loader_is_a_data_loader():
    # torch.utils.data.datapipes: each pipe's iteration is enumerate(DataPipe)#<class>,
    # nested as the pipes are; 4 ms of it per step with the GPU idle, then the kernels.
    b = KinetoBuilder()
    for s in range(synth.STEPS):
        t0 = s * synth.STEP_US
        b.step(s, t0, synth.STEP_US)
        b.cpu_op("enumerate(DataPipe)#BatcherIterDataPipe", t0, 4000, cat="user_annotation")
        b.cpu_op("enumerate(DataPipe)#MapperIterDataPipe", t0 + 100, 3800, cat="user_annotation")
        for j in range(10):
            b.kernel(GEMM, t0 + 4000 + j * 10, t0 + 4010 + j * 599, 598)
    f = diagnose(traceset([b])).finding("input_pipeline")
    assert f.above_threshold and f.cost_ns_per_step == 4_000_000
    assert f.saving_ns_per_step == 4_000_000


def test_syncs_that_return_at_once_save_the_wait():
    # .item() blocks the host 5.085 ms until the GPU drains; the host then works 4.8 ms
    # before the next launches: without the wait, the next step's launches come that early.
    f = diagnose(synth.memory_sync()).finding("memory_sync")
    assert f.saving_ns_per_step == 5_085_000
    assert f.cost_ns_per_step > 0  # the heuristic's estimate stays beside it


def test_parallelism_says_it_is_not_modelled():
    f = diagnose(synth.parallelism()).finding("parallelism")
    assert f.saving_ns_per_step is None and "not modelled" in f.saving_edit


def test_without_the_model_no_saving_is_given():
    d = diagnose(synth.input_pipeline(), model=False)
    assert all(f.saving_ns_per_step is None for f in d.findings)
    with pytest.raises(ValueError, match="model must be"):
        diagnose(synth.input_pipeline(), model="yes")


def test_beyond_the_rank_limit_auto_leaves_the_model_out(monkeypatch):
    monkeypatch.setattr(ranking, "MODEL_MAX_RANKS", 1)
    d = diagnose(synth.rank_imbalance())
    assert all(f.saving_ns_per_step is None for f in d.findings)
    assert any("model=True" in n for n in d.notes)
    assert diagnose(synth.rank_imbalance(), model=True).finding("rank_imbalance").saving_edit


def test_findings_are_ranked_by_the_predicted_saving():
    if not os.path.exists(RESNET_0):
        pytest.skip("dataloader_workers pair not present")
    import hta_fast

    d = diagnose(hta_fast.load(RESNET_0))
    above = [f for f in d.findings if f.above_threshold]
    # The heuristic puts memory_sync (13.3 ms, mostly FP32 convolutions) before launch_bound
    # (12.3 ms); the step is host bound, so the model says faster kernels save ~0.1 ms and
    # free launches ~11.7 ms.
    mem, launch = d.finding("memory_sync"), d.finding("launch_bound")
    assert mem.cost_ns_per_step > launch.cost_ns_per_step
    assert launch.saving_ns_per_step > 50 * mem.saving_ns_per_step
    assert [f.cause for f in above][:3] == ["input_pipeline", "launch_bound", "memory_sync"]
    keys = [f.rank_key for f in d.findings]
    assert keys == sorted(keys)


def test_doctor_json_and_text_show_the_saving(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(synth.input_pipeline_builder().to_bytes())
    res = CliRunner().invoke(cli, ["doctor", str(path), "--json"], catch_exceptions=False)
    doc = json.loads(res.output)
    f = next(f for f in doc["findings"] if f["cause"] == "input_pipeline")
    assert f["saving_ns_per_step"] == 4_000_000
    res = CliRunner().invoke(cli, ["doctor", str(path)], catch_exceptions=False)
    assert "model: removing it saves ~4.00 ms per step" in res.output
    res = CliRunner().invoke(cli, ["doctor", str(path), "--no-model", "--json"])
    assert all(f["saving_ns_per_step"] is None for f in json.loads(res.output)["findings"])
