"""Uneven ranks for the trace generator: stragglers, slow links and per-step jitter.

Every rank of a generated set replays the same base events. A `Variation` makes some ranks
slower, and this module works out, for every rank and repetition, how far each event moves and
how much longer it lasts. It knows arrays of whole microseconds, never JSON: hta_fast.synth
hands it the base's times and event kinds and writes the numbers it returns.

The model, per rank:

* Compute. Inside the union of the base's GPU compute kernels the GPU's time runs `factor`
  times slower, where the factor is the rank's straggler factor times its jitter draw for the
  step. Outside that union time runs at the base's rate. All of the rank's GPU-side events
  (kernels, copies, fills, their annotations and flow ends) are placed through this one
  monotone map, so nothing that did not overlap starts to and nesting is kept. A compute
  kernel lies inside the union, so it lasts exactly `factor` times as long (to the
  microsecond).
* Collectives. A collective (an NCCL kernel) starts where the map puts it and, left alone,
  would last its base time times the rank's slow-link factor. All ranks' copies of it end
  together, when the last of them would: the others' kernels are longer by the time they
  wait. Right after a collective's end (at the first moment no other GPU work runs on the
  rank) the rank's later GPU work is held back until that common end (its streams wait for
  the collective's), so ranks do not drift apart.
* Catching up. A GPU that fell behind its host finds its next work queued already: each idle
  gap of the base's GPU (no work on any stream) shrinks, to MIN_GAP_US, by as much as the
  GPU is behind the host (the GPU never runs ahead of where the host launched its work) and
  only after the gap's last wait for a collective. So a slower GPU on a launch-bound program
  costs less than its extra compute, as on real hardware.
* The host runs at the base's pace: a slower GPU or a wait in a collective does not slow the
  operators it queues. It waits only where it blocks on the GPU, as real hosts do: a
  synchronize, a synchronous copy, a copy to or from pageable memory that returned once
  its copy was done (hta_fast.sync_calls). Such a call returns when the GPU, moved by the
  map, reaches where it returned in the base, so it lasts longer by however much the GPU
  fell behind since the host's last wait; everything the host does after it moves by as
  much. A launch stays before its kernel (the GPU's shift is never less than the host's).
  The step-end read of the loss (a copy of it to the host) is where the other ranks' hosts
  wait for the collectives that waited for a straggler.

The waits are jumps in the maps: on the GPU at points where no compute, copy or fill runs on
the rank (catching up, at the end of an idle gap), on the host at the end of a blocking call,
so only the events spanning them (the blocking call and what holds it, and collectives, whose
ends are set directly) change length. The map is one per rank's GPU, not per stream: work on
a stream that was idle moves with the rest of the GPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from ..schema import KernelClass

# A repetition is simulated for all ranks at once; these are the kinds of step in it. At one
# time: a host wait reads the GPU's shift before the GPU catches up or waits there (an end at
# a jump is not moved by it), and a catch-up and a collective's sync come before a start
# that sees them.
_HOST, _CATCH_UP, _SYNC, _START = 0, 1, 2, 3
# The shortest idle gap between two GPU events once the GPU has work queued (µs).
MIN_GAP_US = 2


@dataclass(frozen=True)
class Variation:
    """How ranks differ. Factors multiply durations: 1.5 means 50% slower.

    stragglers: rank -> factor on its GPU compute kernels (and the time around them).
    slow_links: rank -> factor on its collective (NCCL) kernels.
    jitter_pct: each (rank, step) draws a compute factor uniformly from
        [1 - jitter_pct/100, 1 + jitter_pct/100], deterministic for `seed`.
    """

    stragglers: Mapping[int, float] = field(default_factory=dict)
    slow_links: Mapping[int, float] = field(default_factory=dict)
    jitter_pct: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        for what, table in (("straggler", self.stragglers), ("slow-link", self.slow_links)):
            for rank, factor in table.items():
                if rank < 0 or not factor > 0:
                    raise ValueError(f"{what} {rank}:{factor}: need a rank >= 0 and factor > 0")
        if not 0 <= self.jitter_pct < 100:
            raise ValueError(f"jitter {self.jitter_pct}%: need 0 <= PCT < 100")

    @property
    def active(self) -> bool:
        factors = list(self.stragglers.values()) + list(self.slow_links.values())
        return self.jitter_pct > 0 or any(f != 1 for f in factors)

    def compute_factors(self, ranks: int, steps: int) -> np.ndarray:
        """(ranks, steps) compute factors: straggler factor times the jitter draw."""
        out = np.ones((ranks, steps))
        if self.jitter_pct > 0:
            p = self.jitter_pct / 100
            for r in range(ranks):
                # One stream per rank: a rank's draws do not depend on how many ranks there are.
                rng = np.random.default_rng([self.seed, r])
                out[r] = rng.uniform(1 - p, 1 + p, steps)
        for rank, factor in self.stragglers.items():
            if rank < ranks:
                out[rank] *= factor
        return out

    def link_factors(self, ranks: int) -> np.ndarray:
        out = np.ones(ranks)
        for rank, factor in self.slow_links.items():
            if rank < ranks:
                out[rank] = factor
        return out


def parse_rank_factor(text: str) -> tuple[int, float]:
    """'RANK:FACTOR' as on the command line."""
    rank, sep, factor = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(rank), float(factor)
    except ValueError:
        raise ValueError(f"{text!r}: expected RANK:FACTOR, e.g. 2:1.5") from None


def kernel_classes(names: list[str]) -> dict[str, KernelClass]:
    """The loader's class (compute, collective, ...) of each kernel name: a tiny trace of one
    kernel per name is read by the core, which owns the rules."""
    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 0, "ts": i, "dur": 0}
        for i, n in enumerate(names)
    ]
    loaded = _core.load_bytes(json.dumps({"traceEvents": events}).encode())
    table = loaded.tables["events"]
    # Times are in ns after loading; event i was written at i µs.
    order = table["ts"] // 1000
    return {names[int(i)]: KernelClass(int(c)) for i, c in zip(order, table["kernel_class"])}


@dataclass
class BaseTimes:
    """One repetition of the base, in whole microseconds. Per event: start, end, whether it is
    GPU work (kernel, copy, fill) and on which stream (-1 otherwise), whether it is a compute
    or a collective kernel, for a flow endpoint the GPU event it sits on (-1 if none), whether
    it lies on a GPU's timeline and whether it is a host call that waited for the GPU."""

    start: np.ndarray
    end: np.ndarray
    gpu_stream: np.ndarray
    compute: np.ndarray
    collective: np.ndarray
    flow_on: np.ndarray
    step_starts: np.ndarray  # ProfilerStep starts, sorted
    gpu_side: np.ndarray  # on a GPU's timeline (the GPU's map moves it), else the host's
    host_wait: np.ndarray  # a runtime call that held the host until GPU work was done


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint [a, b) pairs (touching ones joined)."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return s[first], e[last]


