"""Type stub of the compiled module hta_fast._core (csrc/bind/*.cc)."""

import enum
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str

_I64 = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]
_U8 = npt.NDArray[np.uint8]

# register_errors.cc: error kinds (csrc/io/format_error.h)
class ErrorCode(enum.Enum):
    empty = 0
    not_json = 1
    not_a_trace = 2
    bad_json = 3
    bad_field = 4
    truncated = 5
    corrupt_stream = 6
    unsupported = 7
    too_deep = 8
    too_large = 9
    duplicate_key = 10

class FormatError(ValueError):
    """A broken trace. args are (reason,); the fields say what and where."""

    code: ErrorCode
    offset: Optional[int]  # None: no single byte is to blame
    key: Optional[str]  # the field at fault ("ts", "args.bytes"); None: no one field
    recoverable: bool  # recover=True would read past it
    reason: str

# register_schema.cc: what the columns mean (csrc/trace/tables.h, event_kind.h)
class EventKind(enum.IntEnum):
    other = 0
    cpu_op = 1
    user_annotation = 2
    python_function = 3
    runtime = 4
    driver = 5
    kernel = 6
    memcpy = 7
    memset = 8
    gpu_user_annotation = 9
    sync = 10

class KernelClass(enum.IntEnum):
    NONE = 0
    COMP = 1
    COMM = 2
    MEM = 3
    SYNC = 4

class ColumnRole(enum.Enum):
    plain = 0
    string = 1
    enum = 2
    id = 3
    row = 4

