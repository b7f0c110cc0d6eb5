"""hta_fast.frame.derived: values kept per trace, and per selection mask."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast.frame import derived
from hta_fast.frame.gpu_work import gpu_work
from hta_fast.frame.select import Selection
from tests.analysis.test_analysis_gpu_time import TraceBuilder


def two_kernel_trace():
    b = TraceBuilder()
    b.gpu("a", 0, 10, launch_ts=0)
    b.gpu("b", 40, 10, launch_ts=1)
    return b.load()


def test_remember_computes_once_and_freezes():
    t = two_kernel_trace()
    calls = []
    first = derived.remember(t, "k", lambda: calls.append(1) or np.arange(3))
    assert derived.remember(t, "k", lambda: calls.append(1) or np.arange(3)) is first
    assert calls == [1]
    with pytest.raises(ValueError):
        first[0] = 5


def test_remember_under_keeps_one_value_per_mask():
    t = two_kernel_trace()
    n = len(t.column("events", "ts"))
    a, b = np.ones(n, bool), np.ones(n, bool)
    a.flags.writeable = b.flags.writeable = False
    calls = []

    def compute(tag):
        return lambda: calls.append(tag) or (np.array([tag]),)

    assert derived.remember_under(t, "k", a, compute(1))[0].tolist() == [1]
    assert derived.remember_under(t, "k", a, compute(2))[0].tolist() == [1]  # kept for a
    assert derived.remember_under(t, "k", b, compute(3))[0].tolist() == [3]  # b: its own
    assert derived.remember_under(t, "k", None, compute(4))[0].tolist() == [4]
    # a mask that can still change is never remembered
    w = np.ones(n, bool)
    assert derived.remember_under(t, "k", w, compute(5))[0].tolist() == [5]
    assert derived.remember_under(t, "k", w, compute(6))[0].tolist() == [6]
    assert calls == [1, 3, 4, 5, 6]


def test_gpu_work_shared_per_selection_and_clipped_per_window():
    t = two_kernel_trace()
    mask = Selection(before_last_step=True).event_mask(t)
    assert mask is not None and not mask.flags.writeable
    assert gpu_work(t, mask) is gpu_work(t, mask)
    clipped = gpu_work(t, mask, (5_000, 45_000))
    assert clipped.starts.tolist() == [5_000, 40_000]
    assert clipped.ends.tolist() == [10_000, 45_000]
    assert gpu_work(t, mask).starts.tolist() == [0, 40_000]  # the shared value is untouched
