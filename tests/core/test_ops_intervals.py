"""hta_fast.ops interval sets: union, total_length, intersect, difference, grouped_union,
grouped_total against per-nanosecond and breakpoint models."""

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
    columns,
    covered,
    extreme_intervals,
    grouped_intervals,
    intervals,
    runs,
    union_by_breakpoints,
)


def pairs_of(result) -> list[tuple[int, int]]:
    return list(zip(result.starts.tolist(), result.ends.tolist()))


def check_normalised(result):
    s, e = result.starts, result.ends
    assert s.dtype == np.int64 and e.dtype == np.int64
    assert np.all(s < e)
    assert np.all(s[1:] > e[:-1])  # sorted, disjoint, never touching


# --- known answers ----------------------------------------------------------------------
def test_union_known():
    r = ops.union([20, 5, 0, 3, 8, 30, 40], [25, 8, 4, 5, 9, 30, 39])
    # [0,4) [3,5) [5,8) [8,9) chain into [0,9); [30,30) and [40,39) are empty
    assert pairs_of(r) == [(0, 9), (20, 25)]
    assert ops.total_length([20, 5, 0, 3, 8], [25, 8, 4, 5, 9]) == 14


def test_nested_and_duplicate():
    assert pairs_of(ops.union([0, 2, 2, 0], [10, 3, 3, 10])) == [(0, 10)]


def test_set_ops_known():
    a = ([0, 20], [10, 30])
    b = ([5, 10, 25], [8, 22, 40])
    assert pairs_of(ops.intersect(*a, *b)) == [(5, 8), (20, 22), (25, 30)]
    assert pairs_of(ops.difference(*a, *b)) == [(0, 5), (8, 10), (22, 25)]
    assert pairs_of(ops.difference(*b, *a)) == [(10, 20), (30, 40)]


def test_grouped_known():
    r = ops.grouped_union([2, 1, 2, 1, 3], [0, 0, 5, 3, 7], [5, 4, 6, 9, 7])
    assert list(zip(r.group.tolist(), r.starts.tolist(), r.ends.tolist())) == [(1, 0, 9), (2, 0, 6)]
    t = ops.grouped_total([2, 1, 2, 1, 3], [0, 0, 5, 3, 7], [5, 4, 6, 9, 7])
    assert t.groups.tolist() == [1, 2, 3] and t.totals.tolist() == [9, 6, 0]


def test_inputs_untouched_and_strided():
    s = np.array([9, 1, 5, 0, 7, 3], dtype=np.int64)
    e = s + 2
    s0, e0 = s.copy(), e.copy()
    r = ops.union(s[::2], e[::2])  # non-contiguous views
    assert pairs_of(r) == [(5, 11)]  # [9,11) [5,7) [7,9) touch
    assert np.array_equal(s, s0) and np.array_equal(e, e0)


# --- properties -------------------------------------------------------------------------
@PROPERTY
@given(intervals())
def test_union_matches_membership(rows):
    s, e = columns(rows, 2)
    r = ops.union(s, e)
    check_normalised(r)
    assert pairs_of(r) == runs(covered(rows))
    assert ops.total_length(s, e) == len(covered(rows))


@PROPERTY
@given(intervals(), st.randoms(use_true_random=False))
def test_union_ignores_order(rows, rnd):
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    assert pairs_of(ops.union(*columns(rows, 2))) == pairs_of(ops.union(*columns(shuffled, 2)))


@PROPERTY
@given(intervals(), intervals())
def test_set_ops_match_membership(a, b):
    ca, cb = covered(a), covered(b)
    args = (*columns(a, 2), *columns(b, 2))
    inter, diff = ops.intersect(*args), ops.difference(*args)
    check_normalised(inter)
    check_normalised(diff)
    assert pairs_of(inter) == runs(ca & cb)
    assert pairs_of(diff) == runs(ca - cb)


@PROPERTY
@given(grouped_intervals())
def test_grouped_match_membership(rows):
    g, s, e = columns(rows, 3)
    by_group = defaultdict(list)
    for gi, si, ei in rows:
        by_group[gi].append((si, ei))
    want = [(gi, a, b) for gi in sorted(by_group) for a, b in runs(covered(by_group[gi]))]
    r = ops.grouped_union(g, s, e)
    assert list(zip(r.group.tolist(), r.starts.tolist(), r.ends.tolist())) == want
    t = ops.grouped_total(g, s, e)
    assert t.groups.tolist() == sorted(by_group)
    assert t.totals.tolist() == [len(covered(by_group[gi])) for gi in sorted(by_group)]


@PROPERTY
@given(
    st.one_of(extreme_intervals(near_max=True), extreme_intervals(near_max=False)),
    st.one_of(extreme_intervals(near_max=True), extreme_intervals(near_max=False)),
)
def test_extreme_values_match_breakpoints(a, b):
    """Near both ends of int64, where the kernel's arithmetic has no room to spare."""
    r = ops.union(*columns(a, 2))
    assert pairs_of(r) == union_by_breakpoints(a)
    assert ops.total_length(*columns(a, 2)) == sum(y - x for x, y in union_by_breakpoints(a))
    ua, ub = union_by_breakpoints(a), union_by_breakpoints(b)
    args = (*columns(a, 2), *columns(b, 2))
    # set ops on breakpoints: a segment is in the result per membership in ua / ub
    cuts = sorted({t for p in ua + ub for t in p})
    inside = lambda u, x, y: any(s <= x and y <= e for s, e in u)  # noqa: E731

    def merge(segs):
        out = []
        for x, y in segs:
            if out and out[-1][1] == x:
                out[-1] = (out[-1][0], y)
            else:
                out.append((x, y))
        return out

    segs = list(zip(cuts, cuts[1:]))
    assert pairs_of(ops.intersect(*args)) == merge(
        [(x, y) for x, y in segs if inside(ua, x, y) and inside(ub, x, y)]
    )
    assert pairs_of(ops.difference(*args)) == merge(
        [(x, y) for x, y in segs if inside(ua, x, y) and not inside(ub, x, y)]
    )


def test_both_ends_of_int64():
    s = [INT64_MIN, INT64_MAX - 10, INT64_MIN + 5]
    e = [INT64_MIN + 10, INT64_MAX, INT64_MIN + 20]
    assert pairs_of(ops.union(s, e)) == [(INT64_MIN, INT64_MIN + 20), (INT64_MAX - 10, INT64_MAX)]
    assert ops.total_length(s, e) == 30  # the lengths fit even though the span does not
    assert ops.grouped_total([0, 0, 0], s, e).totals.tolist() == [30]


def test_length_overflow_is_an_error():
    with pytest.raises(OverflowError):
        ops.total_length([INT64_MIN], [INT64_MAX])
    with pytest.raises(OverflowError):
        ops.grouped_total([1], [INT64_MIN], [1])
    assert ops.total_length([INT64_MIN + 1], [0]) == INT64_MAX  # exactly fits