class Structure:
    """What the base's times say once, for any rank: the compute union, the step segments
    each moment belongs to, where collectives sync and where the host waits for the GPU."""

    def __init__(self, times: BaseTimes, period: int) -> None:
        self.t = times
        origin = int(times.start.min()) if len(times.start) else 0
        self.origin, self.period = origin, period
        comp = times.compute
        self.ua, self.ub = _merge(times.start[comp], times.end[comp])
        cum = np.r_[0, np.cumsum(self.ub - self.ua)]
        self._cum = cum
        # Segment k runs from step k's start to step k+1's start; the first starts at the
        # repetition's origin and the last ends at the next repetition's.
        seg = np.r_[origin, times.step_starts[1:]] if len(times.step_starts) else np.r_[origin]
        self.seg_start = seg.astype(np.int64)
        self.n_steps = len(self.seg_start)
        seg_end = np.r_[self.seg_start[1:], origin + period]
        self.seg_compute = self.measure(seg_end) - self.measure(self.seg_start)
        # Moments with no compute, copy or fill running: where a rank can wait.
        other = (times.gpu_stream >= 0) & ~times.collective
        self.ga, self.gb = _merge(times.start[other], times.end[other])
        order = np.flatnonzero(times.collective)
        self.comm = order[np.argsort(times.start[order], kind="stable")]
        # The events of each stream that carries collectives, and the flow endpoints on GPU
        # work: what has to follow a collective's new place.
        self.comm_streams = [
            np.flatnonzero(times.gpu_stream == s) for s in np.unique(times.gpu_stream[self.comm])
        ]
        self.flows = np.flatnonzero(times.flow_on >= 0)
        self._actions()

    def measure(self, t: np.ndarray | np.int64) -> np.ndarray:
        """Compute-union time before each t."""
        t = np.asarray(t)
        i = np.searchsorted(self.ua, t, "right") - 1
        inside = np.where(i >= 0, np.minimum(t, self.ub[np.maximum(i, 0)]), 0)
        return np.where(i >= 0, self._cum[np.maximum(i, 0)] + inside - self.ua[np.maximum(i, 0)], 0)

    def segment(self, t: np.ndarray | np.int64) -> np.ndarray:
        return np.maximum(np.searchsorted(self.seg_start, t, "right") - 1, 0)

    def _free_after(self, t: int) -> int:
        i = int(np.searchsorted(self.ga, t, "left")) - 1
        return int(self.gb[i]) if i >= 0 and t < self.gb[i] else t

    def _actions(self) -> None:
        t = self.t
        acts = [(int(t.start[i]), _START, int(i)) for i in self.comm]
        acts += [(self._free_after(int(t.end[i])), _SYNC, int(i)) for i in self.comm]
        self.wait_ends = np.unique(t.end[t.host_wait])
        acts += [(int(e), _HOST, -1) for e in self.wait_ends]
        # The GPU's idle gaps (no work on any stream) that a late GPU can shorten.
        busy_a, busy_b = _merge(t.start[t.gpu_stream >= 0], t.end[t.gpu_stream >= 0])
        keep = busy_a[1:] - busy_b[:-1] > MIN_GAP_US
        self.gap_start, self.gap_end = busy_b[:-1][keep], busy_a[1:][keep]
        acts += [(int(b), _CATCH_UP, g) for g, b in enumerate(self.gap_end.tolist())]
        self.actions = sorted(acts)

    def compute_shift(self, t: np.ndarray | np.int64, factors: np.ndarray) -> np.ndarray:
        """Extra time the compute stretch adds before times t (1-D), for one rank's step
        factors (1-D) or all ranks' (2-D: ranks x steps; t then a scalar)."""
        extra = (factors - 1) * self.seg_compute
        before = np.cumsum(extra, axis=-1) - extra  # whole segments before each one
        k = self.segment(t)
        into = self.measure(t) - self.measure(self.seg_start[k])
        return before[..., k] + (factors[..., k] - 1) * into


