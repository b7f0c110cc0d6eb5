"""Notes of the model's analyses name a trace without profiler steps as "the whole trace"
(it is analysed as one step, step None), never "step None"."""

from __future__ import annotations

from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.replay.steps import BY_CONSTRUCTION, replay_steps
from tests.support.kineto_builder import KinetoBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def test_notes_name_a_trace_without_steps_as_the_whole_trace():
    b = KinetoBuilder()  # no ProfilerStep: one window, step None; no syncs: a note
    b.kernel(GEMM, 10, 30, 500, stream=7)
    b.cpu_op("aten::log", 40, 900)
    trace = b.load()
    notes = critical_path(trace).notes + replay_steps(trace).notes
    notes = [n for n in notes if n != BY_CONSTRUCTION]  # the replay's one caveat, rank-free
    assert notes
    assert not [n for n in notes if "None" in n]
    assert all(n.startswith("rank 0 the whole trace: ") for n in notes), notes
