"""hta_fast.ops.class_sweep / grouped_class_sweep against per-nanosecond and breakpoint models."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hta_fast import ops
from tests.support._ops_models import (
    INT64_MAX,
    INT64_MIN,
    PROPERTY,
    class_sweep_by_breakpoints,
    class_sweep_by_ns,
    extreme_intervals,
    intervals,
)


def with_classes(pair_strategy, n_classes_max: int = 4):
    """(n_classes, rows of (start, end), classes)."""
    return st.integers(1, n_classes_max).flatmap(
        lambda k: pair_strategy.flatmap(
            lambda rows: st.tuples(
                st.just(k),
                st.just(rows),
                st.lists(st.integers(0, k - 1), min_size=len(rows), max_size=len(rows)),
            )
        )
    )


def test_known_compute_comm_overlap():
    # class 0 = compute on [0,10) and [20,30); class 1 = comm on [5,25); idle nowhere inside
    r = ops.class_sweep([0, 20, 5], [10, 30, 25], [0, 0, 1], 2)
    assert r.dtype == np.int64
    # 0: idle, 1: compute only, 2: comm only, 3: both
    assert r.tolist() == [0, 10, 10, 10]


def test_known_idle_and_nesting():
    # same class nested and repeated, an idle hole, an empty interval that must not widen the span
    r = ops.class_sweep([0, 2, 2, 10, -50], [5, 3, 4, 12, -50], [1, 1, 1, 0, 0], 2)
    assert r.tolist() == [5, 2, 5, 0]
    assert int(r.sum()) == 12 - 0


def test_eight_classes():
    starts = list(range(8))
    r = ops.class_sweep(starts, [100] * 8, starts, 8)
    assert r.shape == (256,)
    want = np.zeros(256, dtype=np.int64)
    for k in range(8):  # on [k, k+1) classes 0..k are active; on [7, 100) all of them
        want[(1 << (k + 1)) - 1] += 1 if k < 7 else 93
    assert np.array_equal(r, want)


def test_zero_classes_and_empty():
    assert ops.class_sweep([], [], [], 0).tolist() == [0]
    assert ops.class_sweep([], [], [], 3).tolist() == [0] * 8
    g = ops.grouped_class_sweep([], [], [], [], 2)
    assert g.groups.shape == (0,) and g.time.shape == (0, 4)


def test_grouped_known():
    g = ops.grouped_class_sweep([7, 3, 7, 5], [0, 0, 5, 4], [10, 4, 15, 4], [0, 1, 1, 0], 2)
    assert g.groups.tolist() == [3, 5, 7]
    assert g.time.tolist() == [[0, 0, 4, 0], [0, 0, 0, 0], [0, 5, 5, 5]]
    assert g.time.flags["C_CONTIGUOUS"]


@PROPERTY
@given(with_classes(intervals(max_size=10)))
def test_matches_membership(case):
    k, rows, classes = case
    s = [a for a, _ in rows]
    e = [b for _, b in rows]
    assert ops.class_sweep(s, e, classes, k).tolist() == class_sweep_by_ns(rows, classes, k)


@PROPERTY
@given(with_classes(intervals(max_size=10)), st.lists(st.integers(0, 2), max_size=10))
def test_grouped_matches_per_group(case, group_draw):
    k, rows, classes = case
    group = (group_draw + [0] * len(rows))[: len(rows)]
    r = ops.grouped_class_sweep(group, [a for a, _ in rows], [b for _, b in rows], classes, k)
    by_group = defaultdict(list)
    for gi, row, c in zip(group, rows, classes):
        by_group[gi].append((row, c))
    assert r.groups.tolist() == sorted(by_group)
    for i, gi in enumerate(sorted(by_group)):
        rr = [x for x, _ in by_group[gi]]
        cc = [c for _, c in by_group[gi]]
        assert r.time[i].tolist() == class_sweep_by_ns(rr, cc, k)


@PROPERTY
@given(
    with_classes(st.one_of(extreme_intervals(near_max=True), extreme_intervals(near_max=False)), 3)
)
def test_extreme_values_match_breakpoints(case):
    k, rows, classes = case
    s = [a for a, _ in rows]
    e = [b for _, b in rows]
    assert ops.class_sweep(s, e, classes, k).tolist() == class_sweep_by_breakpoints(
        rows, classes, k
    )


def test_span_overflow_is_an_error():
    with pytest.raises(OverflowError):
        ops.class_sweep([INT64_MIN, INT64_MAX - 1], [INT64_MIN + 1, INT64_MAX], [0, 1], 2)
    with pytest.raises(OverflowError):
        ops.grouped_class_sweep(
            [4, 4], [INT64_MIN, INT64_MAX - 1], [INT64_MIN + 1, INT64_MAX], [0, 1], 2
        )
    # separate groups each fit
    g = ops.grouped_class_sweep(
        [4, 5], [INT64_MIN, INT64_MAX - 1], [INT64_MIN + 1, INT64_MAX], [0, 1], 2
    )
    assert g.time.tolist() == [[0, 1, 0, 0], [0, 0, 1, 0]]
