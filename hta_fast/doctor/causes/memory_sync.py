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

import dataclasses
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
from ..views.gap_causes import ALLOCATOR, GapSplit, split_gaps
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


@dataclasses.dataclass
class _Counts:
    """What examine() adds up over the ranks; gemm_kind: the last rank's GEMM advice."""

    syncs: int = 0
    allocs: int = 0
    allocs_later: int = 0
    copies: int = 0
    pageable: int = 0
    blocking_copies: int = 0
    sync_idle: float = 0.0
    alloc_idle: float = 0.0
    alloc_time: float = 0.0
    copy_exposed: float = 0.0
    copy_bytes: float = 0.0
    fp32_waste: float = 0.0
    blocking: set[str] = dataclasses.field(default_factory=set)
    gemm_kind: str = "tf32"


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost = {}
    tally = Tally()
    n = _Counts()
    for v in views:
        split = split_gaps(v, th)
        gap_cost = split.charged(GAP_PARTS)
        step_cost = per_step(v, v.gaps.step_index, gap_cost)
        _count_syncs_and_allocs(v, split, tally, n)
        step_cost += _count_exposed_copies(v, tally, n)
        fp32_cost = _count_fp32_gemms(v, th, tally, n)
        if fp32_cost is not None:
            step_cost += fp32_cost
        cost[v.rank] = step_cost
    total_steps = sum(v.n_steps for v in views) or 1
    evidence = {
        "blocking_syncs_per_step": n.syncs / total_steps,
        "blocking_copies_per_step": n.blocking_copies / total_steps,
        "sync_idle_ns_per_step": n.sync_idle / total_steps,
        "allocator_calls_per_step": n.allocs / total_steps,
        "allocator_time_ns_per_step": n.alloc_time / total_steps,
        "allocator_calls_after_first_step": n.allocs_later,
        "allocator_idle_ns_per_step": n.alloc_idle / total_steps,
        "host_device_copies_per_step": n.copies / total_steps,
        "pageable_copies_per_step": n.pageable / total_steps,
        "copy_bytes_per_step": n.copy_bytes / total_steps,
        "exposed_copy_ns_per_step": n.copy_exposed / total_steps,
        "fp32_gemm_loss_ns_per_step": n.fp32_waste / total_steps,
    }
    parts = _parts(n, evidence, total_steps, any(is_amd(v.trace) for v in views))
    title = "Memory traffic and synchronisation: " + (
        ", ".join(p[1] for p in parts) if parts else "none found"
    )
    advice = " ".join(p[2] for p in parts) or SYNC_ADVICE
    return Estimate(cost, evidence, tally.top(), title, advice)


def _count_syncs_and_allocs(v: RankView, split: GapSplit, tally: Tally, n: _Counts) -> None:
    """The rank's blocking syncs (each charged the sync gaps it holds the start of) and
    allocator calls, into tally and n."""
    trace = v.trace
    # The sync call holding each sync gap's start: the last one to start before it.
    sync_rows = split.sync_rows
    if len(sync_rows):
        sts = trace.column("events", "ts")[sync_rows]
        order = np.argsort(sts, kind="stable")
        hit = split.memory_sync > 0
        k = np.searchsorted(sts[order], v.gaps.starts[hit], side="right") - 1
        ok = k >= 0
        tally.add(v, sync_rows[order][k[ok]], split.memory_sync[hit][ok])
    tally.add(v, split.alloc_rows, np.maximum(trace.column("events", "dur")[split.alloc_rows], 0))
    n.syncs += len(sync_rows)
    is_copy = name_flags(trace, COPY_NAMES)[
        np.maximum(trace.column("events", "name")[sync_rows], 0)
    ]
    n.blocking_copies += int(np.count_nonzero(is_copy))
    n.blocking.update(names_of(trace, np.unique(sync_rows[is_copy])[:20]))
    n.allocs += len(split.alloc_rows)
    n.alloc_time += float(np.maximum(trace.column("events", "dur")[split.alloc_rows], 0).sum())
    # Steady state: after the first analysed step, the caching allocator should be warm.
    if v.n_steps > 1:
        alloc_ts = trace.column("events", "ts")[split.alloc_rows]
        n.allocs_later += int(np.count_nonzero(alloc_ts >= v.step_start(1)))
    n.sync_idle += float(split.memory_sync.sum())
    n.alloc_idle += float(split.allocator.sum())


