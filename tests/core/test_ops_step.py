"""hta_fast.ops.step_counter and weighted_stats against exact models."""

from __future__ import annotations

import math

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
    step_counter_model,
    weighted_stats_by_ns,
)

# Multiples of 1/16: sums and q * duration are exact in float64, so exact comparisons hold.
QUANTILES = st.lists(st.integers(0, 16).map(lambda k: k / 16), max_size=5)
THRESHOLDS = st.lists(st.integers(-12, 12).map(lambda k: k / 4), max_size=4)


# --- step_counter -----------------------------------------------------------------------
def test_queue_length_known():
    # launches at 0, 1, 2 (+1); kernels start at 5, 5, 9 (-1); another stream (group 1)
    group = [0, 0, 0, 0, 0, 0, 1, 1]
    ts = [0, 1, 2, 5, 5, 9, 3, 4]
    delta = [1, 1, 1, -1, -1, -1, 1, -1]
    r = ops.step_counter(group, ts, delta)
    assert r.value.dtype == np.int64
    assert list(zip(r.group.tolist(), r.ts.tolist(), r.value.tolist())) == [
        (0, 0, 1),
        (0, 1, 2),
        (0, 2, 3),
        (0, 5, 1),
        (0, 9, 0),
        (1, 3, 1),
        (1, 4, 0),
    ]


def test_float_deltas_keep_float():
    r = ops.step_counter([0, 0, 0], [10, 0, 10], [-2.5, 2.5, 1.0])
    assert r.value.dtype == np.float64
    assert r.ts.tolist() == [0, 10] and r.value.tolist() == [2.5, 1.0]


def test_cancelling_changes_still_give_a_row():
    r = ops.step_counter([0, 0], [5, 5], [1, -1])
    assert r.ts.tolist() == [5] and r.value.tolist() == [0]


def test_int_overflow_is_an_error():
    with pytest.raises(OverflowError):
        ops.step_counter([0, 0], [0, 1], [INT64_MAX, 1])
    r = ops.step_counter([0, 0], [0, 0], [INT64_MAX, INT64_MIN])  # applied in row order: fits
    assert r.value.tolist() == [-1]


step_rows = st.lists(
    st.tuples(st.integers(0, 2), st.integers(-8, 8), st.integers(-3, 3)), max_size=20
)


@PROPERTY
@given(step_rows)
def test_step_counter_matches_model(rows):
    r = ops.step_counter(*columns(rows, 3))
    assert list(zip(r.group.tolist(), r.ts.tolist(), r.value.tolist())) == step_counter_model(rows)


@PROPERTY
@given(step_rows)
def test_step_counter_float_matches_model(rows):
    g, t, d = columns(rows, 3)
    r = ops.step_counter(g, t, np.array(d, dtype=np.float64) / 4)
    assert r.value.dtype == np.float64
    want = step_counter_model(rows)
    assert list(zip(r.group.tolist(), r.ts.tolist(), r.value.tolist())) == [
        (a, b, c / 4) for a, b, c in want
    ]


@PROPERTY
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(-(2**40), 2**40)), max_size=12
    )
)
def test_step_counter_extreme_ts(rows):
    shifted = [(g, INT64_MAX - t if g else INT64_MIN + t, d) for g, t, d in rows]
    r = ops.step_counter(*columns(shifted, 3))
    assert list(zip(r.group.tolist(), r.ts.tolist(), r.value.tolist())) == step_counter_model(
        shifted
    )


# --- weighted_stats -----------------------------------------------------------------------
def test_weighted_vs_change_point_mean():
    # queue length 10 for 1 ns, then 0 for 99 ns: per change point the mean is 5
    s = ops.weighted_stats(
        [0, 0], [0, 1], [10, 0], end_ts=100, quantiles=[0.5, 0.99, 1.0], thresholds=[1, 10, 11]
    )
    assert s.groups.tolist() == [0] and s.duration.tolist() == [100]
    assert s.mean.tolist() == [0.1] and s.change_point_mean.tolist() == [5.0]
    assert s.min.tolist() == [0.0] and s.max.tolist() == [10.0]
    assert s.quantiles.tolist() == [[0.0, 0.0, 10.0]]
    assert s.time_at_or_above.tolist() == [[1, 1, 0]]


def test_ends_per_group_and_default():
    g, t, v = [3, 3, 8], [0, 10, 5], [1.0, 2.0, 4.0]
    s = ops.weighted_stats(g, t, v, end_ts=[20, 9])
    assert s.groups.tolist() == [3, 8] and s.duration.tolist() == [20, 4]
    assert s.mean.tolist() == [1.5, 4.0]
    assert s.quantiles.shape == (2, 0) and s.time_at_or_above.shape == (2, 0)
    d = ops.weighted_stats(g, t, v)  # each group ends at its last ts
    assert d.duration.tolist() == [10, 0]
    assert (
        d.mean[0] == 1.0 and math.isnan(d.mean[1]) and math.isnan(d.min[1]) and math.isnan(d.max[1])
    )
    assert d.change_point_mean.tolist() == [1.5, 4.0]


