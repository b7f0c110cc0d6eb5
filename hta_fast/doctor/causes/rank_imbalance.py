"""Cause rank_imbalance, imbalance between ranks: ranks wait in collectives for the rank that
arrives last.

A collective ends on no rank before the last rank has arrived: on each rank, a collective's
time is its data time (its shortest duration over the ranks, the last arriver's, which waits
for nobody) plus the wait for the last rank to arrive (its duration less that:
analysis.collectives' per_rank `wait`, which no clock skew between ranks moves). Cost per
step: each rank's wait in its collectives, as far as no compute kernel covers the
collective (exposed); exposed_communication counts the rest, the data time. The wait is
charged to the rank the others waited for (`waited_for`): the rank charged most, when it
holds at least half of all the waits (twice a fair share on more than 4 ranks), is named,
with the recorded event on its host that covered its lateness (from the first rank's arrival
to its own, on its clock).

Work time, apart: each rank's non-communication GPU work per analysed step. The slowest rank
by work is named only when it stands out (analysis.stragglers.high_outliers: more than 3
robust standard deviations, 1.4826 * MAD, and more than 5 % above their median): a rank late
for its GPU work is slow there too; one late for its host is not.

Evidence: the rank waited for, its share of the waits and how often it was last, the others'
wait for it per step, its host's event; the slowest rank by work and the other slow ones, how
much more work per step it has than the median rank, the straggler ranks (analysis.stragglers,
rule "robust": late to start the collectives), the spread of the mean step time and of the
work time across ranks ((max - min) / mean).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import numpy as np

from ... import ops, sync_calls
from ...analysis.collectives import KernelWaits, kernel_waits
from ...analysis.stragglers import high_outliers, stragglers
from ...frame import derived
from ...frame.fields import duration_text
from ...model.whatif.edits import Edits
from ...schema import GPU_WORK_KINDS, EventKind, KernelClass
from ...traceset import TraceSet
from ..views.context import RankView, names_of
from ..views.estimate import Estimate, per_step
from ..views.gap_causes import PROFILER_STEP
from ..views.intervals import covered_length
from ..views.text import Number
from ..views.thresholds import Thresholds
from .record import Cause, CauseDoc, Examination

# The rank the others wait for is named when it holds this share of all the waits (or twice
# a fair share, 2 / ranks, when that is less).
WAITED_FOR_SHARE = 0.5

ADVICE = (
    "Balance the work across ranks: even data shards and sequence lengths (length "
    "bucketing, token-based batching), even model/embedding sharding, identical hardware "
    "and clocks; then look at the slowest rank on its own (its input pipeline, host load, "
    "throttling) - the other causes of this report, for that rank, usually say why."
)


def per_step_times(v: RankView) -> tuple[np.ndarray, np.ndarray]:
    """(work time, communication time) of each analysed step of a rank, ns."""
    w = v.work
    comm = w.kclass == KernelClass.COMM
    out = []
    for mask in (v.selected & ~comm, v.selected & comm):
        g = ops.grouped_total(v.work_step_index[mask], w.starts[mask], w.ends[mask])
        t = np.zeros(v.n_steps, np.float64)
        t[np.asarray(g[0], np.int64)] = g[1]
        out.append(t)
    return out[0], out[1]


def exposed_per_kernel(v: RankView) -> np.ndarray:
    """Per GPU work event of the view: its time not covered by compute kernels (ns)."""
    w = v.work
    return exposed_between(v, w.starts, w.ends)


def exposed_between(v: RankView, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per interval: its time not covered by the view's compute kernels (ns)."""
    w = v.work
    comp = w.kclass == KernelClass.COMP
    comp_u = ops.union(w.starts[comp], w.ends[comp])
    return (ends - starts) - covered_length(comp_u.starts, comp_u.ends, starts, ends)


class Waits(NamedTuple):
    """One rank's communication kernels in the analysed steps, as the collectives matched
    across ranks see them: event rows, step index, the exposed wait for the last rank,
    the rank waited for (-1: none), and the window of its own lateness (its clock) where it
    was the last."""

    rows: np.ndarray
    step_index: np.ndarray
    wait: np.ndarray
    waited_for: np.ndarray
    late_from: np.ndarray
    late_to: np.ndarray


