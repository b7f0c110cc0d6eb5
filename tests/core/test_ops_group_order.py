"""hta_fast.ops.group_order against np.lexsort, on the inputs it is built for (a few sorted
runs per group: the counting sort and run merging) and on shuffled ones (the sort fallback)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hta_fast import ops
from tests.support._ops_models import INT64_MAX, INT64_MIN, PROPERTY


def expected(group, key):
    return np.lexsort((np.arange(len(key)), key, group)).tolist()


@PROPERTY
@given(st.lists(st.tuples(st.sampled_from([-7, 0, 3, 2**40]), st.integers(-50, 50)), max_size=60))
def test_matches_lexsort(rows):
    group = np.array([g for g, _ in rows], np.int64)
    key = np.array([k for _, k in rows], np.int64)
    assert ops.group_order(group, key).tolist() == expected(group, key)


@PROPERTY
@given(st.lists(st.integers(0, 3), max_size=80), st.integers(1, 40), st.data())
def test_few_sorted_runs(groups, runs, data):
    # keys rising within each of `runs` stretches, as launch and start times of one trace are
    n = len(groups)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=runs)))
    key = np.arange(n, dtype=np.int64) * 3
    for a, b in zip([0] + cuts, cuts + [n]):
        key[a:b] -= 3 * a + data.draw(st.integers(-5, 5))  # each stretch starts again lower
    group = np.array(groups, np.int64)
    assert ops.group_order(group, key).tolist() == expected(group, key)


def test_extremes_and_empty():
    group = np.array([1, 0, 1, 0], np.int64)
    key = np.array([INT64_MAX, INT64_MIN, INT64_MIN, INT64_MAX], np.int64)
    assert ops.group_order(group, key).tolist() == [1, 3, 2, 0]
    assert ops.group_order([], []).tolist() == []


def test_lengths_must_agree():
    import pytest

    with pytest.raises(ValueError, match="key"):
        ops.group_order([0, 1], [0])
