"""Generic kernels over plain columns: interval sets, class sweeps, gaps, step counters and
time-weighted statistics. The analyses are built from these.

All times are int64 nanoseconds; an interval is ``[start, end)``. Inputs are never modified.
Each function converts its arguments (integer columns of another width are cast when their
values fit, floats given as times are a ``TypeError``), then runs the native kernel with the
GIL released. Columns of one call must have equal lengths (``ValueError`` otherwise); empty
inputs give empty outputs. A time or a sum that does not fit in int64 is an ``OverflowError``.

Naming: ``group`` is a per-row group id (rows may repeat it); ``groups`` holds distinct ids,
ascending, one per row of the other results.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence, Union, cast

import numpy as np

from ._core import ops as _ops

__all__ = [
    "Intervals",
    "GroupedIntervals",
    "GroupTotals",
    "GroupedClassSweep",
    "Gaps",
    "StepSeries",
    "WeightedStats",
    "union",
    "total_length",
    "intersect",
    "difference",
    "grouped_union",
    "grouped_total",
    "class_sweep",
    "grouped_class_sweep",
    "group_order",
    "group_gaps",
    "Occupancy",
    "occupancy",
    "step_counter",
    "weighted_stats",
]

ArrayLike = Union[np.ndarray, Sequence[int], Sequence[float]]


class Intervals(NamedTuple):
    """A normalised interval set: sorted by start, disjoint, neighbours never touch."""

    starts: np.ndarray  # int64
    ends: np.ndarray  # int64


class GroupedIntervals(NamedTuple):
    """Intervals sorted by (group, start), normalised within each group."""

    group: np.ndarray  # int64
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64


class GroupTotals(NamedTuple):
    groups: np.ndarray  # int64, every distinct input group id, ascending
    totals: np.ndarray  # int64 ns


class GroupedClassSweep(NamedTuple):
    groups: np.ndarray  # int64, every distinct input group id, ascending
    time: np.ndarray  # int64 ns, shape (len(groups), 2**n_classes); see class_sweep


class Gaps(NamedTuple):
    """Gap k is [starts[k], ends[k]) in group[k]; next_index[k] is the input row after it."""

    group: np.ndarray  # int64
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    next_index: np.ndarray  # int64 row of the input


class StepSeries(NamedTuple):
    """One row per distinct (group, ts), sorted: the value from ts until the next row."""

    group: np.ndarray  # int64
    ts: np.ndarray  # int64
    value: np.ndarray  # float64 or int64, as the deltas


class Occupancy(NamedTuple):
    """Entries and exits in the order occupancy() gives them, one row each."""

    item: np.ndarray  # int64, the item of the row
    entering: np.ndarray  # bool, True for the item's entry, False for its exit
    group: np.ndarray  # int64
    ts: np.ndarray  # int64
    level: np.ndarray  # int64, items inside the row's group after it


@dataclass(frozen=True)
class WeightedStats:
    """Time-weighted statistics of step functions, one row per group (see weighted_stats)."""

    groups: np.ndarray  # int64, distinct, ascending
    duration: np.ndarray  # int64 ns, length of each group's window
    mean: np.ndarray  # float64, time-weighted
    min: np.ndarray  # float64, smallest value held for a positive time
    max: np.ndarray  # float64, largest value held for a positive time
    std: np.ndarray  # float64, time-weighted population standard deviation
    quantiles: np.ndarray  # float64, shape (len(groups), len(quantile_levels))
    time_at_or_above: np.ndarray  # int64 ns, shape (len(groups), len(thresholds))
    change_point_mean: np.ndarray  # float64, each row (change point) counted once
    quantile_levels: np.ndarray  # float64, the quantiles asked for
    thresholds: np.ndarray  # float64, the thresholds asked for


# --- argument conversion ----------------------------------------------------------------
def _array(name: str, x: ArrayLike) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _int_column(name: str, x: ArrayLike, dtype: type = np.int64) -> np.ndarray:
    a = _array(name, x)
    if a.dtype == dtype:
        return np.ascontiguousarray(a)
    if a.size == 0:
        return np.empty(0, dtype)  # np.asarray([]) is float64
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if not np.can_cast(a.dtype, dtype, "safe"):
        info = np.iinfo(dtype)
        if a.min() < info.min or a.max() > info.max:
            raise ValueError(f"{name} has values outside the range of {np.dtype(dtype).name}")
    return np.ascontiguousarray(a, dtype=dtype)


def _float_column(name: str, x: ArrayLike) -> np.ndarray:
    a = _array(name, x)
    if a.size and a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def _n_classes(n: int) -> int:
    n = operator.index(n)
    if not 0 <= n <= 8:
        raise ValueError(f"n_classes must be in [0, 8], got {n}")
    return n


# --- interval sets ----------------------------------------------------------------------
def union(starts: ArrayLike, ends: ArrayLike) -> Intervals:
    """Union of the intervals [starts[i], ends[i]), given in any order.

    Intervals with end <= start are empty and dropped; intervals that overlap or touch are
    merged. The result is sorted and disjoint, with a positive gap between neighbours.
    """
    return Intervals(*_ops.union(_int_column("starts", starts), _int_column("ends", ends)))


def total_length(starts: ArrayLike, ends: ArrayLike) -> int:
    """Length (ns) of the union of the intervals."""
    return int(_ops.total_length(_int_column("starts", starts), _int_column("ends", ends)))


def intersect(
    a_starts: ArrayLike, a_ends: ArrayLike, b_starts: ArrayLike, b_ends: ArrayLike
) -> Intervals:
    """Intersection of union(a) and union(b), normalised."""
    return Intervals(
        *_ops.intersect(
            _int_column("a_starts", a_starts),
            _int_column("a_ends", a_ends),
            _int_column("b_starts", b_starts),
            _int_column("b_ends", b_ends),
        )
    )


def difference(
    a_starts: ArrayLike, a_ends: ArrayLike, b_starts: ArrayLike, b_ends: ArrayLike
) -> Intervals:
    """union(a) minus union(b), normalised."""
    return Intervals(
        *_ops.difference(
            _int_column("a_starts", a_starts),
            _int_column("a_ends", a_ends),
            _int_column("b_starts", b_starts),
            _int_column("b_ends", b_ends),
        )
    )


def grouped_union(group: ArrayLike, starts: ArrayLike, ends: ArrayLike) -> GroupedIntervals:
    """union() of each group's intervals; rows sorted by (group, start)."""
    return GroupedIntervals(
        *_ops.grouped_union(
            _int_column("group", group), _int_column("starts", starts), _int_column("ends", ends)
        )
    )


