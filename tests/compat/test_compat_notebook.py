"""The reference's documented notebook flow runs unchanged on the compat facade: construct a
TraceAnalysis on a trace folder, then call every method. Only the import changes."""

import pandas as pd

from hta_fast.compat import TraceAnalysis, TraceDiff


def test_notebook_flow_on_trace_filter(traces_dir, tmp_path):
    folder = traces_dir / "hta" / "trace_filter"
    analyzer = TraceAnalysis(trace_dir=str(folder))

    temporal = analyzer.get_temporal_breakdown()
    assert list(temporal["rank"]) == [0, 1]
    idle, stats = analyzer.get_idle_time_breakdown(show_idle_interval_stats=True)
    assert {"host_wait", "kernel_wait", "other"} >= set(idle["idle_category"])
    assert stats is not None and len(stats) > 0
    kernel_type, kernel_metrics = analyzer.get_gpu_kernel_breakdown()
    assert abs(kernel_type["percentage"].sum() - 100) < 0.5 and len(kernel_metrics) > 0
    assert len(analyzer.get_comm_comp_overlap()) == 2

    # Like the reference, methods with a `ranks` parameter default to rank 0.
    assert set(analyzer.get_queue_length_time_series()) == {0}
    series = analyzer.get_queue_length_time_series(ranks=[0, 1])
    assert set(series) == {0, 1}
    assert isinstance(analyzer.get_queue_length_summary(), pd.DataFrame)
    analyzer.get_time_spent_blocked_on_full_queue(series)
    assert set(analyzer.get_memory_bw_time_series(ranks=[0, 1])) == {0, 1}
    assert isinstance(analyzer.get_memory_bw_summary(), pd.DataFrame)

    launches = analyzer.get_cuda_kernel_launch_stats(ranks=[0, 1])
    assert set(launches) == {0, 1} and len(launches[0]) > 0
    ops = analyzer.get_aten_op_kernels_and_delay(ranks=[0, 1])
    assert set(ops) == {0, 1}
    # trace_filter has no GPU annotations: None, as the reference returns
    assert analyzer.get_gpu_kernels_with_user_annotations(rank=0) is None
    breakdown = analyzer.get_gpu_user_annotation_breakdown(use_gpu_annotation=False)
    assert isinstance(breakdown, pd.DataFrame) and len(breakdown) > 0
    steps = analyzer.get_profiler_steps()
    assert steps == sorted(steps) and len(steps) >= 1
    assert set(analyzer.get_potential_stragglers()) <= {0, 1}
    assert analyzer.get_cupti_counter_data_with_operators() == []  # no CUPTI counters here
    patterns = analyzer.get_frequent_cuda_kernel_sequences(
        operator_name="aten::linear", output_dir=str(tmp_path)
    )
    assert isinstance(patterns, pd.DataFrame)

    diff = TraceDiff.compare_traces(analyzer, analyzer)
    assert (diff["diff_counts"] == 0).all()
