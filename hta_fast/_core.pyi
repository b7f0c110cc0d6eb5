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