def test_bandwidth_pipeline():
    # copies: [0,10) at 2 GB/s, [5,15) at 3 GB/s -> 2 on [0,5), 5 on [5,10), 3 on [10,15)
    starts, ends, bw = np.array([0, 5]), np.array([10, 15]), np.array([2.0, 3.0])
    step = ops.step_counter(
        np.zeros(4, np.int64), np.concatenate([starts, ends]), np.concatenate([bw, -bw])
    )
    s = ops.weighted_stats(*step, end_ts=None, quantiles=[0.5], thresholds=[3.0])
    assert s.duration.tolist() == [15] and s.mean.tolist() == [10 / 3]
    assert s.max.tolist() == [5.0] and s.min.tolist() == [2.0]  # the final 0 holds for no time
    assert s.quantiles.tolist() == [[3.0]] and s.time_at_or_above.tolist() == [[10]]


QUARTERS = st.integers(-12, 12).map(lambda k: k / 4)
# Whole numbers, some far apart: counters take the per-value path, spread ones the sort.
WHOLE = st.one_of(st.integers(-3, 3), st.integers(-5000, 5000)).map(float)


def series(draw_groups=3, values=QUARTERS):
    """rows sorted by (group, ts) with repeated ts, plus one end per group at or after its last ts."""
    row = st.tuples(st.integers(0, draw_groups - 1), st.integers(-10, 10), values)
    return (
        st.lists(row, min_size=0, max_size=14)
        .map(sorted)
        .flatmap(
            lambda rows: st.tuples(
                st.just(rows),
                st.lists(
                    st.integers(0, 6),
                    min_size=len({r[0] for r in rows}),
                    max_size=len({r[0] for r in rows}),
                ),
            )
        )
    )


@PROPERTY
@given(series(), QUANTILES, THRESHOLDS)
def test_weighted_stats_matches_model(case, quantiles, thresholds):
    check_weighted_stats(case, quantiles, thresholds)


@PROPERTY
@given(series(values=WHOLE), QUANTILES, st.lists(st.integers(-6000, 6000).map(float), max_size=4))
def test_weighted_stats_of_whole_values_matches_model(case, quantiles, thresholds):
    check_weighted_stats(case, quantiles, thresholds)


def check_weighted_stats(case, quantiles, thresholds):
    rows, extra = case
    last = {}
    for g, t, _ in rows:
        last[g] = t
    ends = [last[g] + x for g, x in zip(sorted(last), extra)]
    s = ops.weighted_stats(
        *columns(rows, 3), end_ts=ends, quantiles=quantiles, thresholds=thresholds
    )
    want = weighted_stats_by_ns(rows, ends, quantiles, thresholds)
    assert s.groups.tolist() == [w["group"] for w in want]
    assert s.duration.tolist() == [w["duration"] for w in want]
    assert s.quantiles.shape == (len(want), len(quantiles))
    for k, w in enumerate(want):
        assert s.change_point_mean[k] == pytest.approx(float(w["change_point_mean"]), abs=1e-12)
        assert s.time_at_or_above[k].tolist() == w["time_at_or_above"]
        if w["duration"] == 0:
            assert all(math.isnan(x) for x in (s.mean[k], s.std[k], s.min[k], s.max[k]))
            assert all(math.isnan(x) for x in s.quantiles[k])
        else:
            assert s.mean[k] == pytest.approx(float(w["mean"]), abs=1e-12)
            assert s.std[k] == pytest.approx(w["std"], rel=1e-9, abs=1e-9)
            assert (s.min[k], s.max[k]) == (w["min"], w["max"])
            assert s.quantiles[k].tolist() == w["quantiles"]


@PROPERTY
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(-5, 5)), min_size=1, max_size=10),
    st.booleans(),
)
def test_weighted_stats_extreme_ts(rows, near_max):
    base = INT64_MAX - 40 if near_max else INT64_MIN
    rows = sorted((0, base + t, float(v)) for t, v in rows)
    end = base + 40
    s = ops.weighted_stats(*columns(rows, 3), end_ts=end, quantiles=[0.5], thresholds=[0.0])
    w = weighted_stats_by_ns(rows, [end], [0.5], [0.0])[0]
    assert s.duration.tolist() == [w["duration"]]
    assert s.mean[0] == pytest.approx(float(w["mean"]), abs=1e-12)
    assert s.quantiles.tolist() == [w["quantiles"]]
    assert s.time_at_or_above.tolist() == [w["time_at_or_above"]]


def test_window_overflow_is_an_error():
    with pytest.raises(OverflowError):
        ops.weighted_stats([0], [INT64_MIN], [1.0], end_ts=INT64_MAX)