def grouped_total(group: ArrayLike, starts: ArrayLike, ends: ArrayLike) -> GroupTotals:
    """Length of each group's union, for every distinct group id (0 if all its intervals are empty)."""
    return GroupTotals(
        *_ops.grouped_total(
            _int_column("group", group), _int_column("starts", starts), _int_column("ends", ends)
        )
    )


# --- class sweep ------------------------------------------------------------------------
def class_sweep(
    starts: ArrayLike, ends: ArrayLike, classes: ArrayLike, n_classes: int
) -> np.ndarray:
    """Time during which exactly each subset of classes is active.

    Interval i, of class classes[i] in [0, n_classes) (n_classes <= 8), is active on
    [starts[i], ends[i]); empty intervals are ignored. Returns int64 of length 2**n_classes:
    entry m is the time when the set of active classes is exactly the bits of m. Entry 0 is the
    time with nothing active between the earliest start and the latest end, so the entries sum
    to that span (0 for no non-empty interval).
    """
    n = _n_classes(n_classes)
    return _ops.class_sweep(
        _int_column("starts", starts),
        _int_column("ends", ends),
        _int_column("classes", classes, np.uint8),
        n,
    )


def grouped_class_sweep(
    group: ArrayLike, starts: ArrayLike, ends: ArrayLike, classes: ArrayLike, n_classes: int
) -> GroupedClassSweep:
    """class_sweep() per group: one row per distinct group id (zeros if all its intervals are empty)."""
    n = _n_classes(n_classes)
    return GroupedClassSweep(
        *_ops.grouped_class_sweep(
            _int_column("group", group),
            _int_column("starts", starts),
            _int_column("ends", ends),
            _int_column("classes", classes, np.uint8),
            n,
        )
    )


# --- gaps -------------------------------------------------------------------------------
def group_order(group: ArrayLike, key: ArrayLike) -> np.ndarray:
    """The permutation (int64) that sorts rows by (group, key), ties in row order: the same
    as np.lexsort((key, group)), in linear time when each group's rows come in a few sorted
    runs (a trace's events over a handful of streams)."""
    return _ops.group_order(_int_column("group", group), _int_column("key", key))