def rank_waits(v: RankView, waits: KernelWaits) -> Waits:
    """The view's analysed collectives, with their waits (analysis.collectives.kernel_waits):
    a collective waits for the last rank first, then moves data, so its wait is its first
    `wait` ns, counted where no compute covers them (as model.path.owners counts
    cross_rank)."""
    w, trace = v.work, v.trace
    comm = v.selected & (w.kclass == KernelClass.COMM)
    order = np.argsort(waits.rows)
    pos = np.minimum(np.searchsorted(waits.rows[order], w.rows), max(len(order) - 1, 0))
    known = (waits.rows[order][pos] == w.rows) if len(order) else np.zeros(len(w.rows), bool)
    take = comm & known
    at = order[pos[take]]
    start = trace.column("events", "ts")[w.rows[take]]
    waited_for = waits.waited_for[at]
    late = waited_for == v.rank
    return Waits(
        w.rows[take],
        v.work_step_index[take],
        # a collective waits for the last rank first, then moves data (model.path.owners)
        exposed_between(
            v, w.starts[take], np.minimum(w.starts[take] + waits.wait[at], w.ends[take])
        ),
        waited_for,
        np.where(late, start - waits.arrival_delay[at], 0),
        np.where(late, start, 0),
    )


def examine(
    views: list[RankView],
    traces: TraceSet,
    steps: Optional[Sequence[int]],
    min_share: float = Thresholds().min_share,
) -> Estimate:
    cost = {v.rank: np.zeros(v.n_steps) for v in views}
    evidence: dict[str, Number] = {}
    notes: list[str] = []
    if len(views) < 2:
        if views:
            notes.append("one rank: no imbalance between ranks to measure")
        return Estimate(cost, evidence, [], "Imbalance between ranks: one rank only", ADVICE, notes)
    matched = kernel_waits(traces, ranks=[v.rank for v in views], steps=steps)
    none = KernelWaits(*(np.zeros(0, np.int64),) * 4)
    waits = {v.rank: rank_waits(v, matched.get(v.rank, none)) for v in views}
    charged: dict[int, float] = {}
    for v in views:
        wt = waits[v.rank]
        cost[v.rank] = per_step(v, wt.step_index, wt.wait)
        other = (wt.waited_for >= 0) & (wt.waited_for != v.rank)
        for r, ns in zip(wt.waited_for[other].tolist(), wt.wait[other].tolist()):
            charged[r] = charged.get(r, 0.0) + ns
    top = [
        {"name": f"rank {r}", "count": 1, "total_ns": 0, "cost_ns": int(round(ns))}
        for r, ns in sorted(charged.items(), key=lambda kv: (-kv[1], kv[0]))
        if ns > 0
    ]
    total_steps = sum(v.n_steps for v in views)
    by_rank = {v.rank: v for v in views}
    others = max(total_steps - min((v.n_steps for v in views), default=0), 1)
    step_time = float(np.mean([v.step_time for v in views]))
    named = _waited_for(charged, len(views), min_share * step_time * others)
    evidence["waited_for_rank"] = named if named is not None else "none stands out"
    if named is not None:
        wt = waits[named]
        evidence["waited_for_share"] = charged[named] / sum(charged.values())
        evidence["times_last"] = int(np.count_nonzero(wt.waited_for == named))
        # per step of each other rank, on average
        evidence["others_wait_for_it_ns_per_step"] = charged[named] / max(
            total_steps - by_rank[named].n_steps, 1
        )
        evidence["its_host_meanwhile"] = _host_meanwhile(by_rank[named], wt) or "nothing recorded"
    evidence.update(_work_evidence(views))
    evidence["wait_in_collectives_ns_per_step"] = float(
        np.mean([cost[v.rank].sum() / v.n_steps for v in views])
    )
    try:
        st = stragglers(traces, rule="robust", ranks=[v.rank for v in views], steps=steps)
        evidence["stragglers"] = _ranks_text(st.params.get("stragglers") or [])
        notes.extend(f"stragglers: {n}" for n in st.notes)
    except ValueError as e:  # e.g. steps the analysis cannot use
        evidence["stragglers"] = "unknown"
        notes.append(f"stragglers: {e}")
    title = _title(evidence, named)
    return Estimate(cost, evidence, top[:5], title, ADVICE, notes)