@dataclass
class RepSchedule:
    """One repetition for every rank: the GPU's shift it starts with, the GPU's waits (jump
    points, common, and per-rank amounts), each collective's start and end, and the host's
    shift: where it starts and after each of the host's waits (Structure.wait_ends)."""

    carry: np.ndarray  # (ranks,)
    jump_at: np.ndarray  # (jumps,)
    jumps: np.ndarray  # (ranks, jumps)
    comm_start: np.ndarray  # (ranks, collectives), absolute in base time
    comm_end: np.ndarray  # (collectives,) common to all ranks
    factors: np.ndarray  # (ranks, steps)
    end_shift: np.ndarray  # (ranks,) the GPU's carry of the next repetition
    host_carry: np.ndarray  # (ranks,)
    host_shift: np.ndarray  # (ranks, host waits): the host's shift from each wait's end on
    end_host: np.ndarray  # (ranks,) the host's carry of the next repetition
    caught: np.ndarray  # (ranks, gaps) float32: the GPU's catch-up by each gap's end, summed


def schedule(st: Structure, var: Variation, ranks: int, reps: int) -> list[RepSchedule]:
    """Simulate the repetitions of all ranks together (arrays over ranks, loops over the few
    collectives and steps of a repetition)."""
    all_factors = var.compute_factors(ranks, reps * st.n_steps)
    link = var.link_factors(ranks)
    carry = np.zeros(ranks)
    host_carry = np.zeros(ranks)
    # When each collective stream is next free, in base time from the first repetition: a
    # collective cannot start before the one ahead of it on its stream has ended everywhere.
    stream_free: dict[int, int] = {}
    out = []
    for rep in range(reps):
        factors = all_factors[:, rep * st.n_steps : (rep + 1) * st.n_steps]
        out.append(_one_rep(st, factors, link, carry, host_carry, stream_free, rep * st.period))
        carry, host_carry = out[-1].end_shift, out[-1].end_host
    return out


