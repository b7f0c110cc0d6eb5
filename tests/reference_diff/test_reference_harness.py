"""The reference harness runs the reference tool (Holistic Trace Analysis) on a real trace and
reads its results back: the base of the differential tests.

It needs ``.venv-ref`` (``make .venv-ref/.deps``, which ``make test`` runs first) and the real
traces in ../shared/traces; without either it fails with a message saying what is missing.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.reference.reference_results import (
    ReferenceUnavailable,
    reference_python,
    reference_results,
)

pytestmark = pytest.mark.reference  # runs the reference tool

TEMPORAL_COLUMNS = [
    "rank",
    "idle_time(us)",
    "compute_time(us)",
    "non_compute_time(us)",
    "kernel_time(us)",
    "idle_time_pctg",
    "compute_time_pctg",
    "non_compute_time_pctg",
]


@pytest.fixture(scope="module")
def trace_filter_results(traces_dir):
    try:
        reference_python()
    except ReferenceUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    return reference_results(
        traces_dir / "hta" / "trace_filter",
        analyses=[
            "temporal_breakdown",
            "profiler_steps",
            "idle_time_breakdown",
            "queue_length_summary",
        ],
        timeout=600,
    )


def test_temporal_breakdown_columns(trace_filter_results):
    df = trace_filter_results["temporal_breakdown"]
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == TEMPORAL_COLUMNS
    assert df["rank"].tolist() == [0, 1]
    for row in df.itertuples(index=False):
        kernel_time = row[4]
        assert kernel_time > 0
        # idle + compute + non-compute add up to the kernel time, by the reference's definition
        assert math.isclose(row[1] + row[2] + row[3], kernel_time)


def test_results_round_trip(trace_filter_results):
    res = trace_filter_results
    assert res.index["load"]["status"] == "ok"
    assert res.index["load"]["ranks"] == [0, 1]
    assert not res.errors, res.errors
    # the reference drops the last profiler step (552) at load time
    assert res["profiler_steps"] == [551]
    breakdown, stats = res["idle_time_breakdown"]
    assert stats is None
    assert list(breakdown.columns) == [
        "rank",
        "stream",
        "idle_category",
        "idle_time",
        "idle_time_ratio",
    ]
    # describe() output keeps its MultiIndex columns and (rank, stream) index
    summary = res["queue_length_summary"]
    assert isinstance(summary.columns, pd.MultiIndex)
    assert summary.index.names == ["rank", "stream"]
    assert ("queue_length", "max") in summary.columns
    for name in ("temporal_breakdown", "idle_time_breakdown", "queue_length_summary"):
        assert res.seconds[name] >= 0


def test_cache_is_reused(trace_filter_results, traces_dir):
    again = reference_results(
        traces_dir / "hta" / "trace_filter",
        analyses=[
            "temporal_breakdown",
            "profiler_steps",
            "idle_time_breakdown",
            "queue_length_summary",
        ],
    )
    assert again.directory == trace_filter_results.directory
    pd.testing.assert_frame_equal(
        again["temporal_breakdown"], trace_filter_results["temporal_breakdown"]
    )
