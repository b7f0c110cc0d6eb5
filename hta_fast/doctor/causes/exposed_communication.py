"""Cause 5, exposed communication: collective time that no computation hides.

Cost per step: the time of each communication kernel not covered by compute kernels (the
complement of analysis.overlap's overlap; collectives running at once on several streams are
counted once, by scaling to the union that analysis measures), less the time the rank spent
waiting in collectives for the last rank to arrive, which rank_imbalance charges: what is
left is the data time no compute hides.

Evidence: the overlap percentage (analysis.overlap), communication time per step, and the
bus bandwidth of collectives whose size the trace records (comm_args): algorithm bandwidth
bytes / duration times the collective's bus factor, both as hta_fast.costs.collectives
counts them (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; others
1). Collectives of 1 MB or more under Thresholds.low_bus_bandwidth_fraction of the
achievable bus bandwidth are called out.
"""

from __future__ import annotations

import numpy as np

from ..._arrow import as_numpy
from ...analysis.overlap import overlap_times
from ...costs.collectives import bus_factor
from ...frame.fields import duration_text
from ...loading.summary import collective_rows, rank_summary
from ...model.whatif.edits import Edits
from ...schema import EventKind, KernelClass
from ...trace import Trace
from ..views.context import RankView
from ..views.estimate import Estimate, Tally, per_step
from ..views.text import Number
from ..views.thresholds import Thresholds
from .rank_imbalance import exposed_per_kernel
from .record import Cause, CauseDoc

ADVICE = (
    "Hide communication behind computation: DDP gradient bucketing (bucket_cap_mb, "
    "gradient_as_bucket_view), FSDP forward/backward prefetch, collectives on their own "
    "stream issued as early as their inputs are ready; send less (bf16 gradients, "
    "gradient accumulation, compression); when bus bandwidth is far below what the "
    "interconnect achieves, check the topology and NCCL settings (NVLink/InfiniBand in use, "
    "NCCL_ALGO/NCCL_PROTO, channel counts)."
)

MIN_BANDWIDTH_BYTES = 1 << 20


