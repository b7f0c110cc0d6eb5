"""Idle time of hta_fast.compat.TraceAnalysis against the reference tool, on every shared
trace folder the reference loads, through the model of the reference in
tests/support/reference_gpu_time.py (see test_differential_gpu_time.py): its idle intervals
run from the previous row's end, and the documented differences show where they change a
number."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hta_fast.frame.select import GPU_WORK_KINDS
from tests.support.reference_gpu_time import (
    FOLDERS,
    each_rank,
    model_idle,
    ours,
    ranks_of,
    ref,
    rounds,
    tie_slack,
    uint32_stream_rows,
)

pytestmark = pytest.mark.reference  # runs the reference tool


# --- idle time -------------------------------------------------------------------------
@pytest.mark.parametrize("folder", FOLDERS)
def test_idle_time(folder):
    res = ref(folder)
    if "idle_time_breakdown_stats" in res.errors:
        # The reference fails on a rank without GPU kernels; we return no rows.
        assert res.errors["idle_time_breakdown_stats"]["type"] == "ValueError"
        got, stats = ours(folder).get_idle_time_breakdown(
            ranks=ranks_of(folder), show_idle_interval_stats=True
        )
        assert got.empty and stats.empty
        return
    want, want_stats = res["idle_time_breakdown_stats"]
    got, got_stats = ours(folder).get_idle_time_breakdown(
        ranks=ranks_of(folder), show_idle_interval_stats=True
    )
    assert list(got.columns) == list(want.columns)
    assert list(got_stats.columns) == list(want_stats.columns)
    assert got_stats.index.name == "idle_category"
    assert got.index.tolist() == want.index.tolist()  # RangeIndex per rank
    for rank in ranks_of(folder):
        # Streams in the reference's order (of their first kernel in the file).
        assert list(dict.fromkeys(got[got["rank"] == rank].stream)) == list(
            dict.fromkeys(want[want["rank"] == rank].stream)
        )
    if not any(len(uint32_stream_rows(t)) for _, t, _ in each_rank(folder)):
        # (a stream 4294967295 makes the reference's column int64; we read it as no stream)
        assert got["stream"].dtype == want["stream"].dtype
    for rank, trace, mask in each_rank(folder):
        r_got, r_want = got[got["rank"] == rank], want[want["rank"] == rank]
        theirs, right = model_idle(trace, mask, True), model_idle(trace, mask, False)
        for (s, c), (v, n) in right.items():
            row = r_got[(r_got.stream == s) & (r_got.idle_category == c)]
            if n == 0 and c != "other":
                assert row.empty
            else:
                assert row.idle_time.iloc[0] == pytest.approx(v, abs=0.011), (s, c)
        no_launch = launchless(trace, mask)
        exact = not rounds(trace) and not no_launch
        slack = 0.011 + (tie_slack(trace, mask) if rounds(trace) else 0)
        for (s, c), (v, _n) in theirs.items():
            row = r_want[(r_want.stream == s) & (r_want.idle_category == c)]
            if not no_launch:  # the model has no launch time for those (see below)
                assert (row.idle_time.iloc[0] if len(row) else 0.0) == pytest.approx(
                    v, abs=slack
                ), (s, c)
        for s in np.unique(r_want.stream):
            tw = r_want[r_want.stream == s].idle_time.sum()
            tg = r_got[r_got.stream == s].idle_time.sum()
            tt = sum(theirs[(int(s), c)][0] for c in ("host_wait", "kernel_wait", "other"))
            tr = sum(right[(int(s), c)][0] for c in ("host_wait", "kernel_wait", "other"))
            assert tw == pytest.approx(tt, abs=slack + 0.05)  # the stream's total idle time
            if math.isclose(tt, tr) and exact:
                # No overlapping kernels on this stream: the same intervals on both sides.
                pd.testing.assert_frame_equal(
                    r_got[r_got.stream == s].reset_index(drop=True),
                    r_want[r_want.stream == s].reset_index(drop=True),
                    check_dtype=False,
                    check_column_type=False,
                )
                gs = got_stats[(got_stats["rank"] == rank) & (got_stats.stream == s)]
                ws = want_stats[(want_stats["rank"] == rank) & (want_stats.stream == s)]
                pd.testing.assert_frame_equal(
                    gs,
                    ws,
                    check_dtype=False,
                    atol=0.011,
                    check_index_type=False,
                    check_column_type=False,
                )
            elif not rounds(trace) and not math.isclose(tt, tr):
                # Overlapping kernels: the reference's negative intervals show.
                assert not math.isclose(tw, tg)


def launchless(trace, mask) -> bool:
    """Whether some kernel has a correlation but no launch (the reference then compares with
    the first event's start)."""
    kind = trace.column("events", "kind")
    keep = (
        np.isin(kind, GPU_WORK_KINDS)
        & (trace.column("events", "partner") < 0)
        & (trace.column("events", "correlation") >= 0)
    )
    if mask is not None:
        keep &= mask
    return bool(keep.any())


def test_idle_difference_overlapping_kernels():
    """negative_queue_length_values_check, stream 27: two kernels overlap; the reference
    measures from the previous row's end, gets a -2 µs interval and subtracts it."""
    got, got_stats = ours("hta/negative_queue_length_values_check").get_idle_time_breakdown(
        show_idle_interval_stats=True
    )
    want, want_stats = ref("hta/negative_queue_length_values_check")["idle_time_breakdown_stats"]
    g = got[(got.stream == 27) & (got.idle_category == "kernel_wait")].idle_time.iloc[0]
    w = want[(want.stream == 27) & (want.idle_category == "kernel_wait")].idle_time.iloc[0]
    assert (g, w) == (1002.0, 1000.0)
    gmin = got_stats[(got_stats.stream == 27)].loc["kernel_wait", "min"]
    wmin = want_stats[(want_stats.stream == 27)].loc["kernel_wait", "min"]
    assert gmin >= 0 and wmin == -2.0


def test_idle_difference_kernels_without_launch():
    """param_dlrm_8rank rank 1: kernels whose launch is not in the trace. The reference
    compares them with the first event's start and calls many host_wait; we cannot tell that
    the host was late, so they are kernel_wait or other. Each stream's total is the same."""
    got, _ = ours("param_dlrm_8rank").get_idle_time_breakdown(ranks=[1])
    want, _ = ref("param_dlrm_8rank")["idle_time_breakdown"]
    want = want[want["rank"] == 1]
    g = got.set_index(["stream", "idle_category"]).idle_time
    w = want.set_index(["stream", "idle_category"]).idle_time
    assert g[(7, "host_wait")] < w[(7, "host_wait")]
    assert g.groupby(level=0).sum().to_dict() == pytest.approx(w.groupby(level=0).sum().to_dict())


def test_idle_threshold_in_microseconds():
    """consecutive_kernel_delay is in µs in the facade: 1000 µs makes more gaps kernel_wait."""
    base, _ = ours("hta/trace_filter").get_idle_time_breakdown()
    wide, _ = ours("hta/trace_filter").get_idle_time_breakdown(consecutive_kernel_delay=1000)
    kw = lambda df: df[df.idle_category == "kernel_wait"].idle_time.sum()  # noqa: E731
    assert kw(wide) > kw(base) > 0
