"""TraceAnalysis: the reference's entry point. Loading and the event selection it implies
live here; every method hands over to the module of its area, which calls hta_fast.analysis
and shapes the result the reference's way."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from ..frame.select import Selection
from ..loading.sets import load_dir
from ..traceset import TraceSet
from . import counters, gpu_time, launches
from . import ranks as ranks_mod  # methods take a `ranks` argument

if TYPE_CHECKING:
    import pandas as pd


class TraceAnalysis:
    """trace_dir: a folder of one trace file per rank; or trace_files: a list of paths or
    {rank: path}. include_last_profiler_step=False (the reference's default) leaves out the
    last profiler step and everything after its start, GPU work by its launch."""

    def __init__(
        self,
        trace_files: Optional[Union[List[str], Dict[int, str]]] = None,
        trace_dir: Optional[str] = None,
        include_last_profiler_step: Optional[bool] = False,
    ) -> None:
        self.trace_dir = trace_dir
        if trace_files is None:
            if trace_dir is None:
                raise ValueError("pass trace_dir or trace_files")
            self.traces: TraceSet = load_dir(trace_dir, skip_non_traces=True)
        elif isinstance(trace_files, dict):
            paths = [
                p if os.path.isabs(p) or trace_dir is None else os.path.join(trace_dir, p)
                for p in trace_files.values()
            ]
            loaded = load_dir(paths, skip_non_traces=True)
            # {rank: path} is taken as given, like the reference.
            by_path = {os.path.abspath(str(t.meta.path)): t for t in loaded.values()}
            self.traces = TraceSet(
                {rank: by_path[os.path.abspath(p)] for rank, p in zip(trace_files, paths)}
            )
        else:
            paths = [
                p if os.path.isabs(p) or trace_dir is None else os.path.join(trace_dir, p)
                for p in trace_files
            ]
            self.traces = load_dir(paths, skip_non_traces=True)
        self.include_last_profiler_step = bool(include_last_profiler_step)
        self.selection = Selection(before_last_step=not self.include_last_profiler_step)

    # --- GPU time (temporal, idle, kernel types, overlap) ------------------------------
    def get_temporal_breakdown(self, visualize: bool = False) -> pd.DataFrame:
        return gpu_time.get_temporal_breakdown(self, visualize=visualize)

    def get_idle_time_breakdown(
        self,
        ranks: Optional[List[int]] = None,
        streams: Optional[List[int]] = None,
        visualize: bool = False,
        visualize_pctg: bool = True,
        show_idle_interval_stats: bool = False,
        consecutive_kernel_delay: int = 30,
    ) -> Tuple[pd.DataFrame, Optional[pd.DataFrame]]:
        return gpu_time.get_idle_time_breakdown(
            self,
            ranks=ranks,
            streams=streams,
            visualize=visualize,
            visualize_pctg=visualize_pctg,
            show_idle_interval_stats=show_idle_interval_stats,
            consecutive_kernel_delay=consecutive_kernel_delay,
        )

    def get_gpu_kernel_breakdown(
        self,
        visualize: bool = False,
        duration_ratio: float = 0.8,
        num_kernels: int = 10,
        include_memory_kernels: bool = True,
        image_renderer: str = "",
    ) -> Tuple[pd.DataFrame, pd.DataFrame]:
        return gpu_time.get_gpu_kernel_breakdown(
            self,
            visualize=visualize,
            duration_ratio=duration_ratio,
            num_kernels=num_kernels,
            include_memory_kernels=include_memory_kernels,
        )

    def get_comm_comp_overlap(self, visualize: bool = False) -> pd.DataFrame:
        return gpu_time.get_comm_comp_overlap(self, visualize=visualize)

    # --- counters (queue length, memory bandwidth, counters in the trace) --------------
    def get_queue_length_time_series(self, ranks: Optional[List[int]] = None) -> Dict:
        return counters.get_queue_length_time_series(self, ranks=ranks)

    def get_queue_length_summary(self, ranks: Optional[List[int]] = None) -> Optional[pd.DataFrame]:
        return counters.get_queue_length_summary(self, ranks=ranks)

    def get_queue_length_summary_from_time_series(
        self, queue_length_dict: Dict
    ) -> Optional[pd.DataFrame]:
        return counters.get_queue_length_summary_from_time_series(self, queue_length_dict)

    def get_time_spent_blocked_on_full_queue(
        self, queue_length_dict: Dict, max_queue_length: int = 1024
    ) -> pd.DataFrame:
        return counters.get_time_spent_blocked_on_full_queue(
            self, queue_length_dict, max_queue_length=max_queue_length
        )

    def get_memory_bw_time_series(self, ranks: Optional[List[int]] = None) -> Dict:
        return counters.get_memory_bw_time_series(self, ranks=ranks)

    def get_memory_bw_summary(self, ranks: Optional[List[int]] = None) -> Optional[pd.DataFrame]:
        return counters.get_memory_bw_summary(self, ranks=ranks)

    def generate_trace_with_counters(
        self,
        time_series: Any = None,
        ranks: Optional[List[int]] = None,
        output_suffix: str = "_with_counters",
    ) -> None:
        return counters.generate_trace_with_counters(
            self, time_series=time_series, ranks=ranks, output_suffix=output_suffix
        )

    # --- launches, operators, annotations, steps ----------------------------------------
    def get_cuda_kernel_launch_stats(
        self,
        ranks: Optional[List[int]] = None,
        runtime_cutoff: int = 50,
        launch_delay_cutoff: int = 100,
        include_memory_events: bool = True,
        visualize: bool = False,
    ) -> Dict[int, pd.DataFrame]:
        return launches.get_cuda_kernel_launch_stats(
            self,
            ranks=ranks,
            runtime_cutoff=runtime_cutoff,
            launch_delay_cutoff=launch_delay_cutoff,
            include_memory_events=include_memory_events,
            visualize=visualize,
        )

    def get_aten_op_kernels_and_delay(
        self, ranks: Optional[List[int]] = None, sort_by: Optional[List[str]] = None
    ) -> Dict[int, pd.DataFrame]:
        return launches.get_aten_op_kernels_and_delay(self, ranks=ranks, sort_by=sort_by)

    def get_frequent_cuda_kernel_sequences(
        self,
        operator_name: str,
        output_dir: str,
        min_pattern_len: int = 3,
        rank: int = 0,
        top_k: int = 5,
        visualize: bool = False,
        compress_other_kernels: bool = True,
    ) -> pd.DataFrame:
        return launches.get_frequent_cuda_kernel_sequences(
            self,
            operator_name,
            output_dir,
            min_pattern_len=min_pattern_len,
            rank=rank,
            top_k=top_k,
            visualize=visualize,
            compress_other_kernels=compress_other_kernels,
        )

    def get_gpu_kernels_with_user_annotations(
        self, rank: int, expand_names: bool = True, shorten_names: bool = True
    ) -> Optional[pd.DataFrame]:
        return launches.get_gpu_kernels_with_user_annotations(
            self, rank, expand_names=expand_names, shorten_names=shorten_names
        )

    def get_gpu_user_annotation_breakdown(
        self,
        use_gpu_annotation: bool = True,
        visualize: bool = False,
        duration_ratio: float = 0.8,
        num_kernels: int = 1000,
        allowlist_patterns: Optional[List[str]] = None,
        image_renderer: Optional[str] = None,
    ) -> Optional[pd.DataFrame]:
        return launches.get_gpu_user_annotation_breakdown(
            self,
            use_gpu_annotation=use_gpu_annotation,
            visualize=visualize,
            duration_ratio=duration_ratio,
            num_kernels=num_kernels,
            allowlist_patterns=allowlist_patterns,
        )

    def get_profiler_steps(self) -> List[int]:
        return launches.get_profiler_steps(self)

    # --- across ranks and extra data ----------------------------------------------------
    def get_potential_stragglers(
        self,
        profiler_steps: Optional[List[int]] = None,
        num_candidates: int = 2,
        visualize: bool = False,
    ) -> List[int]:
        return ranks_mod.get_potential_stragglers(
            self, profiler_steps=profiler_steps, num_candidates=num_candidates, visualize=visualize
        )

    def get_cupti_counter_data_with_operators(
        self, ranks: Optional[List[int]] = None
    ) -> List[pd.DataFrame]:
        return ranks_mod.get_cupti_counter_data_with_operators(self, ranks=ranks)
