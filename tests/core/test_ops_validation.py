"""hta_fast.ops argument handling: lengths, dtypes, shapes, empty inputs, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast import ops

I64 = np.int64


def three(n=3):
    return np.arange(n, dtype=I64), np.arange(n, dtype=I64), np.arange(n, dtype=I64) + 1


CALLS = {
    "union": lambda s, e: ops.union(s, e),
    "total_length": lambda s, e: ops.total_length(s, e),
    "intersect": lambda s, e: ops.intersect(s, e, [0], [1]),
    "difference": lambda s, e: ops.difference([0], [1], s, e),
    "grouped_union": lambda s, e: ops.grouped_union(np.zeros(len(s), I64), s, e),
    "grouped_total": lambda s, e: ops.grouped_total(np.zeros(len(e), I64), s, e),
    "class_sweep": lambda s, e: ops.class_sweep(s, e, np.zeros(len(s), np.uint8), 1),
    "grouped_class_sweep": lambda s, e: ops.grouped_class_sweep(
        np.zeros(len(s), I64), s, e, np.zeros(len(s), np.uint8), 1
    ),
    "group_gaps": lambda s, e: ops.group_gaps(np.zeros(len(s), I64), s, e),
    "step_counter": lambda s, e: ops.step_counter(np.zeros(len(s), I64), s, e),
    "weighted_stats": lambda s, e: ops.weighted_stats(np.zeros(len(s), I64), s, e),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_mismatched_lengths(name):
    with pytest.raises(ValueError, match="rows"):
        CALLS[name](np.arange(3, dtype=I64), np.arange(2, dtype=I64))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_two_dimensional_input(name):
    with pytest.raises(ValueError, match="one-dimensional"):
        CALLS[name](np.zeros((2, 2), I64), np.zeros((2, 2), I64))


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"weighted_stats", "step_counter"}))
def test_float_times_rejected(name):
    with pytest.raises(TypeError, match="integers"):
        CALLS[name](np.array([0.0, 1.5]), np.array([1.0, 2.0]))


def test_empty_inputs():
    for r in (ops.union([], []), ops.intersect([], [], [], []), ops.difference([], [], [1], [2])):
        assert r.starts.dtype == I64 and r.starts.size == 0 and r.ends.size == 0
    assert ops.total_length([], []) == 0
    assert all(a.size == 0 for a in ops.grouped_union([], [], []))
    assert all(a.size == 0 for a in ops.grouped_total([], [], []))
    assert all(a.size == 0 for a in ops.group_gaps([], [], []))
    st = ops.step_counter([], [], np.array([], I64))
    assert all(a.size == 0 for a in st) and st.value.dtype == I64
    assert ops.step_counter([], [], []).value.dtype == np.float64  # numpy reads [] as float64
    ws = ops.weighted_stats([], [], [], quantiles=[0.5], thresholds=[1.0])
    assert (
        ws.groups.size == 0 and ws.quantiles.shape == (0, 1) and ws.time_at_or_above.shape == (0, 1)
    )
    assert ops.weighted_stats([], [], [], end_ts=5).groups.size == 0
    assert ops.class_sweep([], [], [], 2).tolist() == [0, 0, 0, 0]


def test_narrow_and_unsigned_ints_coerced():
    s32 = np.array([5, 0, 3], np.int32)
    e16 = np.array([8, 4, 5], np.uint16)
    r = ops.union(s32, e16)
    assert r.starts.dtype == I64 and list(zip(r.starts, r.ends)) == [(0, 8)]
    assert ops.class_sweep(s32, e16, np.array([0, 1, 1], np.int64), 2).tolist() == [0, 3, 5, 0]
    assert ops.union(np.array([1], np.uint64), np.array([2], np.uint64)).ends.tolist() == [2]


def test_out_of_range_ints_rejected():
    with pytest.raises(ValueError, match="range of int64"):
        ops.union(np.array([2**63], np.uint64), np.array([2**64 - 1], np.uint64))
    with pytest.raises(ValueError, match="range of uint8"):
        ops.class_sweep([0], [1], [256], 2)  # would wrap to class 0
    with pytest.raises(ValueError, match="range of uint8"):
        ops.class_sweep([0], [1], [-1], 2)


def test_class_checks():
    with pytest.raises(ValueError, match=r"classes\[1\] = 2"):
        ops.class_sweep([0, 1], [1, 2], [0, 2], 2)
    with pytest.raises(ValueError, match="n_classes"):
        ops.class_sweep([0], [1], [0], 9)
    with pytest.raises(ValueError, match="n_classes"):
        ops.grouped_class_sweep([0], [0], [1], [0], -1)
    with pytest.raises(TypeError):
        ops.class_sweep([0], [1], [0], 2.0)
    with pytest.raises(TypeError, match="integers"):
        ops.class_sweep([0], [1], [0.0], 2)


def test_step_counter_dtypes():
    assert ops.step_counter([0], [0], np.array([3], np.int8)).value.dtype == I64
    assert ops.step_counter([0], [0], np.array([1.5], np.float32)).value.dtype == np.float64
    with pytest.raises(TypeError, match="delta"):
        ops.step_counter([0], [0], ["x"])


def test_weighted_stats_checks():
    with pytest.raises(ValueError, match="sorted"):
        ops.weighted_stats([0, 0], [5, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="sorted"):
        ops.weighted_stats([1, 0], [0, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="before the group's last ts"):
        ops.weighted_stats([0, 0], [0, 10], [1.0, 2.0], end_ts=5)
    with pytest.raises(ValueError, match="2 groups"):
        ops.weighted_stats([0, 1], [0, 10], [1.0, 2.0], end_ts=[20])
    with pytest.raises(ValueError, match="NaN"):
        ops.weighted_stats([0], [0], [np.nan])
    with pytest.raises(ValueError, match="quantiles"):
        ops.weighted_stats([0], [0], [1.0], quantiles=[1.5])
    with pytest.raises(ValueError, match="quantiles"):
        ops.weighted_stats([0], [0], [1.0], quantiles=[np.nan])
    with pytest.raises(ValueError, match="thresholds"):
        ops.weighted_stats([0], [0], [1.0], thresholds=[np.nan])
    # int values become float64; a scalar quantile is a list of one
    s = ops.weighted_stats([0, 0], [0, 4], np.array([2, 6], np.int32), end_ts=8, quantiles=0.5)
    assert s.mean.tolist() == [4.0] and s.quantiles.tolist() == [[2.0]]


def test_results_own_their_memory():
    s = np.array([3, 0], I64)
    r = ops.union(s, s + 1)
    s[:] = 100
    assert r.starts.tolist() == [0, 3]
    assert r.starts.flags["WRITEABLE"]