def _title(evidence: dict[str, Number], named: Optional[int]) -> str:
    """The finding's title from its evidence: the rank waited for and what made it late,
    else the slowest rank by work, else that none stands out; the spreads."""

    def ns(key: str) -> float:
        value = evidence.get(key)
        return float(value) if isinstance(value, (int, float)) else 0.0

    spread = (
        f"work time varies {100 * ns('work_time_spread'):.0f}% across ranks, step "
        f"time {100 * ns('step_time_spread'):.0f}%"
    )
    slowest = evidence["slowest_rank"]
    extra = (
        f"rank {slowest} is slowest, "
        f"{duration_text(ns('slowest_extra_work_ns_per_step'))} more GPU work per "
        "step than the median rank"
        if isinstance(slowest, int)
        else ""
    )
    if named is not None:
        host = evidence["its_host_meanwhile"]
        why = extra if slowest == named else f"its host meanwhile in {host}"
        return (
            f"Imbalance between ranks: the others wait "
            f"{duration_text(ns('others_wait_for_it_ns_per_step'))} per step in "
            f"collectives for rank {named}, last to arrive at {evidence['times_last']}; "
            f"{why}; {spread}"
        )
    if extra:
        return f"Imbalance between ranks: {extra}; {spread}"
    return f"Imbalance between ranks: no rank stands out; {spread}"


def _waited_for(charged: dict[int, float], n_ranks: int, least: float) -> Optional[int]:
    """The rank charged the most waits, when it holds WAITED_FOR_SHARE of them (twice a fair
    share on more than 4 ranks) and at least `least` ns (the others' wait for it reaching
    min_share of their steps: among alike ranks one is always last, by noise); None
    otherwise."""
    total = sum(charged.values())
    if total <= 0:
        return None
    rank, ns = min(charged.items(), key=lambda kv: (-kv[1], kv[0]))
    fair = ns >= min(WAITED_FOR_SHARE, 2.0 / n_ranks) * total
    return rank if fair and ns >= least else None


class LateHosts(NamedTuple):
    """Per collective the rank was last at and a host event covered (_late_hosts): the
    event's row, the lateness it covers (ns), and whether the host sat in a call waiting for
    its own GPU meanwhile (the rank was late for its GPU, not its host)."""

    rows: np.ndarray
    covered: np.ndarray
    on_gpu: np.ndarray


def _late_hosts(v: RankView, wt: Waits) -> LateHosts:
    """Per collective the rank was last at: the innermost recorded host event (cpu_op or
    user annotation, not a ProfilerStep) covering half or more of its lateness, how much of
    it (ns), and whether a call inside it that held the host until GPU work was done
    (sync_calls.host_wait_rows) covered half or more of the lateness; collectives without
    such an event are left out."""
    late = wt.late_to > wt.late_from
    if not late.any():
        none = np.zeros(0, np.int64)
        return LateHosts(none, none, np.zeros(0, bool))
    trace = v.trace
    kind = trace.column("events", "kind")
    rows = np.flatnonzero(np.isin(kind, [EventKind.cpu_op, EventKind.user_annotation]))
    names = trace.column("events", "name")[rows]
    steps = derived.name_flags(trace, PROFILER_STEP)
    rows = rows[~steps[np.maximum(names, 0)] | (names < 0)]
    start = trace.column("events", "ts")[rows]
    end = start + np.maximum(trace.column("events", "dur")[rows], 0)
    waits = sync_calls.host_wait_rows(trace)
    wait_start = trace.column("events", "ts")[waits]
    wait_end = wait_start + np.maximum(trace.column("events", "dur")[waits], 0)
    held, covered, on_gpu = [], [], []
    for lo, hi in zip(wt.late_from[late].tolist(), wt.late_to[late].tolist()):
        over = np.minimum(end, hi) - np.maximum(start, lo)
        covering = np.flatnonzero(over >= 0.5 * (hi - lo))
        if not len(covering):
            continue
        k = covering[np.argmin(end[covering] - start[covering])]
        held.append(int(rows[k]))
        covered.append(int(over[k]))
        inside = (wait_start >= start[k]) & (wait_end <= end[k])
        waited = np.minimum(wait_end, hi) - np.maximum(wait_start, lo)
        on_gpu.append(bool((inside & (waited >= 0.5 * (hi - lo))).any()))
    return LateHosts(
        np.asarray(held, np.int64), np.asarray(covered, np.int64), np.asarray(on_gpu, bool)
    )


