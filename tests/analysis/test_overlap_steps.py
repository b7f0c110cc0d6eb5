"""Overlap per step (the TensorBoard plugin's distributed view) and how collective time is
summed, by construction."""

from __future__ import annotations

from hta_fast.analysis.kernel_breakdown import kernel_breakdown
from hta_fast.analysis.overlap import comm_comp_overlap
from tests.support.kineto_builder import KinetoBuilder


def _job() -> KinetoBuilder:
    """Two steps of 1000 µs. Step 0: a GEMM [100, 400) and an all-reduce [300, 600): 200 µs
    computation only, 100 overlapped, 200 communication only, 500 other. Step 1: two
    all-reduces on two streams, [1100, 1400) and [1200, 1500), no computation."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel("gemm", 10, 100, 300)
    b.nccl("allreduce", 20, 300, 300)
    b.step(1, 1000, 1000)
    b.nccl("allreduce", 1010, 1100, 300, stream=20)
    b.nccl("allreduce", 1020, 1200, 300, stream=21)
    return b


def test_each_step_splits_into_computation_overlap_communication_and_other():
    rows = comm_comp_overlap(_job().load())["steps"].to_pylist()
    us = 1000
    assert [
        (r["step"], r["computation"], r["overlap"], r["communication"], r["other"]) for r in rows
    ] == [
        (0, 200 * us, 100 * us, 200 * us, 500 * us),
        (1, 0, 0, 400 * us, 600 * us),  # the two collectives' union: 400 µs
    ]
    assert all(r["dur"] == 1000 * us for r in rows)


def test_collective_time_is_summed_per_collective_and_merged_per_type():
    """Overlapping collectives each count their own time per kernel (600 µs in step 1),
    where the plugin's per-worker collective time merges them (and adds the nccl:* CPU
    span); the kernel-type table, as the reference, and the step view above take their
    union (400 µs, no CPU span)."""
    res = kernel_breakdown(_job().load(), steps=[1])
    (per_kernel,) = [r for r in res["kernels"].to_pylist() if r["kernel_type"] == "COMMUNICATION"]
    assert per_kernel["sum"] == 600_000 and per_kernel["count"] == 2
    (per_type,) = res.table.to_pylist()
    assert per_type["kernel_type"] == "COMMUNICATION" and per_type["time"] == 400_000


def test_cpu_operators_are_the_computation_only_of_a_rank_without_computation_kernels():
    """A gloo job: the gloo call's host span is communication. With a kernel anywhere on the
    rank, computation is kernels, in every selection (step 1 alone has none); without one,
    its CPU operators compute."""
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel("gemm", 10, 100, 300)
    b.step(1, 1000, 1000)
    b.cpu_op("aten::mul", 1100, 400)
    b.cpu_op("gloo:all_reduce", 1300, 400)
    us = 1000
    (row,) = comm_comp_overlap(b.load(), steps=[1])["steps"].to_pylist()
    assert (row["computation"], row["overlap"], row["communication"]) == (0, 0, 400 * us)
    cpu = KinetoBuilder()
    cpu.step(1, 1000, 1000)
    cpu.cpu_op("aten::mul", 1100, 400)
    cpu.cpu_op("gloo:all_reduce", 1300, 400)
    (row,) = comm_comp_overlap(cpu.load())["steps"].to_pylist()
    assert (row["computation"], row["overlap"], row["communication"], row["other"]) == (
        200 * us,
        200 * us,
        200 * us,
        400 * us,
    )