def _one_rep(
    st: Structure,
    factors: np.ndarray,
    link: np.ndarray,
    carry: np.ndarray,
    host_carry: np.ndarray,
    stream_free: dict[int, int],
    rep_start: int,
) -> RepSchedule:
    t = st.t
    ranks = len(carry)
    col = {int(i): n for n, i in enumerate(st.comm)}
    waited = np.zeros(ranks)
    jump_at, jumps = [], []
    starts = np.zeros((ranks, len(st.comm)), np.int64)
    ends = np.zeros(len(st.comm), np.int64)
    host = [host_carry]
    caught = np.zeros(ranks)
    caught_by_gap = np.zeros((ranks, len(st.gap_end)), np.float32)
    last_jump = np.full(ranks, np.iinfo(np.int64).min)
    for at, kind, i in st.actions:
        gpu = carry + st.compute_shift(np.int64(at), factors) + waited - caught
        if kind == _HOST:
            # The call returns when the GPU reaches where it returned in the base; the host
            # never moves back.
            host.append(np.maximum(host[-1], gpu))
            continue
        if kind == _CATCH_UP:
            # A late GPU finds the work after an idle gap queued already: the gap shrinks
            # (to MIN_GAP_US), no further than where the host launched that work (its shift)
            # and only after the last wait for a collective in the gap.
            since = np.maximum(st.gap_start[i], last_jump)
            room = np.maximum(at - since - MIN_GAP_US, 0)
            caught = caught + np.clip(gpu - host[-1], 0, room)
            caught_by_gap[:, i] = caught
            continue
        if kind == _START:
            n = col[i]
            shift = gpu
            begin = at + np.rint(shift).astype(np.int64)
            stream = int(t.gpu_stream[i])
            if stream in stream_free:
                begin = np.maximum(begin, stream_free[stream] - rep_start)
            natural = begin + np.rint(link * (t.end[i] - t.start[i])).astype(np.int64)
            ends[n] = natural.max()
            starts[:, n] = begin
            stream_free[stream] = int(ends[n]) + rep_start
            continue
        need = ends[col[i]] - t.end[i]
        jump = np.maximum(need - gpu, 0)
        if jump.any():
            jump_at.append(at)
            jumps.append(jump)
            waited = waited + jump
            last_jump = np.where(jump > 0, at, last_jump)
    end_shift = carry + st.compute_shift(np.int64(st.origin + st.period), factors) + waited - caught
    return RepSchedule(
        carry,
        np.array(jump_at, np.int64),
        np.array(jumps).T.reshape(ranks, len(jump_at)),
        starts,
        ends,
        factors,
        end_shift,
        host_carry,
        np.array(host[1:]).T.reshape(ranks, len(host) - 1),
        host[-1],
        caught_by_gap,
    )


def event_deltas(
    st: Structure, rs: RepSchedule, rank: int, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """How far each base event's start moves and how much its duration grows (whole µs), for
    one rank in one repetition. With `rows` (sorted event indices, closed over links, as a
    partial repetition is) only those are worked out; the others read 0."""
    t = st.t
    if rows is None:
        rows = np.arange(len(t.start))
    start, end = t.start[rows], t.end[rows]
    f = rs.factors[rank]
    cum = np.r_[0, np.cumsum(rs.jumps[rank])]
    # A wait at point j holds back what starts at j or later and what ends after j.
    waited_start = cum[np.searchsorted(rs.jump_at, start, "right")]
    waited_end = cum[np.searchsorted(rs.jump_at, end, "left")]
    carry = rs.carry[rank]
    new_start, new_end = t.start.copy(), t.end.copy()
    # A catch-up at a gap's end moves what starts there or later and what ends after it.
    caught = np.r_[0.0, rs.caught[rank].astype(np.float64)]
    caught_start = caught[np.searchsorted(st.gap_end, start, "right")]
    caught_end = caught[np.searchsorted(st.gap_end, end, "left")]
    gpu_start = carry + st.compute_shift(start, f) + waited_start - caught_start
    gpu_end = carry + st.compute_shift(end, f) + waited_end - caught_end
    # The host moves by its shift after the last of its waits that ended by then.
    host = np.r_[rs.host_carry[rank], rs.host_shift[rank]]
    host_start = host[np.searchsorted(st.wait_ends, start, "right")]
    host_end = host[np.searchsorted(st.wait_ends, end, "right")]
    gpu_side = t.gpu_side[rows]
    new_start[rows] += np.rint(np.where(gpu_side, gpu_start, host_start)).astype(np.int64)
    new_end[rows] += np.rint(np.where(gpu_side, gpu_end, host_end)).astype(np.int64)
    new_end[rows] = np.maximum(new_end[rows], new_start[rows])
    # Collectives are placed by the schedule, and GPU work queued behind one on its stream
    # waits for it to finish.
    chosen = np.zeros(len(t.start), bool)
    chosen[rows] = True
    comm = chosen[st.comm]
    placed = st.comm[comm]
    new_start[placed] = rs.comm_start[rank][comm]
    new_end[placed] = np.maximum(rs.comm_end[comm], new_start[placed])
    for on in st.comm_streams:
        _queue(on[chosen[on]], new_start, new_end, t.collective)
    flows = st.flows[chosen[st.flows]]
    new_start[flows] = new_start[t.flow_on[flows]]
    start_delta = new_start - t.start
    return start_delta, (new_end - new_start) - (t.end - t.start)


def _queue(on: np.ndarray, start: np.ndarray, end: np.ndarray, fixed_end: np.ndarray) -> None:
    """Push the events `on` one stream back so that none starts before the previous ends."""
    on = on[np.argsort(start[on], kind="stable")]
    free = None
    for i in on.tolist():
        if free is not None and start[i] < free:
            if not fixed_end[i]:
                end[i] += free - start[i]
            start[i] = free
            end[i] = max(end[i], start[i])
        free = end[i] if free is None else max(free, end[i])