def group_gaps(
    group: ArrayLike, starts: ArrayLike, ends: ArrayLike, *, touching: bool = False
) -> Gaps:
    """Gaps between the events of each group, and the event that ends each gap.

    Per group the events are taken in order of (start, end, row). A gap lies before each event
    whose start exceeds the running maximum end of the events before it; it runs from that
    maximum to the event's start, and next_index is that event's input row. Zero-length events
    take part (they end a gap); an event with end < start counts as zero-length at its start.
    Rows sorted by (group, start).

    Zero-length gaps are reported only with touching=True: before an event that starts
    exactly where the events before it end. Ends are open ([a, b) leaves b free) but a
    zero-length event covers its own instant, so an event starting on it ends no gap.
    """
    return Gaps(
        *_ops.group_gaps(
            _int_column("group", group),
            _int_column("starts", starts),
            _int_column("ends", ends),
            bool(touching),
        )
    )


# --- step functions ---------------------------------------------------------------------
def occupancy(group: ArrayLike, enter: ArrayLike, leave: ArrayLike) -> Occupancy:
    """Items entering and leaving groups, one row per entry and per exit, with the number of
    items inside the group after each row (a CUDA stream's launch queue, row by row).

    Item i enters group[i] at enter[i] and leaves at leave[i]. Rows are sorted by (group, ts);
    at one timestamp exits come before entries (an item leaving as another enters is no peak),
    except that an item entering and leaving at once leaves after the entries (no level is
    below zero); then by row. Each group starts empty. Unlike
    step_counter, every change keeps its own row.
    """
    item, entering, g, ts, level = _ops.occupancy(
        _int_column("group", group), _int_column("enter", enter), _int_column("leave", leave)
    )
    return Occupancy(item, entering.view(np.bool_), g, ts, level)


def step_counter(group: ArrayLike, ts: ArrayLike, delta: ArrayLike) -> StepSeries:
    """A step function per group that starts at 0 and changes by delta[i] at ts[i].

    All deltas at the same (group, ts) are applied together (added in input row order); one row
    per distinct (group, ts), sorted, gives the value after them. Integer deltas give int64 values
    (OverflowError if one does not fit); floating-point deltas give float64.
    """
    g, t = _int_column("group", group), _int_column("ts", ts)
    d = _array("delta", delta)
    if d.dtype.kind == "f":
        return StepSeries(*_ops.step_counter_f64(g, t, np.ascontiguousarray(d, dtype=np.float64)))
    if d.size and d.dtype.kind not in "iu":
        raise TypeError(f"delta must hold integers or floats, got dtype {d.dtype}")
    return StepSeries(*_ops.step_counter_i64(g, t, _int_column("delta", d)))


def weighted_stats(
    group: ArrayLike,
    ts: ArrayLike,
    value: ArrayLike,
    end_ts: Optional[Union[int, ArrayLike]] = None,
    quantiles: ArrayLike = (),
    thresholds: ArrayLike = (),
) -> WeightedStats:
    """Time-weighted statistics of step functions, per group.

    Rows must be sorted by (group, ts), as step_counter() returns them. Row i's value holds
    from ts[i] until the next ts of its group; the group's last value holds until its end:
    end_ts is None (each group ends at its last ts, so the last value holds for no time), one
    int for all groups, or one entry per distinct group in ascending group order. A group's
    window is [its first ts, its end); duration is the window length.

    mean, std (population), min and max are over the values held for a positive time,
    weighted by that time; a quantile q is the smallest held value v with
    time(value <= v) >= q * duration; all are NaN for a group whose duration is 0.
    time_at_or_above[k, j] is the time group k's value is >= thresholds[j].
    change_point_mean is the plain mean of the group's rows. Integer values are converted
    to float64.
    """
    g, t = _int_column("group", group), _int_column("ts", ts)
    v = _float_column("value", value)
    q = _float_column("quantiles", np.atleast_1d(np.asarray(quantiles, dtype=np.float64)))
    th = _float_column("thresholds", np.atleast_1d(np.asarray(thresholds, dtype=np.float64)))
    ends = None
    if end_ts is not None:
        if np.ndim(end_ts) == 0:
            n_groups = int(np.count_nonzero(g[1:] != g[:-1])) + 1 if g.size else 0
            ends = np.full(n_groups, operator.index(cast(int, end_ts)), dtype=np.int64)
        else:
            ends = _int_column("end_ts", cast(ArrayLike, end_ts))
    r = _ops.weighted_stats(g, t, v, ends, q, th)
    return WeightedStats(quantile_levels=q, thresholds=th, **r)