def _host_meanwhile(v: RankView, wt: Waits) -> Optional[str]:
    """What the rank's host was doing while the others waited: of _late_hosts, the name
    holding the most of its lateness."""
    late = _late_hosts(v, wt)
    if not len(late.rows):
        return None
    uniq, inv = np.unique(late.rows, return_inverse=True)
    top = int(np.argmax(np.bincount(inv.reshape(-1), weights=late.covered)))
    name = names_of(v.trace, uniq[top : top + 1])[0]
    waiting = late.on_gpu[inv.reshape(-1) == top].all()
    return f"waiting for its own GPU in {name}" if waiting else name


def _work_evidence(views: list[RankView]) -> dict[str, Number]:
    """The slowest rank by GPU work when it stands out, and the spreads across ranks."""
    evidence: dict[str, Number] = {}
    step_times = np.array([v.step_time for v in views])
    works = np.array([per_step_times(v)[0].mean() for v in views])
    ranks = np.array([v.rank for v in views])
    slow = high_outliers(works)
    slow_order = np.flatnonzero(slow)[np.lexsort((ranks[slow], -works[slow]))]
    evidence["slowest_rank"] = int(ranks[slow_order[0]]) if len(slow_order) else "none stands out"
    evidence["slow_ranks"] = _ranks_text(ranks[slow_order].tolist())
    if len(slow_order):
        evidence["slowest_extra_work_ns_per_step"] = float(
            works[slow_order[0]] - np.median(works[~slow])
        )
    evidence["step_time_spread"] = (
        float((step_times.max() - step_times.min()) / step_times.mean())
        if step_times.mean() > 0
        else 0.0
    )
    evidence["work_time_spread"] = (
        float((works.max() - works.min()) / works.mean()) if works.mean() > 0 else 0.0
    )
    return evidence


def _ranks_text(ranks: Sequence[int]) -> str:
    """Ranks as evidence: "3, 17" (every one: text output shortens long lists), or "none found"."""
    return ", ".join(str(int(r)) for r in ranks) if len(ranks) else "none found"


def _edit(ex: Examination) -> Optional[Edits]:
    """Ranks whose compute per step is above the median rank's, scaled to the median; and
    the rank the others wait for (named in the evidence) on time: each host event it was
    late in (_late_hosts) shorter by the lateness it covers, unless the host sat waiting for
    its own GPU there."""
    views = ex.views
    if len(views) < 2:
        return None
    change = _compute_to_median(views)
    named = ex.found["rank_imbalance"].evidence.get("waited_for_rank")
    host: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if isinstance(named, int):
        v = next(v for v in views if v.rank == named)
        matched = kernel_waits(ex.traces, ranks=[x.rank for x in views], steps=ex.steps)
        none = KernelWaits(*(np.zeros(0, np.int64),) * 4)
        found = _late_hosts(v, rank_waits(v, matched.get(named, none)))
        # a host waiting for its own GPU is on time once its GPU is (the compute part)
        rows, over = found.rows[~found.on_gpu], found.covered[~found.on_gpu]
        if len(rows):
            uniq, inv = np.unique(rows, return_inverse=True)
            late = np.bincount(inv.reshape(-1), weights=over)
            dur = np.maximum(v.trace.column("events", "dur")[uniq], 1).astype(np.float64)
            host[named] = (uniq, np.maximum(1.0 - late / dur, 0.0))
    if not change and not host:
        return None
    return Edits(duration_change=change or None, op_change=host or None)


