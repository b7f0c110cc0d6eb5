"""The durations_from edit: events of this trace that match take the durations another trace
measured for its matching events ("what if this op used the implementation I measured over
there", "what if my loader were as fast as in that run").

Each entry of `match` is a pair of patterns (the same one on both sides for a plain regex):
events of trace A whose name matches the first take durations from events of trace B whose
name matches the second, CPU events from CPU events and GPU work from GPU work. A CPU event
stands for itself and what runs under it, so only the outermost match counts (its nested
matches are inside it already). Events are paired, in this order:

    shapes      the same name and input shapes, in the same step (its position among the
                trace's steps), in order of start
    order       the rest of the step, one for one in order of start, where both traces have
                as many left in the step
    step_share  the rest of the step where the counts differ (one kernel became two, say):
                each event of A takes an equal share of what B's left-over events took in
                that step, so the step's total is B's
    mean        no counterpart in the step (a trace without steps, or steps that do not
                line up): the mean of B's matching events with the same name and shapes,
                else B's matching time per occurrence: their sum over the count of B's
                most frequent matching name (one kernel become two: each event of A takes
                the two's sum, as step_share gives; one name: their mean)
    unpaired    B has none: the event keeps its time

A CPU event's new duration becomes a factor on it and everything nested in it
(hta_fast.model.whatif.declared.op_edit); a GPU event's is the ns added to its duration.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import Mapping, Optional, Union

import numpy as np
import pyarrow as pa

from ...._arrow import array_of
from ....costs.op_args import op_arg_positions
from ....frame.fields import NS
from ....schema import CPU_KINDS, GPU_WORK_KINDS
from ....trace import Trace
from .declaration import EditDeclaration, Option, regex_pairs
from .op_edit import RowFactors

Match = Union[str, Mapping[str, str]]

PAIRED_BY = ("shapes", "order", "step_share", "mean", "unpaired")

PAIRING_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("row", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("gpu", pa.bool_()),
        pa.field("step", pa.int64()),
        pa.field("paired_by", pa.string()),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("new_dur", pa.float64(), metadata=NS),
    ]
)


def match_pairs(match: Match) -> list[tuple[str, str]]:
    """`match` as (pattern in this trace, pattern in the other) pairs."""
    if isinstance(match, str):
        return [(match, match)]
    return [(str(a), str(b)) for a, b in match.items()]


@dataclasses.dataclass
class _Events:
    """The candidate events of one trace for one pattern and side (CPU or GPU)."""

    rows: np.ndarray
    dur: np.ndarray
    step: np.ndarray  # position among the trace's steps, -1 outside them
    key: list[tuple[str, str]]  # (name, input shapes)


def _outermost(trace: Trace, hit: np.ndarray) -> np.ndarray:
    """hit without the events nested (at any depth) in another hit event."""
    up = trace.column("events", "parent").astype(np.int64)
    covered = np.zeros(len(hit), bool)  # some ancestor within the levels looked at is a hit
    has = up >= 0
    covered[has] = hit[up[has]]
    # Pointer doubling: after k passes `covered` has looked 2^k levels up.
    while has.any():
        covered[has] |= covered[up[has]]
        up = np.where(has, up[np.maximum(up, 0)], -1)
        has = up >= 0
    return hit & ~covered


def _events(trace: Trace, pattern: str, gpu: bool) -> _Events:
    kind = trace.column("events", "kind")
    side = np.isin(kind, GPU_WORK_KINDS if gpu else CPU_KINDS)
    ids = trace.column("events", "name")
    uniq = np.unique(ids[side])
    names = trace.names_at(uniq)
    regex = re.compile(pattern)
    hit_ids = uniq[np.array([bool(regex.search(n)) for n in names], bool)]
    hit = side & np.isin(ids, hit_ids)
    if not gpu:
        hit = _outermost(trace, hit)
    rows = np.flatnonzero(hit)
    rows = rows[np.lexsort((rows, trace.column("events", "ts")[rows]))]
    step_ids = np.sort(trace.column("steps", "step"))
    step = trace.column("events", "step")[rows].astype(np.int64)
    pos = np.searchsorted(step_ids, step)
    inside = (
        (pos < len(step_ids)) & (step_ids[np.minimum(pos, len(step_ids) - 1)] == step)
        if len(step_ids)
        else np.zeros(len(rows), bool)
    )
    shapes = _shapes(trace, rows)
    row_names = trace.names_at(ids[rows])
    return _Events(
        rows,
        np.maximum(trace.column("events", "dur")[rows], 0).astype(np.float64),
        np.where(inside, pos, -1),
        list(zip(row_names, shapes)),
    )


def _shapes(trace: Trace, rows: np.ndarray) -> list[str]:
    """Each row's recorded input shapes as text ("" where none)."""
    pos, found = op_arg_positions(trace, rows)
    dims = np.full(len(rows), -1, np.int64)
    if found.any():
        dims[found] = trace.column("op_args", "input_dims")[pos[found]]
    return trace.names_at(dims)


def per_occurrence(b: _Events) -> float:
    """B's matching time per occurrence of what replaces one event of A: the sum of its
    matching events over the count of its most frequent matching name (each name of a
    replacement runs once per occurrence; with one name, the mean)."""
    counts: dict[str, int] = defaultdict(int)
    for name, _ in b.key:
        counts[name] += 1
    return float(b.dur.sum()) / max(counts.values()) if counts else 0.0


