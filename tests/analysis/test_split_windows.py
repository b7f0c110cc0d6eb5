"""The step-time breakdown's split of each step window among its categories
(analysis.tensorboard.step_breakdown.split_windows) against its definition: the window's
time, category by category in order, takes what each category's intervals cover of what the
earlier ones left; what none covers is "other"."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast import ops
from hta_fast.analysis.tensorboard.step_breakdown import split_windows
from hta_fast.steps.step_windows import StepWindows, window_totals


def by_definition(windows: StepWindows, intervals) -> np.ndarray:
    out = np.zeros((len(windows.ts), len(intervals) + 1), np.int64)
    free = ops.union(windows.ts, windows.end)
    for k, (starts, ends) in enumerate(intervals):
        mine = ops.intersect(*free, *ops.union(starts, ends))
        out[:, k] = window_totals(windows.ts, windows.end, *mine)
        free = ops.difference(*free, *mine)
    out[:, -1] = window_totals(windows.ts, windows.end, *free)
    return out


interval = st.tuples(st.integers(-20, 220), st.integers(-5, 80))


@settings(max_examples=400, deadline=None)
@given(
    bounds=st.lists(st.integers(0, 200), max_size=10, unique=True),
    categories=st.lists(st.lists(interval, max_size=6), min_size=1, max_size=7),
)
def test_split_windows_is_its_definition(bounds, categories):
    b = np.sort(np.asarray(bounds[: len(bounds) // 2 * 2], np.int64))
    ts, end = b[0::2], b[1::2]
    n = len(ts)
    windows = StepWindows(np.arange(n), ts, end, ts, end, np.zeros(n, np.int64))
    intervals = [
        (np.array([a for a, _ in c], np.int64), np.array([a + d for a, d in c], np.int64))
        for c in categories
    ]
    got = split_windows(windows, intervals)
    assert (got == by_definition(windows, intervals)).all()
    # every window's time is given out exactly once
    assert (got.sum(axis=1) == end - ts).all()


def test_first_category_wins_the_overlap():
    windows = StepWindows(
        *(np.array(v, np.int64) for v in ([1, 2], [0, 100], [50, 200], [0, 100], [50, 200], [0, 0]))
    )
    kernels = (np.array([10]), np.array([40]))
    host = (np.array([0]), np.array([120]))
    got = split_windows(windows, [kernels, host])
    assert got.tolist() == [[30, 20, 0], [0, 20, 80]]
