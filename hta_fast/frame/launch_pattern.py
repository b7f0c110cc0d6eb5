"""A rank's launches as a sequence of items, and the stretch of it that repeats: what marks
iterations (a training step, a decode step, a denoising step) in a trace that has neither
profiler steps nor annotations to say where they are.

An item is one launch call that queued GPU work, named by the GPU event it queued (a
kernel, a copy, a fill); a graph launch is one item however many kernels its replay ran,
named by the graph's kernel the core linked it to, in a namespace of its own. Only the
thread that launches most is read: a second launching thread (autograd's backward, a
copy thread) interleaves its launches at times that differ from one iteration to the next.

The repeat is found in O(n log n) items: one autocorrelation counts, for every shift p at
once, how many items meet their own kind p items on (and how much GPU time they hold); the
shifts that count most are the periods tried, each with one vectorised comparison of the
sequence with itself p items on, whose stretches of agreement hold the copies. Copies
are weighed by the GPU time of the work they launched, so that the loop the GPU spends its
time in wins over a cheap one that repeats more often (a text encoder's layers against a
diffusion model's denoising steps), and of the periods whose copies hold nearly as much
GPU time as the best, the smallest wins, so that two iterations are not taken for one.
A single forward has no iterations, and its repeated layers are found in their place.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace
from . import derived
from .graph_replays import GRAPH_LAUNCH

__all__ = ["Launches", "Repeat", "launches", "find_repeat"]

# Periods tried: the most frequent distances between repeats of one item.
_CANDIDATES = 32
# A period wins over a longer one when its copies cover this share of the best coverage.
_NEAR_BEST = 0.9
# Mismatched items tolerated inside a stretch of copies, as a share of the period (a launch
# that one iteration makes and the others do not: an allocator's memset, a logging copy).
_TOLERANCE = 0.02

_LAUNCH_KINDS = (EventKind.runtime, EventKind.driver)
# Odd multipliers that spread item codes over the circle (_periods): fixed, so that a
# trace gives the same answer every time.
_HASHES = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)


class Launches(NamedTuple):
    """The launches of one thread of a rank, by start.

    rows    int64, row in trace.events of each launch call
    item    int64, what it launched: the GPU event's name id (>= 0), or for a graph
            launch -2 - that id (the linked kernel's), so graphs and kernels never meet
    weight  int64 ns, the summed duration of the GPU work it launched
    """

    rows: np.ndarray
    item: np.ndarray
    weight: np.ndarray


class Repeat(NamedTuple):
    """Where a sequence repeats: `copies` copies of `period` items from item `start`."""

    start: int
    period: int
    copies: int


def launches(trace: Trace) -> Launches:
    """The launch calls of the rank's busiest launching thread, by start (module doc)."""
    col = trace.column
    partner = col("events", "partner")
    gpu = np.flatnonzero(derived.kind_mask(trace, GPU_WORK_KINDS) & (partner >= 0))
    gpu = gpu[derived.kind_mask(trace, _LAUNCH_KINDS)[partner[gpu]]]
    if not len(gpu):
        none = np.zeros(0, np.int64)
        return Launches(none, none, none)
    rows, first, of = np.unique(partner[gpu], return_index=True, return_inverse=True)
    dur = np.maximum(col("events", "dur")[gpu], 0)
    weight = np.bincount(of.reshape(-1), weights=dur, minlength=len(rows)).astype(np.int64)
    name = col("events", "name")
    item = name[gpu[first]].astype(np.int64)
    graph = derived.name_flags(trace, GRAPH_LAUNCH)
    is_graph = (name[rows] >= 0) & graph[np.maximum(name[rows], 0)]
    item = np.where(is_graph, -2 - item, item)
    pid, tid = col("events", "pid")[rows], col("events", "tid")[rows]
    threads, thread_of, counts = np.unique(
        np.stack([pid, tid]), axis=1, return_inverse=True, return_counts=True
    )
    busiest = thread_of.reshape(-1) == int(np.argmax(counts))
    rows, item, weight = rows[busiest], item[busiest], weight[busiest]
    order = np.lexsort((rows, col("events", "ts")[rows]))
    return Launches(rows[order], item[order], weight[order])


def find_repeat(
    items: np.ndarray, weights: Optional[np.ndarray] = None, min_copies: int = 2
) -> Optional[Repeat]:
    """The stretch of items made of copies of one period that holds the most weight
    (module doc; no weights: every item weighs the same), or None when no period repeats
    min_copies times."""
    items = np.asarray(items, np.int64)
    n = len(items)
    if n < max(2, min_copies):
        return None
    w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    # Without GPU time to weigh by (durations all zero), items count alike.
    w = w if w.sum() > 0 else np.ones(n)
    held = np.r_[0.0, np.cumsum(w)]
    found: list[tuple[float, int, int, int]] = []  # (weight, period, start, copies)
    for p in _periods(items, w, n // min_copies):
        starts, lengths = _agreements(items, p)
        copies = (lengths + p) // p
        ok = copies >= min_copies
        if not ok.any():
            continue
        at, count = starts[ok], copies[ok]
        weight = held[at + count * p] - held[at]
        k = int(np.argmax(weight))
        found.append((float(weight[k]), p, int(at[k]), int(count[k])))
    if not found:
        return None
    top = max(f[0] for f in found)
    near = [f for f in found if f[0] >= _NEAR_BEST * top]
    _, period, start, n_copies = min(near, key=lambda f: f[1])
    return Repeat(start, period, n_copies)


def _periods(items: np.ndarray, weights: np.ndarray, longest: int) -> list[int]:
    """The shifts p (1..longest) at which most items, and most GPU time, meet their own
    kind p items on: for each shift, the sum over i of [items[i] == items[i + p]], counted
    for all shifts at once by one autocorrelation. Each kind of item is sent to a point
    on the unit circle (a fixed hash of its code); the autocorrelation of those points
    adds one for every pair that agrees and a term of random phase, which cancels, for
    every pair that does not. Several hashes, summed, make the remainder small; the exact
    test of each shift comes after (_agreements)."""
    n = len(items)
    _, codes = np.unique(items, return_inverse=True)
    codes = codes.reshape(-1).astype(np.uint64)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    chosen: set[int] = set()
    for root in (np.ones(n), np.sqrt(weights / weights.mean())):
        agreement = np.zeros(longest + 1)
        for mult in _HASHES:
            angle = ((codes * np.uint64(mult)) % np.uint64(1 << 32)).astype(np.float64)
            z = root * np.exp(2j * np.pi * angle / float(1 << 32))
            f = np.fft.fft(z, size)
            agreement += np.fft.ifft(f * np.conj(f))[: longest + 1].real
        best = np.argsort(-agreement[1:], kind="stable")[:_CANDIDATES] + 1
        chosen.update(int(p) for p in best)
    return sorted(chosen)


def _agreements(items: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the stretches where items[i] == items[i + p], short runs of
    disagreement (a few items, _TOLERANCE of the period, at least one) allowed inside."""
    agree = items[:-p] == items[p:]
    if not agree.any():
        none = np.zeros(0, np.int64)
        return none, none
    edges = np.diff(np.r_[0, agree.astype(np.int8), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    allowed = max(1, int(_TOLERANCE * p))
    # Runs closer than `allowed` items join into one stretch.
    first = np.flatnonzero(np.r_[True, starts[1:] - ends[:-1] > allowed])
    last = np.r_[first[1:], len(starts)] - 1
    return starts[first], ends[last] - starts[first]