def _count_exposed_copies(v: RankView, tally: Tally, n: _Counts) -> np.ndarray:
    """The rank's host-device copy time not hidden behind compute kernels, into tally and
    n; returns it per step."""
    trace, w = v.trace, v.work
    names = trace.column("events", "name")[w.rows]
    kind = trace.column("events", "kind")[w.rows]
    safe = np.maximum(names, 0)
    comp = w.kclass == KernelClass.COMP
    comp_u = ops.union(w.starts[comp], w.ends[comp])
    copy = v.selected & (kind == EventKind.memcpy) & name_flags(trace, HOST_DEVICE_COPY)[safe]
    dur = w.ends - w.starts
    exposed = dur[copy] - covered_length(comp_u.starts, comp_u.ends, w.starts[copy], w.ends[copy])
    # Copies running at once (both directions, several streams) are exposed once.
    if exposed.sum() > 0:
        union_exposed = ops.difference(w.starts[copy], w.ends[copy], comp_u.starts, comp_u.ends)
        exposed = exposed * min(
            1.0, float((union_exposed.ends - union_exposed.starts).sum()) / float(exposed.sum())
        )
    tally.add(v, w.rows[copy], exposed)
    n.copies += int(np.count_nonzero(copy))
    n.pageable += int(np.count_nonzero(copy & name_flags(trace, PAGEABLE)[safe]))
    n.copy_exposed += float(exposed.sum())
    b = kernel_arg(trace, w.rows[copy], "bytes")
    n.copy_bytes += float(b[b > 0].sum())
    return per_step(v, v.work_step_index[copy], exposed)


def _count_fp32_gemms(
    v: RankView, th: Thresholds, tally: Tally, n: _Counts
) -> Optional[np.ndarray]:
    """The time the rank's FP32 GEMMs on the CUDA cores would save on tensor cores, into
    tally and n; returns it per step (None on a device without tensor cores). Sets
    n.gemm_kind."""
    trace, w = v.trace, v.work
    cc = compute_capability(trace)
    n.gemm_kind = _gemm_kind(trace, cc)
    if not (cc is None or cc >= 7):
        return None
    safe = np.maximum(trace.column("events", "name")[w.rows], 0)
    kind = trace.column("events", "kind")[w.rows]
    fp32 = (
        v.selected
        & (w.kclass == KernelClass.COMP)
        & (kind == EventKind.kernel)
        & name_flags(trace, FP32_GEMM)[safe]
        & ~name_flags(trace, TENSOR_CORE)[safe]
    )
    waste = (w.ends - w.starts)[fp32] * (1.0 - 1.0 / th.fp32_gemm_speedup)
    tally.add(v, w.rows[fp32], waste)
    n.fp32_waste += float(waste.sum())
    return per_step(v, v.work_step_index[fp32], waste)


def _parts(
    n: _Counts, evidence: dict[str, float], total_steps: int, amd: bool
) -> list[tuple[float, str, str]]:
    """The parts found, costliest first, as (cost, what the title names, the advice that
    helps it)."""
    parts = []
    if n.syncs:
        parts.append(
            (
                n.sync_idle,
                f"{(n.syncs - n.blocking_copies) / total_steps:.1f} host syncs"
                + (
                    f", {n.blocking_copies / total_steps:.1f} blocking copies"
                    if n.blocking_copies
                    else ""
                )
                + " per step",
                SYNC_ADVICE
                + (
                    " " + COPY_ADVICE.format(copy=copy_names(n.blocking))
                    if n.blocking_copies
                    else ""
                ),
            )
        )
    if n.copies:
        parts.append(
            (
                n.copy_exposed,
                f"{evidence['host_device_copies_per_step']:.1f} host-device copies per step "
                f"({evidence['pageable_copies_per_step']:.1f} from pageable memory)",
                COPY_ADVICE.format(copy="a pageable copy"),
            )
        )
    if n.allocs:
        parts.append(
            (
                n.alloc_idle,
                f"{evidence['allocator_calls_per_step']:,.1f} allocator calls per step taking "
                f"{duration_text(n.alloc_time / total_steps)}",
                ALLOC_ADVICE.format(
                    alloc="hipMalloc/hipFree" if amd else "cudaMalloc/cudaFree",
                    env="HIP" if amd else "CUDA",
                ),
            )
        )
    if n.fp32_waste:
        parts.append((n.fp32_waste, "FP32 GEMMs off the tensor cores", GEMM_ADVICE[n.gemm_kind]))
    parts.sort(key=lambda p: -p[0])
    return parts


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
