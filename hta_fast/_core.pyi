"""Type stub of the compiled module hta_fast._core (csrc/bind/*.cc)."""
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

class FormatError(ValueError):
    """A broken trace; args are (message, byte offset)."""

# register_loader.cc
def string_columns() -> dict[str, list[str]]: ...
def load_file(path: str, threads: int = 0, recover: bool = False, chunk_size: int = 0,
              kernel_class_rules: list[tuple[str, int]] = ...) -> dict[str, Any]: ...
def load_bytes(data: Union[bytes, bytearray, memoryview], threads: int = 0,
               recover: bool = False, chunk_size: int = 0,
               kernel_class_rules: list[tuple[str, int]] = ...) -> dict[str, Any]: ...

# register_arrays.cc: an Arrow validity bitmap (uint8), None when nothing is missing
def validity(values: npt.NDArray[Any], sentinel: Union[int, float]
             ) -> Optional[npt.NDArray[np.uint8]]: ...

# register_ops.cc: the submodule `ops`
class _Ops:
    @staticmethod
    def union(starts: I64, ends: I64) -> tuple[I64, I64]: ...
    @staticmethod
    def total_length(starts: I64, ends: I64) -> int: ...
    @staticmethod
    def intersect(a_starts: I64, a_ends: I64, b_starts: I64, b_ends: I64) -> tuple[I64, I64]: ...
    @staticmethod
    def difference(a_starts: I64, a_ends: I64, b_starts: I64, b_ends: I64
                   ) -> tuple[I64, I64]: ...
    @staticmethod
    def grouped_union(group: I64, starts: I64, ends: I64) -> tuple[I64, I64, I64]: ...
    @staticmethod
    def grouped_total(group: I64, starts: I64, ends: I64) -> tuple[I64, I64]: ...
    @staticmethod
    def class_sweep(starts: I64, ends: I64, classes: npt.NDArray[np.uint8], n_classes: int
                    ) -> I64: ...
    @staticmethod
    def grouped_class_sweep(group: I64, starts: I64, ends: I64,
                            classes: npt.NDArray[np.uint8], n_classes: int
                            ) -> tuple[I64, I64]: ...
    @staticmethod
    def group_order(group: I64, key: I64) -> I64: ...
    @staticmethod
    def group_gaps(group: I64, starts: I64, ends: I64) -> tuple[I64, I64, I64, I64]: ...
    @staticmethod
    def step_counter_f64(group: I64, ts: I64, delta: F64) -> tuple[I64, I64, F64]: ...
    @staticmethod
    def step_counter_i64(group: I64, ts: I64, delta: I64) -> tuple[I64, I64, I64]: ...
    @staticmethod
    def weighted_stats(group: I64, ts: I64, value: F64, end_ts: Optional[I64],
                       quantiles: F64, thresholds: F64) -> dict[str, npt.NDArray[Any]]: ...

ops: _Ops

# register_graph.cc: the submodule `graph`
class _DependencyGraph:
    @property
    def n_events(self) -> int: ...
    @property
    def src(self) -> I64: ...
    @property
    def dst(self) -> I64: ...
    @property
    def type(self) -> npt.NDArray[np.uint8]: ...
    @property
    def measured(self) -> I64: ...
    def calibrate(self) -> tuple[I64, npt.NDArray[np.uint8]]: ...
    def replay(self, weight: I64, skip_types: int = 0, floor: Optional[I64] = None) -> I64: ...
    def critical_path(self, weight: I64, times: I64, skip_types: int = 0,
                      from_node: int = -1) -> I64: ...

class _Graph:
    Graph = _DependencyGraph
    @staticmethod
    def build(ts: I64, dur: I64, lane: I64, is_gpu: npt.NDArray[np.uint8], parent: I64,
              launch: I64, corr: I64, sync_kind: npt.NDArray[np.uint8], wait_lane: I64,
              wait_corr: I64, target_lane: I64, window_start: int) -> _DependencyGraph: ...

graph: _Graph