class ColumnSpec:
    @property
    def table(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def role(self) -> ColumnRole: ...
    @property
    def sentinel(self) -> Union[int, float, None]: ...
    @property
    def unit(self) -> Optional[str]: ...
    @property
    def description(self) -> Optional[str]: ...
    @property
    def labels(self) -> list[tuple[int, str]]: ...

def column_specs() -> list[ColumnSpec]: ...
def is_gpu_kind(kind: EventKind) -> bool: ...

STRING_ID_BASE: int

# register_loader.cc
class LoadedTrace:
    @property
    def tables(self) -> dict[str, dict[str, npt.NDArray[Any]]]: ...
    @property
    def string_offsets(self) -> _I64: ...
    @property
    def string_data(self) -> _U8: ...
    @property
    def header(self) -> dict[str, Any]: ...
    @property
    def base_time_ns(self) -> int: ...
    # decompressed size (JSON text, or a Perfetto trace's protobuf)
    @property
    def json_bytes(self) -> int: ...
    @property
    def array_format(self) -> bool: ...
    @property
    def string_id_base(self) -> int: ...
    @property
    def string_id_floor(self) -> int: ...
    @property
    def stats(self) -> list[tuple[str, str, str, int, list[tuple[int, str]]]]: ...
    @property
    def timings(self) -> dict[str, float]: ...

# JSON or a Perfetto protobuf trace, told by content; gzip/zstd unwrapped first
def load_file(
    path: str,
    threads: int = 0,
    recover: bool = False,
    chunk_size: int = 0,
    kernel_class_rules: list[tuple[str, int]] = ...,
) -> LoadedTrace: ...
def load_bytes(
    data: Union[bytes, bytearray, memoryview],
    threads: int = 0,
    recover: bool = False,
    chunk_size: int = 0,
    kernel_class_rules: list[tuple[str, int]] = ...,
) -> LoadedTrace: ...

# register_arrays.cc: an Arrow validity bitmap (uint8), None when nothing is missing
def validity(
    values: npt.NDArray[Any], sentinel: Union[int, float]
) -> Optional[npt.NDArray[np.uint8]]: ...

# register_ops.cc: the submodule `ops`
class _Ops:
    @staticmethod
    def union(starts: _I64, ends: _I64) -> tuple[_I64, _I64]: ...
    @staticmethod
    def total_length(starts: _I64, ends: _I64) -> int: ...
    @staticmethod
    def intersect(
        a_starts: _I64, a_ends: _I64, b_starts: _I64, b_ends: _I64
    ) -> tuple[_I64, _I64]: ...
    @staticmethod
    def difference(
        a_starts: _I64, a_ends: _I64, b_starts: _I64, b_ends: _I64
    ) -> tuple[_I64, _I64]: ...
    @staticmethod
    def grouped_union(group: _I64, starts: _I64, ends: _I64) -> tuple[_I64, _I64, _I64]: ...
    @staticmethod
    def grouped_total(group: _I64, starts: _I64, ends: _I64) -> tuple[_I64, _I64]: ...
    @staticmethod
    def class_sweep(
        starts: _I64, ends: _I64, classes: npt.NDArray[np.uint8], n_classes: int
    ) -> _I64: ...
    @staticmethod
    def grouped_class_sweep(
        group: _I64, starts: _I64, ends: _I64, classes: npt.NDArray[np.uint8], n_classes: int
    ) -> tuple[_I64, _I64]: ...
    @staticmethod
    def group_order(group: _I64, key: _I64) -> _I64: ...
    @staticmethod
    def group_gaps(
        group: _I64, starts: _I64, ends: _I64, touching: bool = ...
    ) -> tuple[_I64, _I64, _I64, _I64]: ...
    @staticmethod
    def occupancy(group: _I64, enter: _I64, leave: _I64) -> tuple[_I64, _U8, _I64, _I64, _I64]: ...
    @staticmethod
    def step_counter_f64(group: _I64, ts: _I64, delta: _F64) -> tuple[_I64, _I64, _F64]: ...
    @staticmethod
    def step_counter_i64(group: _I64, ts: _I64, delta: _I64) -> tuple[_I64, _I64, _I64]: ...
    @staticmethod
    def weighted_stats(
        group: _I64,
        ts: _I64,
        value: _F64,
        end_ts: Optional[_I64],
        quantiles: _F64,
        thresholds: _F64,
    ) -> dict[str, npt.NDArray[Any]]: ...

ops: _Ops

# register_graph.cc: the submodule `graph`
class _DependencyGraph:
    @property
    def n_events(self) -> int: ...
    @property
    def src(self) -> _I64: ...
    @property
    def dst(self) -> _I64: ...
    @property
    def type(self) -> npt.NDArray[np.uint8]: ...
    @property
    def measured(self) -> _I64: ...
    def calibrate(self) -> tuple[_I64, npt.NDArray[np.uint8]]: ...
    def replay(self, weight: _I64, skip_types: int = 0, floor: Optional[_I64] = None) -> _I64: ...
    def critical_path(
        self, weight: _I64, times: _I64, skip_types: int = 0, from_node: int = -1
    ) -> _I64: ...
    def critical_paths(
        self, weight: _I64, times: _I64, skip_types: int, from_nodes: _I64, stop_at: _I64
    ) -> tuple[_I64, _I64]: ...

class _EdgeType(enum.IntEnum):
    release = 0
    cpu_self = 1
    cpu_nest_down = 2
    cpu_nest_up = 3
    cpu_sibling = 4
    gpu_self = 5
    launch = 6
    kernel_kernel = 7
    cross_stream = 8
    sync_wait = 9
    sync_self = 10
    cross_thread = 11
    thread_join = 12
    join_tail = 13

class _SyncKind(enum.IntEnum):
    none = 0
    stream = 1
    event = 2
    device = 3
    own_copy = 4
    stream_wait = 5

class _Graph:
    Graph = _DependencyGraph
    EdgeType = _EdgeType
    SyncKind = _SyncKind
    @staticmethod
    def build(
        ts: _I64,
        dur: _I64,
        lane: _I64,
        is_gpu: npt.NDArray[np.uint8],
        parent: _I64,
        launch: _I64,
        corr: _I64,
        sync_kind: npt.NDArray[np.uint8],
        wait_lane: _I64,
        wait_corr: _I64,
        target_lane: _I64,
        window_start: int,
        release_from: Optional[_I64] = None,
        held_by: Optional[_I64] = None,
    ) -> _DependencyGraph: ...

graph: _Graph

# register_build_info.cc: keys version, gzip, zstd, simdjson_version, simdjson_implementation
def build_info() -> dict[str, Any]: ...

# register_writer.cc: a Chrome-trace JSON as a Perfetto protobuf trace, with the events
# left out by reason (csrc/parse/pftrace_writer.h)
def json_to_pftrace(json: bytes) -> tuple[bytes, dict[str, int]]: ...
