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

import numpy as np

from .. import ops
from ..frame.derived import name_flags
from ..frame.kernel_args import compute_capability, kernel_arg
from ..schema import EventKind, KernelClass
from .context import RankView
from .estimate import Estimate, Tally, per_step
from .gap_causes import split_gaps
from .intervals import covered_length
from .thresholds import Thresholds

HOST_DEVICE_COPY = r"HtoD|DtoH|Host to Device|Device to Host"
PAGEABLE = r"Pageable"
FP32_GEMM = r"(?i)sgemm|gemmSN_|gemv2T_kernel_val<.*float"
TENSOR_CORE = r"(?i)tensorop|xmma|hmma|wmma|i?\d{3,5}gemm|tf32|bf16|f16|s1688|s16816|_tc_"

ADVICE = (
    "Keep the step free of host-device round trips: no .item(), .cpu(), .tolist(), "
    "print() of GPU tensors or torch.cuda.synchronize() in the loop (keep metrics on the "
    "GPU and read them every N steps); copy from pinned memory (pin_memory=True) with "
    "non_blocking=True; keep shapes stable so the caching allocator stops calling "
    "cudaMalloc/cudaFree (no empty_cache() in the loop); let GEMMs use tensor cores "
    "(torch.set_float32_matmul_precision('high') or autocast to bf16/fp16)."
)


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost = {}
    tally = Tally()
    syncs = allocs = allocs_later = copies = pageable = 0
    sync_idle = alloc_idle = copy_exposed = copy_bytes = fp32_waste = 0.0
    for v in views:
        trace, w = v.trace, v.work
        split = split_gaps(v, th)
        gap_cost = split.memory_sync + split.allocator
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
        allocs += len(split.alloc_rows)
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
        "sync_idle_ns_per_step": sync_idle / total_steps,
        "allocator_calls_per_step": allocs / total_steps,
        "allocator_calls_after_first_step": allocs_later,
        "allocator_idle_ns_per_step": alloc_idle / total_steps,
        "host_device_copies_per_step": copies / total_steps,
        "pageable_copies_per_step": pageable / total_steps,
        "copy_bytes_per_step": copy_bytes / total_steps,
        "exposed_copy_ns_per_step": copy_exposed / total_steps,
        "fp32_gemm_loss_ns_per_step": fp32_waste / total_steps,
    }
    parts = [f"{evidence['blocking_syncs_per_step']:.1f} blocking syncs per step"]
    if copies:
        parts.append(
            f"{evidence['host_device_copies_per_step']:.1f} host-device copies per step "
            f"({evidence['pageable_copies_per_step']:.1f} from pageable memory)"
        )
    if allocs:
        parts.append(f"{evidence['allocator_calls_per_step']:.1f} allocator calls per step")
    if fp32_waste:
        parts.append("FP32 GEMMs off the tensor cores")
    title = "Memory traffic and synchronisation: " + ", ".join(parts)
    return Estimate(cost, evidence, tally.top(), title, ADVICE)
