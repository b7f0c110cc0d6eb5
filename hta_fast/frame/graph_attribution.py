"""Which operators a replayed GPU event counts for: the ones that captured it.

An operator's GPU work is found from the launch calls inside it. A graph replay's kernels
are all linked to the graph launch, which sits under whatever called the graph (often a
compiled region with no shapes), not under the operators that made the graph. Where the
trace holds the capture (frame.graph_captures; or a capture given beside it:
frame.capture_trace), each replay is matched to a capture and its i-th GPU event stands for
the capture's i-th launch, both in start order: the operators around that launch are the
event's operators, for every analysis that asks which operator launched what.

A replay matches a capture when both hold as many items and the items' kinds (kernel,
memcpy, memset) come in the same order. Of the captures that match, the latest one that
ended before the replay's launch is taken; where several match (one program capturing the
same shape of graph for several batch sizes), the kernel names the captured launch calls
record (ROCm's do, CUDA's do not) keep the ones that launched the replayed kernels, and a
note says when that still leaves several. A replay that matches none is matched to the closest capture within NEAR items and
NEAR_SHARE of its size (launches captured but not replayed, or the other way: real
captures and replays need not agree exactly; FLUX's capture holds 994 launches, each replay
993 kernels): their kind
sequences are aligned (fewest items left out), each replayed event standing for the captured
launch it aligns with, and a note gives the difference. A replay with no capture that close
stays with its graph launch, and a note says how much GPU time that is and how close the
nearest capture came.

On a trace without graph launches every function here returns its input unchanged, at the
cost of one regular expression over the string pool.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple, Optional, Union

import numpy as np

from ..trace import Trace
from ..traceset import TraceSet
from . import derived
from .gpu_work import gpu_work
from .graph_captures import GraphCaptures, graph_captures
from .graph_replays import GraphReplays, graph_replays, has_graph_launches
from .launches import ancestor_pairs, launch_pairs
from .select import Selection, each_rank

__all__ = [
    "ReplayMatch",
    "replay_match",
    "operator_launches",
    "operator_launch_pairs",
    "with_capturing_ops",
    "replay_notes",
    "graph_replay_notes",
]


# A replay is matched to a capture whose items differ from its own by at most this many
# (left out on either side of the alignment of their kinds), and by at most this share of
# the larger: one launch of FLUX's 994 is close, one of three is another graph.
NEAR = 4
NEAR_SHARE = 0.02


def near_enough(distance: int, items: int) -> bool:
    """Whether a capture this many items away from a replay of `items` items is its own."""
    return 0 < distance <= min(NEAR, NEAR_SHARE * items)


class ReplayMatch(NamedTuple):
    """Each graph replay of a rank (frame.graph_replays order) and the capture it matched.

    capture      per replay: the capture matched (frame.graph_captures index); -1 none
    agreeing     per replay: how many captures before it match it (the latest is taken)
    captured_by  per entry of GraphReplays.gpu: the captured launch row standing for it;
                 -1 where its replay matched no capture (or the event aligns with none)
    distance     per replay: items left out to align it with its capture (0: exact; up to
                 NEAR); for a replay matched to none, its distance to the closest capture
                 (-1: no capture recorded)
    """

    capture: np.ndarray
    agreeing: np.ndarray
    captured_by: np.ndarray
    distance: np.ndarray


def replay_match(trace: Trace) -> ReplayMatch:
    """Every replay of the trace matched to the captures it holds. Remembered."""
    return derived.remember(trace, "graph_replay_match", lambda: _match(trace))


def _match(trace: Trace) -> ReplayMatch:
    replays = graph_replays(trace)
    capture = np.full(replays.total, -1, np.int64)
    agreeing = np.zeros(replays.total, np.int64)
    captured_by = np.full(len(replays.gpu), -1, np.int64)
    distance = np.full(replays.total, -1, np.int64)
    captures = graph_captures(trace) if replays.total else None
    if captures is None or not captures.total:
        return ReplayMatch(capture, agreeing, captured_by, distance)
    # captures by (item count, kinds), each list by end time
    by_shape: dict[bytes, tuple[list[int], list[int]]] = {}
    c_off = captures.offsets
    for j in np.argsort(captures.end, kind="stable").tolist():
        key = captures.kind[c_off[j] : c_off[j + 1]].tobytes()
        ends, ids = by_shape.setdefault(key, ([], []))
        ends.append(int(captures.end[j]))
        ids.append(j)
    kind = trace.column("events", "kind")[replays.gpu].astype(np.uint8)
    launch_ts = trace.column("events", "ts")[replays.launch]
    named = _launched_kernels(trace)
    replayed_names = trace.column("events", "name")[replays.gpu]
    r_off = replays.offsets
    for i in range(replays.total):
        found = by_shape.get(kind[r_off[i] : r_off[i + 1]].tobytes())
        if found is None:
            continue
        ends, ids = found
        n = bisect.bisect_right(ends, int(launch_ts[i]))
        if not n:
            continue
        candidates = ids[:n]
        if n > 1 and named is not None:
            mine = replayed_names[r_off[i] : r_off[i + 1]]
            same = [
                j
                for j in candidates
                if _names_agree(mine, named[captures.launch[c_off[j] : c_off[j + 1]]])
            ]
            candidates = same or candidates
        j = candidates[-1]
        capture[i], agreeing[i], distance[i] = j, len(candidates), 0
        captured_by[r_off[i] : r_off[i + 1]] = captures.launch[c_off[j] : c_off[j + 1]]
    _match_near(trace, replays, captures, kind, capture, captured_by, distance)
    return ReplayMatch(capture, agreeing, captured_by, distance)


def _launched_kernels(trace: Trace) -> Optional[np.ndarray]:
    """Per event row, the kernel name (string id) its launch call records, -1 where none;
    None when no launch records one (CUDA traces do not; ROCm's do)."""
    ids = trace.column("kernel_args", "launched_kernel")
    has = ids >= 0
    if not has.any():
        return None
    out = np.full(trace.num_rows("events"), -1, np.int64)
    out[trace.column("kernel_args", "row")[has]] = ids[has]
    return out


def _names_agree(replayed: np.ndarray, captured: np.ndarray) -> bool:
    """Whether every captured launch that names its kernel names the replayed one."""
    known = captured >= 0
    return bool((replayed[known] == captured[known]).all())


def _match_near(
    trace: Trace,
    replays: GraphReplays,
    captures: GraphCaptures,
    kind: np.ndarray,
    capture: np.ndarray,
    captured_by: np.ndarray,
    distance: np.ndarray,
) -> None:
    """The replays no capture matches exactly, matched to the closest capture within NEAR
    (among the closest, the latest that ended before the replay's launch, else the first to
    end); each unmatched replay's distance to the nearest capture recorded."""
    c_off, r_off = captures.offsets, replays.offsets
    c_kinds = [captures.kind[c_off[j] : c_off[j + 1]].tobytes() for j in range(captures.total)]
    ends = captures.end.astype(np.int64)
    launch_ts = trace.column("events", "ts")[replays.launch]
    memo: dict[tuple[bytes, int], tuple[int, list[int]]] = {}
    for i in np.flatnonzero(capture < 0).tolist():
        mine = kind[r_off[i] : r_off[i + 1]].tobytes()
        scores = []
        for j, theirs in enumerate(c_kinds):
            if (mine, j) not in memo:
                memo[(mine, j)] = _align(mine, theirs, NEAR)
            scores.append(memo[(mine, j)][0])
        d = min(scores)
        distance[i] = d
        close = [
            j
            for j, dj in enumerate(scores)
            if dj == d and near_enough(d, max(len(mine), len(c_kinds[j])))
        ]
        if not close:
            continue
        before = [j for j in close if ends[j] <= launch_ts[i]]
        j = max(before, key=lambda c: ends[c]) if before else min(close, key=lambda c: ends[c])
        capture[i] = j
        launches = captures.launch[c_off[j] : c_off[j + 1]]
        pairs = np.asarray(memo[(mine, j)][1], np.int64)
        out = captured_by[r_off[i] : r_off[i + 1]]
        out[pairs >= 0] = launches[pairs[pairs >= 0]]


def _align(mine: bytes, theirs: bytes, band: int) -> tuple[int, list[int]]:
    """(items left out on both sides, per item of `mine` the index in `theirs` it aligns
    with or -1) for the alignment of two kind sequences that leaves the fewest items out,
    searched within `band` of the diagonal; (the length difference, a lower bound, and [])
    when that is over band. Where alike kinds make several alignments equally good, items
    pair from the start and the ones left out come last."""
    n, m = len(mine), len(theirs)
    if abs(n - m) > band:
        return abs(n - m), []
    inf = n + m + 1
    width = 2 * band + 1  # column k of row i is theirs[:i - band + k]
    cost = [[inf] * width for _ in range(n + 1)]
    step = [[0] * width for _ in range(n + 1)]  # 1 pair, 2 leave mine out, 3 leave theirs out
    for k in range(band, min(width, band + m + 1)):
        cost[0][k], step[0][k] = k - band, 3
    for i in range(1, n + 1):
        row, above, moves = cost[i], cost[i - 1], step[i]
        for k in range(width):
            j = i - band + k
            if j < 0 or j > m:
                continue
            # Leaving out first, pairing last: on a tie the traceback (from the end) leaves
            # the last items out and pairs the first ones.
            best, how = inf, 0
            if k >= 1 and j >= 1 and row[k - 1] + 1 < best:
                best, how = row[k - 1] + 1, 3
            if k + 1 < width and above[k + 1] + 1 < best:
                best, how = above[k + 1] + 1, 2
            if j >= 1 and mine[i - 1] == theirs[j - 1] and above[k] < best:
                best, how = above[k], 1
            row[k], moves[k] = best, how
    k = m - n + band
    total = cost[n][k]
    if total > band:
        return total, []
    pairs = [-1] * n
    i = n
    while i > 0 or k != band:
        how = step[i][k]
        if how == 1:
            pairs[i - 1] = i - band + k - 1
            i -= 1
        elif how == 2:
            i, k = i - 1, k + 1
        else:
            k -= 1
    return total, pairs


def operator_launches(trace: Trace, launch: np.ndarray, gpu: np.ndarray) -> np.ndarray:
    """For (launch, GPU event) pairs as launch_pairs gives them: the call whose enclosing
    operators each GPU event counts for. That is its own launch, or, for an event of a
    replay that matched a capture, the launch that captured it. Without a matched replay
    the launch array itself comes back."""
    if not has_graph_launches(trace):
        return launch
    match = replay_match(trace)
    hit = match.captured_by >= 0
    if not hit.any():
        return launch
    src, dst = graph_replays(trace).gpu[hit], match.captured_by[hit]
    order = np.argsort(src)
    src, dst = src[order], dst[order]
    pos = np.minimum(np.searchsorted(src, gpu), len(src) - 1)
    found = src[pos] == gpu
    out = launch.copy()
    out[found] = dst[pos[found]]
    return out


def operator_launch_pairs(
    trace: Trace, mask: Optional[np.ndarray], include_memory_events: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(launch, gpu, by): launch_pairs (kept by `mask` on the real launch and GPU event),
    and the call whose operators each GPU event counts for (operator_launches)."""
    launch, gpu = launch_pairs(trace, mask, include_memory_events)
    return launch, gpu, operator_launches(trace, launch, gpu)


def _kept(trace: Trace, replays: GraphReplays, mask: Optional[np.ndarray]) -> np.ndarray:
    """Per entry of replays.gpu: whether `mask` keeps the event and its graph launch."""
    if mask is None:
        return np.ones(len(replays.gpu), bool)
    return mask[replays.gpu] & mask[replays.launch[replays.replay_of_each()]]


def with_capturing_ops(trace: Trace, mask: np.ndarray) -> np.ndarray:
    """The mask, plus the captured launches standing for the replayed GPU events it keeps
    and the CPU events around them: an operator that captured a graph is selected where its
    replays are, as one is selected where the kernels it launched ran. The mask of a trace
    with no matched replay comes back as it is."""
    if not has_graph_launches(trace):
        return mask
    match = replay_match(trace)
    keep = (match.captured_by >= 0) & _kept(trace, graph_replays(trace), mask)
    if not keep.any():
        return mask
    rows = np.unique(match.captured_by[keep])
    _, around = ancestor_pairs(trace, rows, np.ones(len(mask), bool))
    out = mask.copy()
    out[rows] = True
    out[around] = True
    return out


HOW_TO_GIVE = (
    "profile the capture too, or give the trace that recorded it "
    "(hta_fast.with_capture; --capture FILE on the command line)"
)


def replay_notes(trace: Trace, mask: Optional[np.ndarray], rank: int) -> list[str]:
    """What a result says about the graph replays it kept: how much GPU time ran in
    replays matched to no capture (and so counts for the graph launch's operators), how
    much counts for the operators that captured it, and how many replays matched several
    captures. Empty on a trace without graph replays."""
    if not has_graph_launches(trace):
        return []
    replays = graph_replays(trace)
    kept = _kept(trace, replays, mask)
    if not kept.any():
        return []
    match = replay_match(trace)
    replay_of = replays.replay_of_each()
    dur = np.maximum(trace.column("events", "dur")[replays.gpu], 0)
    work = gpu_work(trace, mask)
    total = max(int((work.ends - work.starts).sum()), 1)
    notes = []
    unmatched = match.capture[replay_of] < 0
    lost = kept & unmatched
    if lost.any():
        captures = graph_captures(trace)
        lost_replays = np.unique(replay_of[lost])
        if not captures.total:
            why, how = "no capture recorded", f"; to attribute them, {HOW_TO_GIVE}"
        else:
            closest = int(match.distance[lost_replays].min())
            why = (
                f"no capture of the same launches ({captures.total:,} capture(s) recorded, "
                f"the closest {closest:,} launch(es) away; a replay takes a capture up to "
                f"{NEAR} launches and {100 * NEAR_SHARE:g} % of its size away)"
            )
            how = ""
        notes.append(
            f"rank {rank}: {int(lost.sum()):,} GPU events "
            f"({100 * dur[lost].sum() / total:.2f} % of the GPU time) ran in "
            f"{len(lost_replays):,} graph replay(s) with {why}: they count for the "
            f"operators around the graph launch{how}"
        )
    got = kept & ~unmatched
    if got.any():
        matched = np.unique(replay_of[got])
        several = int((match.agreeing[matched] > 1).sum())
        notes.append(
            f"rank {rank}: {int(got.sum()):,} GPU events "
            f"({100 * dur[got].sum() / total:.2f} % of the GPU time) of "
            f"{len(matched):,} graph replay(s) count for the operators that captured them"
            + (
                f"; {several:,} of these replays matched several captures (the same count "
                "and kinds of work): each was given the latest capture before it"
                if several
                else ""
            )
        )
        near = matched[match.distance[matched] > 0]
        if len(near):
            captures = graph_captures(trace)
            i = int(near[0])
            j = int(match.capture[i])
            notes.append(
                f"rank {rank}: {len(near):,} of these replays matched a capture that differs "
                f"by up to {int(match.distance[near].max()):,} launch(es) (e.g. "
                f"{int(replays.offsets[i + 1] - replays.offsets[i]):,} GPU events replayed, "
                f"{int(captures.offsets[j + 1] - captures.offsets[j]):,} launches captured): "
                "each event stands for the captured launch its kind aligns with; where alike "
                "kinds leave the place open, they pair from the start"
            )
    return notes


def graph_replay_notes(traces: Union[Trace, TraceSet], selection: Selection) -> list[str]:
    """replay_notes of every selected rank, in rank order."""
    return [
        note
        for rank, trace, mask in each_rank(traces, selection)
        for note in replay_notes(trace, mask, rank)
    ]