def bus_bandwidths(
    trace: Trace, rows: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, bus bandwidth GB/s) of the given communication kernel rows whose size is
    known; both arrays cover only those rows. The sizes are the rank summary's (the
    kernel's collective arguments, else those of the record_param_comms that launched it),
    so the doctor and the cross-rank analyses report the same bytes for a collective."""
    kernels = collective_rows(trace)  # the summary's collectives, in its row order
    if len(kernels) == 0 or len(rows) == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(kernels, kind="stable")
    idx = np.minimum(np.searchsorted(kernels[order], rows), len(kernels) - 1)
    hit = kernels[order][idx] == rows
    src = order[idx[hit]]
    table = rank_summary(trace).collectives
    nbytes = as_numpy(table["bytes"]).astype(np.float64)[src]
    # a missing group size counts as 1 (read as NaN: fill_null's scalar imports pandas)
    sizes = as_numpy(table["group_size"])
    group = (np.where(np.isnan(sizes), 1, sizes) if sizes.dtype.kind == "f" else sizes)[src]
    kinds = np.asarray(table["collective"].to_pylist(), dtype=object)[src]
    factor = np.array([bus_factor(k, int(n)) for k, n in zip(kinds, group)], np.float64)
    d = dur[hit].astype(np.float64)
    ok = (nbytes > 0) & (d > 0)
    return nbytes[ok], nbytes[ok] / d[ok] * factor[ok]


def examine(views: list[RankView], th: Thresholds, waiting: dict[int, np.ndarray]) -> Estimate:
    cost = {}
    tally = Tally()
    comm_time = overlap_time = 0.0
    all_bytes, all_bw = [], []
    for v in views:
        trace, w = v.trace, v.work
        kind = trace.column("events", "kind")[w.rows]
        in_window = w.kclass == KernelClass.COMM
        comm = v.selected & in_window
        exposed_all = exposed_per_kernel(v)
        comm_ns, overlap_ns = overlap_times(trace, window=(v.lo, v.hi))
        rank_comm, rank_overlap = float(comm_ns), float(overlap_ns)
        comm_time += rank_comm
        overlap_time += rank_overlap
        # Collectives running at once (several streams) are exposed once: scale the
        # per-kernel exposure to the union's, as analysis.overlap measures it.
        per_kernel = float(exposed_all[in_window].sum())
        scale = min(1.0, (rank_comm - rank_overlap) / per_kernel) if per_kernel > 0 else 0.0
        exposed = exposed_all[comm] * scale
        step_cost = per_step(v, v.work_step_index[comm], exposed)
        wait = waiting.get(v.rank)
        cost[v.rank] = np.clip(step_cost - (wait if wait is not None else 0), 0, None)
        tally.add(v, w.rows[comm], exposed)
        kern = comm & (kind == EventKind.kernel)
        b, bw = bus_bandwidths(trace, w.rows[kern], (w.ends - w.starts)[kern])
        all_bytes.append(b)
        all_bw.append(bw)
    total_steps = sum(v.n_steps for v in views) or 1
    comm_ns_per_step = comm_time / total_steps
    evidence: dict[str, Number] = {
        "comm_time_ns_per_step": comm_ns_per_step,
        "overlap_pct": 100.0 * overlap_time / comm_time if comm_time else "no communication",
        "exposed_comm_ns_per_step": (comm_time - overlap_time) / total_steps,
    }
    b = np.concatenate(all_bytes) if all_bytes else np.zeros(0)
    bw = np.concatenate(all_bw) if all_bw else np.zeros(0)
    big = b >= MIN_BANDWIDTH_BYTES
    if big.any():
        achievable = th.achievable_bus_bandwidth_gbps or float(np.percentile(bw[big], 90))
        low = big & (bw < th.low_bus_bandwidth_fraction * achievable)
        evidence.update(
            {
                "median_bus_bandwidth_gbps": float(np.median(bw[big])),
                "achievable_bus_bandwidth_gbps": achievable,
                "collectives_far_below_bandwidth": int(np.count_nonzero(low)),
                "collectives_with_size": int(np.count_nonzero(big)),
            }
        )
    pct = evidence["overlap_pct"]
    hidden = f"{pct:.0f}% hidden behind compute" if isinstance(pct, float) else "none"
    title = f"Exposed communication: {duration_text(comm_ns_per_step)} of collectives per step, {hidden}"
    return Estimate(cost, evidence, tally.top(), title, ADVICE)


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means="collective time no computation hides",
    cost=(
        "per communication kernel, its time not covered by compute kernels "
        "(analysis.overlap's complement), less the rank's wait for the last rank to "
        "arrive (charged to rank_imbalance): the data time that no compute hides. "
        "Evidence: overlap %, and the bus bandwidth of collectives whose size the trace "
        "records; those of 1 MB or more under `low_bus_bandwidth_fraction` of the "
        "achievable bus bandwidth are counted"
    ),
    helps=(
        "bucketing and prefetching (DDP, FSDP), earlier collectives on their own stream, "
        "less data, interconnect / NCCL settings"
    ),
    edit="nothing waits for communication: `drop_comm_waits`",
)


CAUSE = Cause(
    key="exposed_communication",
    name="exposed communication",
    thresholds=("min_share", "low_bus_bandwidth_fraction", "achievable_bus_bandwidth_gbps"),
    evidence=(
        "comm_time_ns_per_step",
        "overlap_pct",
        "exposed_comm_ns_per_step",
        "median_bus_bandwidth_gbps",
        "achievable_bus_bandwidth_gbps",
        "collectives_far_below_bandwidth",
        "collectives_with_size",
    ),
    heuristic=lambda ex: examine(ex.views, ex.th, ex.found["rank_imbalance"].cost),
    edit=lambda ex: Edits(drop_comm_waits=True),
    edit_text="nothing waits for communication",
    edit_limits="communication kernels keep their time on their own streams and their share "
    "of the GPU, and a wait for a slower rank is rank_imbalance's",
    needs=("rank_imbalance",),
    owners=("gpu_communication_bound",),
    doc=DOC,
)
