"""Cause 4, memory traffic and synchronisation.

Cost per step, the sum of:
  - GPU idle while the host was blocked in a synchronising call when the GPU went idle
    (cudaStreamSynchronize, .item(), ...) or in an allocator call, in the gaps ended by work
    the host launched after the gap began (gap_causes: memory_sync); the gaps between
    kernels queued before the host blocked are not the sync's. Each sync counts once: the
    outermost of nested sync calls (aten::item > aten::_local_scalar_dense >
    cudaStreamSynchronize) is the one;
  - host<->device copies (Memcpy HtoD / DtoH) not hidden behind compute kernels (copies
    running at once counted once);
  - FP32 GEMMs that ran on the CUDA cores (`sgemm` kernels without a tensor-core variant in the
    name) on a device with tensor cores: duration x (1 - 1 / Thresholds.fp32_gemm_speedup).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ... import ops
from ...frame.derived import name_flags
from ...frame.fields import duration_text
from ...frame.kernel_args import compute_capability, kernel_arg
from ...model.whatif.edits import Edits
from ...schema import EventKind, KernelClass
from ...sync_calls import COPY_NAMES
from ...trace import Trace
from ..views.context import RankView, is_amd, names_of
from ..views.estimate import Estimate, Tally, per_step
from ..views.gap_causes import ALLOCATOR, split_gaps
from ..views.intervals import covered_length
from ..views.thresholds import Thresholds
from .record import Cause, CauseDoc, Examination

# The parts of the idle-gap split charged to it: blocking syncs and calls, allocator calls.
GAP_PARTS = ("memory_sync", "allocator")
HOST_DEVICE_COPY = r"HtoD|DtoH|Host to Device|Device to Host"
PAGEABLE = r"Pageable"
# A copy from pageable memory goes through a pinned staging buffer: on PCIe it reaches about
# half the bandwidth of a copy from pinned memory.
PAGEABLE_SLOWDOWN = 2.0
FP32_GEMM = r"(?i)sgemm|gemmSN_|gemv2T_kernel_val<.*float"
TENSOR_CORE = r"(?i)tensorop|xmma|hmma|wmma|i?\d{3,5}gemm|tf32|bf16|f16|s1688|s16816|_tc_"

SYNC_ADVICE = (
    "Keep the step free of host-device round trips: no .item(), .cpu(), .tolist(), print() "
    "of GPU tensors or torch.cuda.synchronize() in the loop (keep metrics on the GPU and read "
    "them every N steps)."
)
COPY_ADVICE = (
    "Copy from pinned memory (pin_memory=True, tensor.pin_memory()) with non_blocking=True, "
    "so that copies stop blocking the host ({copy} waits for the copy to finish)."
)
ALLOC_ADVICE = (
    "Keep the caching allocator warm: stable shapes, no torch.cuda.empty_cache() in the loop, "
    "no memory fraction or max_split_size_mb that forces frees; {alloc} calls after the "
    "first steps mean memory is returned and requested again (PYTORCH_{env}_ALLOC_CONF="
    "expandable_segments:True helps fragmentation)."
)
GEMM_ADVICE = {
    "tf32": "Let FP32 GEMMs use tensor cores: torch.set_float32_matmul_precision('high') "
    "(TF32) or autocast to bf16/fp16.",
    "fp16": "This GPU's tensor cores take fp16 only: autocast to fp16 (with a "
    "GradScaler) lets the GEMMs use them.",
    "amd": "Let GEMMs use the matrix cores: autocast to bf16/fp16.",
    "unknown": "Let FP32 GEMMs use tensor cores where the GPU has them: from compute "
    "capability 8, torch.set_float32_matmul_precision('high') (TF32) or bf16 autocast; on "
    "compute 7 (V100, T4), fp16 autocast only (the trace does not say which GPU this is).",
}


def _gemm_kind(trace: Trace, cc: Optional[int]) -> str:
    """Which tensor-core advice fits the device: AMD, fp16 only (compute 7.x), TF32, or
    both said (no compute capability in the trace)."""
    if is_amd(trace):
        return "amd"
    if cc is None:
        return "unknown"
    return "fp16" if cc < 8 else "tf32"


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost = {}
    tally = Tally()
    syncs = allocs = allocs_later = copies = pageable = blocking_copies = 0
    sync_idle = alloc_idle = alloc_time = copy_exposed = copy_bytes = fp32_waste = 0.0
    blocking: set[str] = set()
    gemm_kind = "tf32"
    for v in views:
        trace, w = v.trace, v.work
        split = split_gaps(v, th)
        gap_cost = split.charged(GAP_PARTS)
        step_cost = per_step(v, v.gaps.step_index, gap_cost)
        # The sync call holding each sync gap's start: the last one to start before it.
        sync_rows = split.sync_rows
        if len(sync_rows):
            sts = trace.column("events", "ts")[sync_rows]
            order = np.argsort(sts, kind="stable")
            hit = split.memory_sync > 0
            k = np.searchsorted(sts[order], v.gaps.starts[hit], side="right") - 1
            ok = k >= 0
            tally.add(v, sync_rows[order][k[ok]], split.memory_sync[hit][ok])
        tally.add(
            v, split.alloc_rows, np.maximum(trace.column("events", "dur")[split.alloc_rows], 0)
        )
        syncs += len(sync_rows)
        is_copy = name_flags(trace, COPY_NAMES)[
            np.maximum(trace.column("events", "name")[sync_rows], 0)
        ]
        blocking_copies += int(np.count_nonzero(is_copy))
        blocking.update(names_of(trace, np.unique(sync_rows[is_copy])[:20]))
        allocs += len(split.alloc_rows)
        alloc_time += float(np.maximum(trace.column("events", "dur")[split.alloc_rows], 0).sum())
        # Steady state: after the first analysed step, the caching allocator should be warm.
        if v.n_steps > 1:
            alloc_ts = trace.column("events", "ts")[split.alloc_rows]
            allocs_later += int(np.count_nonzero(alloc_ts >= v.step_start(1)))
        sync_idle += float(split.memory_sync.sum())
        alloc_idle += float(split.allocator.sum())

        names = trace.column("events", "name")[w.rows]
        kind = trace.column("events", "kind")[w.rows]
        safe = np.maximum(names, 0)
        comp = w.kclass == KernelClass.COMP
        comp_u = ops.union(w.starts[comp], w.ends[comp])
        copy = v.selected & (kind == EventKind.memcpy) & name_flags(trace, HOST_DEVICE_COPY)[safe]
        dur = w.ends - w.starts
        exposed = dur[copy] - covered_length(
            comp_u.starts, comp_u.ends, w.starts[copy], w.ends[copy]
        )
        # Copies running at once (both directions, several streams) are exposed once.
        if exposed.sum() > 0:
            union_exposed = ops.difference(w.starts[copy], w.ends[copy], comp_u.starts, comp_u.ends)
            exposed = exposed * min(
                1.0, float((union_exposed.ends - union_exposed.starts).sum()) / float(exposed.sum())
            )
        step_cost += per_step(v, v.work_step_index[copy], exposed)
        tally.add(v, w.rows[copy], exposed)
        copies += int(np.count_nonzero(copy))
        pageable += int(np.count_nonzero(copy & name_flags(trace, PAGEABLE)[safe]))
        copy_exposed += float(exposed.sum())
        b = kernel_arg(trace, w.rows[copy], "bytes")
        copy_bytes += float(b[b > 0].sum())

        cc = compute_capability(trace)
        gemm_kind = _gemm_kind(trace, cc)
        if cc is None or cc >= 7:
            fp32 = (
                v.selected
                & comp
                & (kind == EventKind.kernel)
                & name_flags(trace, FP32_GEMM)[safe]
                & ~name_flags(trace, TENSOR_CORE)[safe]
            )
            waste = dur[fp32] * (1.0 - 1.0 / th.fp32_gemm_speedup)
            step_cost += per_step(v, v.work_step_index[fp32], waste)
            tally.add(v, w.rows[fp32], waste)
            fp32_waste += float(waste.sum())
        cost[v.rank] = step_cost
    total_steps = sum(v.n_steps for v in views) or 1
    evidence = {
        "blocking_syncs_per_step": syncs / total_steps,
        "blocking_copies_per_step": blocking_copies / total_steps,
        "sync_idle_ns_per_step": sync_idle / total_steps,
        "allocator_calls_per_step": allocs / total_steps,
        "allocator_time_ns_per_step": alloc_time / total_steps,
        "allocator_calls_after_first_step": allocs_later,
        "allocator_idle_ns_per_step": alloc_idle / total_steps,
        "host_device_copies_per_step": copies / total_steps,
        "pageable_copies_per_step": pageable / total_steps,
        "copy_bytes_per_step": copy_bytes / total_steps,
        "exposed_copy_ns_per_step": copy_exposed / total_steps,
        "fp32_gemm_loss_ns_per_step": fp32_waste / total_steps,
    }
    # The parts, costliest first: the title names each found, the advice says what helps it.
    amd = any(is_amd(v.trace) for v in views)
    parts = []
    if syncs:
        parts.append(
            (
                sync_idle,
                f"{(syncs - blocking_copies) / total_steps:.1f} host syncs"
                + (
                    f", {blocking_copies / total_steps:.1f} blocking copies"
                    if blocking_copies
                    else ""
                )
                + " per step",
                SYNC_ADVICE
                + (" " + COPY_ADVICE.format(copy=copy_names(blocking)) if blocking_copies else ""),
            )
        )
    if copies:
        parts.append(
            (
                copy_exposed,
                f"{evidence['host_device_copies_per_step']:.1f} host-device copies per step "
                f"({evidence['pageable_copies_per_step']:.1f} from pageable memory)",
                COPY_ADVICE.format(copy="a pageable copy"),
            )
        )
    if allocs:
        parts.append(
            (
                alloc_idle,
                f"{evidence['allocator_calls_per_step']:,.1f} allocator calls per step taking "
                f"{duration_text(alloc_time / total_steps)}",
                ALLOC_ADVICE.format(
                    alloc="hipMalloc/hipFree" if amd else "cudaMalloc/cudaFree",
                    env="HIP" if amd else "CUDA",
                ),
            )
        )
    if fp32_waste:
        parts.append((fp32_waste, "FP32 GEMMs off the tensor cores", GEMM_ADVICE[gemm_kind]))
    parts.sort(key=lambda p: -p[0])
    title = "Memory traffic and synchronisation: " + (
        ", ".join(p[1] for p in parts) if parts else "none found"
    )
    advice = " ".join(p[2] for p in parts) or SYNC_ADVICE
    return Estimate(cost, evidence, tally.top(), title, advice)


def copy_names(names: set[str]) -> str:
    return "/".join(sorted(names)) or "a blocking copy"


def _edit(ex: Examination) -> Edits:
    return Edits(
        drop_sync_waits=True,
        op_scale={ALLOCATOR: 0.0},
        name={PAGEABLE: 1.0 / PAGEABLE_SLOWDOWN, FP32_GEMM: 1.0 / ex.th.fp32_gemm_speedup},
    )


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means="host-device copies, blocking syncs and copies, allocator churn, FP32 GEMMs",
    cost=(
        "idle gaps ended by work whose launch returned after the gap began, that began "
        "while the host was blocked in cudaStreamSynchronize / cudaDeviceSynchronize / "
        "cudaEventSynchronize / synchronous cudaMemcpy / hipMemcpyWithStream / "
        "aten::item / aten::_local_scalar_dense (their HIP forms too), or (their part) "
        "covered by such a call or by cudaMalloc / cudaFree / hipMalloc / hipFree calls; "
        "the title names each part found, costliest first (host syncs, blocking copies "
        "per step, allocator calls per step and their host time, copies, FP32 GEMMs), "
        "and the advice says what helps each, in the runtime's names (HIP on AMD) and "
        "for the device (TF32 or bf16 from compute 8, fp16 on compute 7, matrix cores on "
        "AMD); each sync counts once in `blocking_syncs_per_step` and `top_events`: the "
        "outermost of nested sync calls (aten::item > aten::_local_scalar_dense > "
        "cudaStreamSynchronize is one); plus HtoD / DtoH copies not hidden behind "
        "compute (pageable ones counted apart); plus FP32 GEMMs (`sgemm` without a "
        "tensor-core variant in the name) on devices with tensor cores: duration x (1 - "
        "1 / `fp32_gemm_speedup`)"
    ),
    helps=(
        "no `.item()` / synchronize in the loop, pinned memory + non_blocking copies, "
        "stable shapes for the caching allocator, TF32 / bf16 autocast"
    ),
    edit=(
        "blocking syncs return at once (`drop_sync_waits`: the host's waits for the GPU "
        "dropped, a sync taking what the trace's syncs that did not wait took), "
        "allocator calls take no time (`op_scale`), host-device copies from pageable "
        "memory at pinned speed (2x: a pageable copy goes through a pinned staging "
        "buffer, about half the PCIe bandwidth), FP32 GEMMs on CUDA cores at "
        "`fp32_gemm_speedup`"
    ),
)


CAUSE = Cause(
    key="memory_sync",
    name="memory traffic and synchronisation",
    thresholds=("min_share", "fp32_gemm_speedup"),
    evidence=(
        "blocking_syncs_per_step",
        "blocking_copies_per_step",
        "sync_idle_ns_per_step",
        "allocator_calls_per_step",
        "allocator_time_ns_per_step",
        "allocator_calls_after_first_step",
        "allocator_idle_ns_per_step",
        "host_device_copies_per_step",
        "pageable_copies_per_step",
        "copy_bytes_per_step",
        "exposed_copy_ns_per_step",
        "fp32_gemm_loss_ns_per_step",
    ),
    heuristic=lambda ex: examine(ex.views, ex.th),
    edit=_edit,
    edit_text="syncs return at once, allocator calls take no time, pageable copies run at "
    "pinned speed, FP32 GEMMs on tensor cores",
    edit_limits="after a sync the host still does its own work before it queues more, so "
    "the GPU idles until then; the heuristic counts the whole idle gap",
    name_patterns=(HOST_DEVICE_COPY, PAGEABLE, FP32_GEMM, TENSOR_CORE, COPY_NAMES, ALLOCATOR),
    gap_parts=GAP_PARTS,
    doc=DOC,
)
