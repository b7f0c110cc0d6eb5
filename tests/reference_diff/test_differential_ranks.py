"""The compat stragglers, trace diff, CUPTI counters and memory timeline against the
reference tool's results on the shared traces (tests/reference/reference_results)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hta_fast.compat import TraceAnalysis
from hta_fast.compat.memory import MemoryAnalysis
from hta_fast.compat.trace_diff import TraceDiff
from tests.reference.reference_results import reference_results

pytestmark = pytest.mark.reference  # runs the reference tool

# Folders the reference loads (the trace folders of ../shared/traces).
FOLDERS = [
    "hta/call_stack",
    "hta/cpu_only",
    "hta/trace_file_list",
    "hta/triton_example",
    "hta/amd_trace",
    "hta/critical_path/cuda_event_sync",
    "hta/critical_path/cuda_event_sync_multi_stream",
    "hta/critical_path/simple_add",
    "hta/critical_path/alexnet",
    "hta/_historical/with_gpu_user_annotation",
    "hta/cupti_profiler",
    "hta/rank_non_gpu",
    "hta/timeline_analysis",
    "hta/trace_filter",
    "hta/trace_compare/test",
    "hta/nccl_parser_config",
    "hta/ns_resolution_trace",
    "param_dlrm_8rank",
    "hta/df_index_resolver",
    "hta/mtia_trace_single_rank",
    "hta/mtia_inference_trace",
    "hta/negative_queue_length_values_check",
    "hta/trace_diff/control",
    "hta/trace_diff/test",
    "hta/mixed_files",
    "hta/distributed_info_unavailable",
    "hta/rank_unavailable",
]
DIFF_PAIRS = [
    ("hta/trace_compare/base", "hta/trace_compare/test"),
    ("hta/trace_diff/control", "hta/trace_diff/test"),
]


def _ref(traces_dir, folder, diff_with=None):
    return reference_results(
        traces_dir / folder, diff_with=None if diff_with is None else traces_dir / diff_with
    )


# --- stragglers ---------------------------------------------------------------------------
@pytest.mark.parametrize("folder", ["param_dlrm_8rank", "hta/trace_filter"])
def test_potential_stragglers(traces_dir, folder):
    ref = _ref(traces_dir, folder)
    ours = TraceAnalysis(trace_dir=str(traces_dir / folder)).get_potential_stragglers()
    # Equal as sets: the reference orders tied ranks by an unstable sort.
    assert sorted(ours) == sorted(ref["potential_stragglers"])
    assert len(ours) == len(set(ours)) == 2


def test_potential_stragglers_last_step_is_available_on_request(traces_dir):
    a = TraceAnalysis(trace_dir=str(traces_dir / "hta/trace_filter"))
    ref = _ref(traces_dir, "hta/trace_filter")
    assert ref["profiler_steps"] == [551]  # the reference drops 552 and refuses it
    assert len(a.get_potential_stragglers(profiler_steps=[552])) == 2
    with pytest.raises(ValueError):
        a.get_potential_stragglers(profiler_steps=[9999])


# --- trace diff ---------------------------------------------------------------------------
@pytest.mark.parametrize("control, test", DIFF_PAIRS)
@pytest.mark.parametrize("short", [False, True])
def test_compare_traces(traces_dir, control, test, short):
    ref = _ref(traces_dir, control, test)["trace_diff_short_names" if short else "trace_diff"]
    ours = TraceDiff.compare_traces(
        str(traces_dir / control), str(traces_dir / test), use_short_name=short
    )
    assert list(ours.columns) == list(ref.columns)
    assert ours.index.name == ref.index.name
    assert list(ours.index) == list(ref.index)
    pd.testing.assert_frame_equal(
        ours,
        ref,
        check_dtype=False,
        check_index_type=False,
        check_column_type=False,
        atol=0.1,
        rtol=0,
    )


@pytest.mark.parametrize("control, test", DIFF_PAIRS)
def test_ops_diff(traces_dir, control, test):
    ref = _ref(traces_dir, control, test)["ops_diff"]
    ours = TraceDiff.ops_diff(str(traces_dir / control), str(traces_dir / test))
    assert ours == ref


def test_compare_traces_takes_trace_analysis_with_every_step(traces_dir):
    control, test = DIFF_PAIRS[1]
    ref = _ref(traces_dir, control, test)["trace_diff"]
    a = TraceAnalysis(trace_dir=str(traces_dir / control))
    b = TraceAnalysis(trace_dir=str(traces_dir / test))
    ours = TraceDiff.compare_traces(a, b)
    pd.testing.assert_frame_equal(
        ours,
        ref,
        check_dtype=False,
        check_index_type=False,
        check_column_type=False,
        atol=0.1,
        rtol=0,
    )


# --- CUPTI counters -----------------------------------------------------------------------
def _plain(v):
    return list(v) if isinstance(v, (list, tuple, np.ndarray)) else v


@pytest.mark.parametrize("folder", FOLDERS)
def test_cupti_counter_data(traces_dir, folder):
    ref = _ref(traces_dir, folder)["cupti_counter_data"]
    a = TraceAnalysis(trace_dir=str(traces_dir / folder))
    ours = a.get_cupti_counter_data_with_operators(ranks=a.traces.ranks)
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert len(o) == len(r)
        assert set(o.columns) <= set(r.columns)
        for c in o.columns:
            assert [_plain(x) for x in o[c]] == [_plain(x) for x in r[c]], c


def test_cupti_counter_data_found_on_the_cupti_trace(traces_dir):
    ref = _ref(traces_dir, "hta/cupti_profiler")["cupti_counter_data"]
    assert len(ref) == 1 and len(ref[0]) == 77  # the comparison above is not vacuous


# --- memory timeline ----------------------------------------------------------------------
def test_memory_timeline(traces_dir):
    ref = _ref(traces_dir, "hta/memory_analysis")["memory_timeline"]["memory_timeline.raw.gz"]
    ours = MemoryAnalysis(
        traces_dir / "hta/memory_analysis/memory_timeline.raw.gz"
    ).get_memory_timeline()
    # The reference keeps a row for the allocations made before profiling and another for
    # the first timestamp, both at the same time; ours has one row per timestamp: the
    # state after every entry of that time.
    assert len(ref) == len(ours) + 1 and ref["time"][0] == ref["time"][1]
    last = ref.groupby("time", sort=True).tail(1).reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, last, check_dtype=False, check_column_type=False)


def test_compare_traces_ns_trace_within_the_reference_rounding(traces_dir):
    """nccl_parser_config has float-ns timestamps and GPU annotations: counts equal (GPU
    annotations included), and each of the reference's durations is rounded down by less
    than 2 µs (ceil of the start, floor of the end), so ours - ref lies in [0, 2 µs x count)."""
    folder = "hta/nccl_parser_config"
    ref = _ref(traces_dir, folder, folder)["trace_diff"]
    ours = TraceDiff.compare_traces(str(traces_dir / folder), str(traces_dir / folder))
    assert list(ours.index) == list(ref.index)
    assert (ours["Control_counts"] == ref["Control_counts"]).all()
    assert (ours["Test_counts"] == ref["Test_counts"]).all()
    assert "## forward ##" in ours.index
    d = ours["Control_total_duration"] - ref["Control_total_duration"]
    assert (d >= -1e-6).all() and (d < 2 * ours["Control_counts"]).all()
    assert (d > 0).any()  # the rounding shows on this trace
