"""Cause one_off_stall: a host event held the GPU idle far longer than its kind usually
takes, once (doctor.views.stalls says which events): a first launch that loads the CUDA module, a
compile, first-call allocations, one blocking copy, ...

Cost per step: the GPU idle time the stalls cover (gap_causes: one_off), in the step where
each happened; no other cause is charged with it. Evidence names the costliest stall: the
call that waited (`stall_event`), the event judged one-off if it encloses that call
(`inside`), its duration, when it began (from the start of the analysed window), and what
events of its name usually take.
"""

from __future__ import annotations

import numpy as np

from ...frame.fields import duration_text
from ...model.whatif.edits import Edits
from ..views.context import RankView, names_of
from ..views.estimate import Estimate, Tally, per_step
from ..views.gap_causes import split_gaps
from ..views.intervals import covered_length
from ..views.stalls import find_stalls
from ..views.text import Number
from ..views.thresholds import Thresholds
from .record import Cause, CauseDoc, Examination

# The part of the idle-gap split charged to it.
GAP_PARTS = ("one_off",)

ADVICE = (
    "This happens once, not every step: a first call that loads GPU modules or compiles "
    "(lazy CUDA module loading, TorchScript fusers, torch.compile, Triton autotuning), "
    "first-call allocations, or one blocking copy or wait. Warm up before profiling (run "
    "a few steps first, torch.profiler.schedule(wait=1, warmup=1, ...)) and judge the "
    "steady-state steps; if it matters at start-up, cache compiled kernels "
    "(TORCHINDUCTOR_CACHE_DIR, CUDA_MODULE_LOADING=EAGER to move the load out of the "
    "first step) or overlap it with data loading."
)


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost: dict[int, np.ndarray] = {}
    tally = Tally()
    best: tuple[float, dict[str, Number]] = (0.0, {})
    stalls_seen = 0
    for v in views:
        split = split_gaps(v, th)
        cost[v.rank] = per_step(v, v.gaps.step_index, split.charged(GAP_PARTS))
        st = find_stalls(v, th)
        if len(st.rows) == 0:
            continue
        g = v.gaps
        hw = g.host_wait
        idle = covered_length(g.starts[hw], g.ends[hw], st.starts, st.ends).astype(np.float64)
        tally.add(v, st.rows, idle)
        stalls_seen += len(st.rows)
        k = int(np.argmax(idle))
        if idle[k] > best[0]:
            inner, outer = names_of(v.trace, np.array([st.inner[k], st.rows[k]]))
            evidence: dict[str, Number] = {
                "stalls": 0,
                "stall_event": inner,
                "inside": outer if st.inner[k] != st.rows[k] else "",
                "stall_ns": int(st.ends[k] - st.starts[k]),
                "gpu_idle_ns": float(idle[k]),
                "started_at_ns": int(st.starts[k] - v.lo),
                "usual_ns": float(st.usual_ns[k]),
                "same_name_events": int(st.count[k]),
                "rank": v.rank,
            }
            best = (float(idle[k]), evidence)
    evidence = best[1] or {"stalls": 0}
    evidence["stalls"] = stalls_seen
    if stalls_seen:
        what = str(evidence["stall_event"])[:80]
        if evidence["inside"]:
            what += f" (in {str(evidence['inside'])[:80]})"
        usual = float(evidence["usual_ns"])  # type: ignore[arg-type]
        than = (
            f", {float(evidence['stall_ns']) / usual:,.0f}x the usual "  # type: ignore[arg-type]
            f"{duration_text(usual)}"
            if usual > 0
            else ", the only event of its kind"
        )
        title = (
            f"One-off stall: {what} held the GPU idle "
            f"{duration_text(float(evidence['gpu_idle_ns']))} once, "  # type: ignore[arg-type]
            f"{duration_text(float(evidence['started_at_ns']))} into the window{than}"  # type: ignore[arg-type]
        )
    else:
        title = "One-off stall: none (no host event held the GPU idle far longer than usual)"
    return Estimate(cost, evidence, tally.top(), title, ADVICE)


def _edit(ex: Examination) -> Edits | None:
    """The stall events cost nothing (with what runs under them on their thread)."""
    change = {}
    for v in ex.views:
        rows = find_stalls(v, ex.th).rows
        if len(rows):
            change[v.rank] = (rows, np.zeros(len(rows)))
    return Edits(op_change=change) if change else None


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means=(
        "a host event held the GPU idle far longer than its kind usually takes, once: a "
        "first launch that loads the CUDA module, a compile or autotune, first-call "
        "allocations, one blocking copy"
    ),
    cost=(
        "per host-wait gap of `one_off_min_us` or more, the innermost event on a "
        "launching thread covering half of it is judged, then its enclosing events while "
        "no verdict is reached (`hta_fast.model.graph.one_off_calls` judges every host "
        "event, the one rule the critical path's `one_off_stall` and the launch edit "
        "read too): *one-off* when it lasts `one_off_ratio` times the median of the "
        "other events of its name (and `one_off_min_us`) and at most "
        "`one_off_max_repeats` events of that name (nested ones counted once) are such "
        "outliers, or when it is the only event of its name and the name says one-time "
        "work (compile, autotune, module/cubin load, lazy init); *recurring* (the gap "
        "stays with the causes below) when its name has other events and it is not one; "
        "its cost is the GPU idle time it covers, in the step where it happened. "
        "Evidence: `stall_event` (the call that waited), `inside` (the event judged, if "
        "it encloses that call), `stall_ns`, `gpu_idle_ns`, `started_at_ns` (from the "
        "window's start), `usual_ns`, `same_name_events`, `stalls`"
    ),
    helps=(
        "warm up before profiling and judge steady-state steps; cache compiled kernels; "
        "move a lazy module load out of the first step"
    ),
    edit=(
        "the stall events take no time (`op_change`, factor 0, with what runs under "
        "them; a launch's wait inside the call goes with it)"
    ),
)


CAUSE = Cause(
    key="one_off_stall",
    name="one-off stall",
    thresholds=("min_share", "one_off_min_us", "one_off_ratio", "one_off_max_repeats"),
    evidence=(
        "stalls",
        "stall_event",
        "inside",
        "stall_ns",
        "gpu_idle_ns",
        "started_at_ns",
        "usual_ns",
        "same_name_events",
        "rank",
    ),
    heuristic=lambda ex: examine(ex.views, ex.th),
    edit=_edit,
    edit_text="the stall events take no time",
    edit_limits="it keeps what the host did around them, and the model replays the "
    "analysed steps only",
    owners=("one_off_stall",),
    gap_parts=GAP_PARTS,
    doc=DOC,
)
