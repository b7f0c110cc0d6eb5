"""The shortcuts that a report on thousands of ranks takes give what the long ways give:
pool strings read from buffers, NaN as null without pandas, name flags shared between
ranks of one pool (and never between different pools), and the doctor's per-rank totals
of the idle and overlap analyses."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast._arrow import nan_as_null, texts_at
from hta_fast.analysis.idle_time import idle_time_breakdown, idle_time_totals
from hta_fast.analysis.overlap import comm_comp_overlap, overlap_times
from hta_fast.frame import derived
from tests.conftest import TRACES_DIR

DLRM_RANK = TRACES_DIR / "param_dlrm_8rank" / "worker0.pt.trace.json.gz"
CONTROL = TRACES_DIR / "hta" / "trace_diff" / "control" / "control.json.gz"
TEST = TRACES_DIR / "hta" / "trace_diff" / "test" / "test.json.gz"


@settings(deadline=None)
@given(
    st.lists(st.text(alphabet="ab\u00e9\u4e2d", max_size=5), min_size=1, max_size=12),
    st.integers(0, 5),
    st.lists(st.integers(-3, 30), max_size=20),
    st.sampled_from([pa.string(), pa.large_string()]),
)
def test_texts_at_is_take(values, offset, picks, string_type):
    pool = pa.array(values, string_type).slice(min(offset, len(values) - 1))
    ids = np.array([p if p < 0 else p % len(pool) for p in picks], np.int64)
    taken = pool.take(pa.array(np.maximum(ids, 0))).to_pylist() if len(pool) else []
    expected = ["?" if i < 0 else t for i, t in zip(ids.tolist(), taken)]
    assert texts_at(pool, ids, "?") == expected
    assert texts_at(pool, ids, None) == [None if i < 0 else t for i, t in zip(ids, expected)]


def test_texts_at_refuses_what_take_refuses():
    with pytest.raises(IndexError):
        texts_at(pa.array(["a", "b"]), np.array([2]))


@settings(deadline=None)
@given(
    st.lists(st.one_of(st.just(float("nan")), st.integers(-(2**40), 2**40)), max_size=20),
    st.sampled_from([pa.int64(), pa.float64()]),
)
def test_nan_as_null_is_from_pandas(values, arrow_type):
    floats = np.array(values, np.float64)
    got = nan_as_null(floats, arrow_type)
    want = pa.array(floats, arrow_type, from_pandas=True)
    assert got.type == want.type and got.equals(want)


def test_nan_as_null_refuses_a_fraction_for_an_integer():
    with pytest.raises(pa.ArrowInvalid):
        nan_as_null(np.array([1.5]), pa.int64())


@pytest.mark.skipif(not (CONTROL.exists() and TEST.exists()), reason="shared traces missing")
def test_name_flags_follow_each_pool():
    """Alike ranks share flags; a rank of another pool, asked between them, gets its own."""
    one, other, again = hta_fast.load(CONTROL), hta_fast.load(TEST), hta_fast.load(CONTROL)
    assert not one.strings.equals(other.strings)
    for pattern in (r"^aten::", r"nccl|gloo", r"Memcpy", r"^cuda[A-Z]"):
        for trace in (one, other, again):
            fresh = np.asarray(pc.match_substring_regex(trace.strings, pattern), bool)
            np.testing.assert_array_equal(derived.name_flags(trace, pattern), fresh)
    assert derived.pool_digest(one) == derived.pool_digest(again)
    assert derived.pool_digest(one) != derived.pool_digest(other)


@pytest.mark.skipif(not DLRM_RANK.exists(), reason="shared traces missing")
@pytest.mark.parametrize("window", [None, "steps"])
def test_doctor_totals_are_the_analyses_sums(window):
    trace = hta_fast.load(DLRM_RANK)
    if window == "steps":
        ts, dur = trace.column("steps", "ts"), trace.column("steps", "dur")
        window = (int(ts.min()), int((ts + dur).max()))
    idle = idle_time_breakdown(trace, consecutive_kernel_delay=5_000, window=window).table
    cat = np.asarray(idle["idle_category"].to_pylist(), object)
    times = np.asarray(idle["idle_time"].to_pylist(), np.int64)
    assert idle_time_totals(trace, consecutive_kernel_delay=5_000, window=window) == (
        int(times[cat == "host_wait"].sum()),
        int(times.sum()),
    )
    assert times.sum() > 0
    over = comm_comp_overlap(trace, window=window).table
    comm, both = overlap_times(trace, window=window)
    assert (comm, both) == (
        sum(over["comm_time"].to_pylist()),
        sum(over["overlap_time"].to_pylist()),
    )
    assert comm > 0