def _pair(a: _Events, b: _Events, mean: bool = True) -> tuple[np.ndarray, list[str]]:
    """Each A event's new duration and how it was paired (the module doc); mean=False: an
    event without a counterpart in its step keeps its time."""
    new = a.dur.copy()
    how = ["unpaired"] * len(a.rows)
    left_b = np.ones(len(b.rows), bool)
    b_in_step: dict[int, list[int]] = defaultdict(list)
    for j, s in enumerate(b.step.tolist()):
        b_in_step[s].append(j)
    a_in_step: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(a.step.tolist()):
        a_in_step[s].append(i)
    for s, a_idx in a_in_step.items():
        b_idx = b_in_step.get(s, [])
        by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
        for j in b_idx:
            by_key[b.key[j]].append(j)
        rest_a = []
        for i in a_idx:  # in order of start, as the events are
            same = by_key.get(a.key[i])
            if same:
                j = same.pop(0)
                new[i], how[i], left_b[j] = b.dur[j], "shapes", False
            else:
                rest_a.append(i)
        rest_b = [j for j in b_idx if left_b[j]]
        if not rest_a or not rest_b:
            continue
        if len(rest_a) == len(rest_b):
            for i, j in zip(rest_a, rest_b):
                new[i], how[i] = b.dur[j], "order"
        else:
            share = float(b.dur[rest_b].sum()) / len(rest_a)
            for i in rest_a:
                new[i], how[i] = share, "step_share"
    if len(b.rows) and mean:
        mean_all = per_occurrence(b)
        by_key_mean: dict[tuple[str, str], list[float]] = defaultdict(list)
        for k, d in zip(b.key, b.dur.tolist()):
            by_key_mean[k].append(d)
        for i in range(len(a.rows)):
            if how[i] == "unpaired":
                durs = by_key_mean.get(a.key[i])
                new[i], how[i] = (float(np.mean(durs)) if durs else mean_all), "mean"
    return new, how


@dataclasses.dataclass
class Pairing:
    """One rank's durations_from: the CPU events' factors, the GPU events' added ns, and
    the pairing table (PAIRING_SCHEMA)."""

    ops: RowFactors
    gpu: tuple[np.ndarray, np.ndarray]
    table: pa.Table


def pair_durations(
    rank: int, a: Trace, b: Trace, match: Match, step_shift: int = 0, mean: bool = True
) -> Pairing:
    """The durations_from edit of trace `a` (rank `rank`) from trace `b`. step_shift: the
    events of a's k-th step pair with those of b's (k - step_shift)-th (1 and b = a: each
    step takes the durations of the step before it); mean=False: events without a
    counterpart in their step keep their time instead of taking the mean."""
    parts: list[tuple[_Events, np.ndarray, list[str], bool]] = []
    for pa_pattern, pb_pattern in match_pairs(match):
        for gpu in (False, True):
            ea = _events(a, pa_pattern, gpu)
            if len(ea.rows):
                eb = _events(b, pb_pattern, gpu)
                if step_shift:
                    eb.step = np.where(eb.step >= 0, eb.step + step_shift, -1)
                new, how = _pair(ea, eb, mean)
                parts.append((ea, new, how, gpu))
    op_rows, op_factor, gpu_rows, gpu_delta = [], [], [], []
    cols: dict[str, list] = {f.name: [] for f in PAIRING_SCHEMA}
    step_ids = np.sort(a.column("steps", "step"))
    for ev, new, how, gpu in parts:
        if gpu:
            gpu_rows.append(ev.rows)
            gpu_delta.append(new - ev.dur)
        else:
            ok = ev.dur > 0  # a zero-length op has no time to scale
            op_rows.append(ev.rows[ok])
            op_factor.append(new[ok] / ev.dur[ok])
        cols["rank"] += [rank] * len(ev.rows)
        cols["row"] += ev.rows.tolist()
        cols["name"] += [k[0] for k in ev.key]
        cols["gpu"] += [gpu] * len(ev.rows)
        cols["step"] += [int(step_ids[s]) if s >= 0 else None for s in ev.step.tolist()]
        cols["paired_by"] += how
        cols["dur"] += ev.dur.astype(np.int64).tolist()
        cols["new_dur"] += new.tolist()

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    return Pairing(
        (cat(op_rows, np.int64), cat(op_factor, np.float64)),
        (cat(gpu_rows, np.int64), cat(gpu_delta, np.float64)),
        pa.table({f.name: array_of(cols[f.name], f.type) for f in PAIRING_SCHEMA}),
    )


def pairing_notes(table: pa.Table, source: Optional[str]) -> list[str]:
    """One line saying how the events were paired."""
    if not table.num_rows:
        return [f"durations_from {source or 'the other trace'}: no event matched"]
    how = table["paired_by"].to_pylist()
    counts = ", ".join(f"{how.count(h)} by {h}" for h in PAIRED_BY if h in how)
    return [
        f"durations_from {source or 'the other trace'}: {table.num_rows} events paired "
        f"({counts}); see the 'durations_from' table"
    ]


EDIT = EditDeclaration(
    key="durations_from",
    options=(
        Option(
            "--durations-from",
            "durations_from",
            "With --match: events that match take the durations this other trace (a file or "
            "a folder of ranks) measured for its matching events.",
            type="path",
        ),
        Option(
            "--match",
            "matches",
            "With --durations-from: events here whose name matches REGEX pair with events "
            "there matching REGEX_B (default: the same REGEX); write a literal = in a pattern "
            "as \\= (repeatable).",
            metavar="REGEX[=REGEX_B]",
            multiple=True,
        ),
    ),
    keywords=("durations_from", "match"),
    build=lambda v: {
        "durations_from": v["durations_from"],
        "match": regex_pairs(v["matches"], "--match"),
    },
    doc="Events that match take the durations another trace measured for its matching "
    "events (`match`: a regex, or `{regex here: regex there}`): CPU events with what runs "
    "under them, GPU events their GPU time (table `durations_from`).",
)
