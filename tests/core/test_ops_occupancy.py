"""hta_fast.ops.occupancy against a plain Python model: every entry and exit is a row, sorted
by (group, ts, exits, entries, exits of items that entered then, row), with the group's running
count after it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hta_fast import ops
from tests.support._ops_models import INT64_MAX, INT64_MIN, PROPERTY


def model(group, enter, leave):
    n = len(group)
    rows = list(range(2 * n))
    time = [enter[r] if r < n else leave[r - n] for r in rows]

    def tier(r):  # exits, entries, then exits of items that entered at that time
        return 1 if r < n else (2 if leave[r - n] == enter[r - n] else 0)

    rows.sort(key=lambda r: (group[r % n], time[r], tier(r), r))
    level, inside, last = [], 0, None
    for r in rows:
        if group[r % n] != last:
            inside, last = 0, group[r % n]
        inside += 1 if r < n else -1
        level.append(inside)
    return rows, [time[r] for r in rows], level


items = st.lists(
    st.tuples(st.sampled_from([-3, 0, 5, 2**40]), st.integers(-30, 30), st.integers(0, 20)),
    max_size=60,
)


@PROPERTY
@given(items)
def test_matches_model(rows):
    group = [g for g, _, _ in rows]
    enter = [e for _, e, _ in rows]
    leave = [e + d for _, e, d in rows]
    got = ops.occupancy(
        np.array(group, np.int64), np.array(enter, np.int64), np.array(leave, np.int64)
    )
    order, ts, level = model(group, enter, leave)
    n = len(group)
    assert (got.item + n * ~got.entering).tolist() == order
    assert got.group.tolist() == [group[r % n] for r in order]
    assert got.ts.tolist() == ts
    assert got.level.tolist() == level


@PROPERTY
@given(st.lists(st.integers(0, 2), max_size=80), st.lists(st.integers(0, 9), max_size=80))
def test_queue_in_time_order(groups, waits):
    # launches in time order, each started after a wait: the inputs the queue series sees
    n = min(len(groups), len(waits))
    group = np.array(groups[:n], np.int64)
    enter = np.arange(n, dtype=np.int64) * 4
    leave = enter + np.array(waits[:n], np.int64)
    got = ops.occupancy(group, enter, leave)
    assert (got.item + n * ~got.entering).tolist() == model(
        group.tolist(), enter.tolist(), leave.tolist()
    )[0]
    # the level never goes negative and every group ends empty
    assert (got.level >= 0).all()
    last_of_group = np.r_[got.group[1:] != got.group[:-1], True] if n else np.array([], bool)
    assert (got.level[last_of_group] == 0).all()


def test_exit_before_entry_at_one_time():
    # item 0 leaves at 5 as item 1 enters: the queue never holds two
    got = ops.occupancy([7, 7], [0, 5], [5, 9])
    assert got.item.tolist() == [0, 0, 1, 1]
    assert got.entering.tolist() == [True, False, True, False]
    assert got.level.tolist() == [1, 0, 1, 0]


def test_item_in_and_out_at_once():
    # item 1 enters and leaves at 5, when item 0 leaves: no level below zero
    got = ops.occupancy([7, 7], [0, 5], [5, 5])
    assert got.item.tolist() == [0, 0, 1, 1]
    assert got.level.tolist() == [1, 0, 1, 0]


def test_extremes_and_empty():
    got = ops.occupancy([1], [INT64_MIN], [INT64_MAX])
    assert got.ts.tolist() == [INT64_MIN, INT64_MAX]
    assert got.level.tolist() == [1, 0]
    empty = ops.occupancy([], [], [])
    assert empty.item.tolist() == empty.ts.tolist() == empty.level.tolist() == []


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="leave"):
        ops.occupancy([0, 1], [0, 1], [0])