def _compute_to_median(views: list[RankView]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank whose compute per step is above the median rank's: its compute kernels'
    rows and what scaling them to the median removes from each (ns, negative)."""
    work = {v.rank: per_step_times(v)[0].mean() for v in views}
    median = float(np.median(list(work.values())))
    change = {}
    for v in views:
        if work[v.rank] <= median or work[v.rank] <= 0:
            continue
        trace = v.trace
        kind = trace.column("events", "kind")
        rows = np.flatnonzero(
            np.isin(kind, GPU_WORK_KINDS)
            & (trace.column("events", "kernel_class") != KernelClass.COMM)
        )
        dur = np.maximum(trace.column("events", "dur")[rows], 0).astype(np.float64)
        change[v.rank] = (rows, dur * (median / work[v.rank] - 1.0))
    return change


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means="ranks wait in collectives for the rank that arrives last",
    cost=(
        "per communication kernel: its duration less the collective's data time (its "
        "shortest duration over the ranks, the last arriver's: analysis.collectives' "
        "per_rank `wait`, which no clock skew moves), counted as the kernel's first "
        "`wait` ns where no compute kernel covers them (a collective waits for the last "
        "rank first, then moves data: model.path.owners counts `cross_rank` the same "
        "way); charged to the rank waited for (per_rank `waited_for`). Evidence: "
        "`waited_for_rank` (the rank charged most, when it holds half the waits or more, "
        'or twice a fair share on more than 4 ranks; else "none stands out"), '
        "`waited_for_share`, `times_last`, `others_wait_for_it_ns_per_step` (the other "
        "ranks' mean wait for it a step), `its_host_meanwhile` (the innermost recorded "
        "host event covering half its lateness or more, the name holding most of it; "
        '"waiting for its own GPU in NAME" where a call inside it that held the host '
        "until GPU work was done covered half the lateness: the rank was late for its "
        "GPU, and the edit leaves that event to the compute part); by GPU work apart: "
        "`slowest_rank` and `slow_ranks` (the ranks whose work time stands out, below), "
        "`slowest_extra_work_ns_per_step`; `stragglers` (analysis.stragglers, rule "
        '"robust"), spread of step and work time across ranks'
    ),
    helps=(
        "even data shards and sequence lengths, even sharding, then the late rank's own "
        "causes (its host event says where to look)"
    ),
    edit=(
        "every rank's compute as fast as the median rank's: the non-communication GPU "
        "work of each rank above the median scaled to it (`duration_change`); and the "
        "rank the others wait for (`waited_for_rank`) on time: each host event it was "
        "late in (the innermost covering half its lateness or more) shorter by the "
        "lateness it covers (`op_change`); the ranks replayed together. On a 4-rank job "
        "whose rank 3 spends 4 ms in `host_preprocess` before its all-reduce "
        "(tests/support/wait_kinds.py) the others wait 955 µs a step and the edit saves 940 µs a "
        "step; scaling compute alone saved nothing"
    ),
)


CAUSE = Cause(
    key="rank_imbalance",
    name="imbalance between ranks",
    thresholds=("min_share",),
    evidence=(
        "waited_for_rank",
        "waited_for_share",
        "times_last",
        "others_wait_for_it_ns_per_step",
        "its_host_meanwhile",
        "slowest_rank",
        "slow_ranks",
        "slowest_extra_work_ns_per_step",
        "step_time_spread",
        "work_time_spread",
        "wait_in_collectives_ns_per_step",
        "stragglers",
    ),
    heuristic=lambda ex: examine(ex.views, ex.traces, ex.steps, ex.th.min_share),
    edit=_edit,
    edit_text="every rank as fast as the median rank, and the rank the others wait for on "
    "time (its host events over its lateness shortened by it)",
    edit_limits="it scales the slow ranks' compute kernels and the waited-for rank's host "
    "events over its lateness; their input and communication stay, and a lateness no "
    "recorded host event covers stays",
    owners=("cross_rank",),
    name_patterns=(PROFILER_STEP,),
    rank_lists=("slow_ranks", "stragglers"),
    stands_out="slowest_rank",
    doc=DOC,
)
