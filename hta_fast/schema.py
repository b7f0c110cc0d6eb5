"""The Arrow schema of a loaded trace: column types, enums, units and missing values.

The core hands over plain arrays with sentinels (-1, NaN); this module is the one place
that says what each column means and turns sentinels into Arrow nulls.
"""
from __future__ import annotations

import enum

import pyarrow as pa

from . import _core

SCHEMA_VERSION = 2


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


GPU_KINDS = frozenset({EventKind.kernel, EventKind.memcpy, EventKind.memset,
                       EventKind.gpu_user_annotation, EventKind.sync})

# Column roles. Anything not listed is a plain number whose missing value is -1 (NaN for
# floats). Which int32 columns hold string ids is declared once, in the core.
STRING_COLUMNS = {table: frozenset(cols) for table, cols in _core.string_columns().items() if cols}
ENUM_COLUMNS = {
    ("events", "kind"): [k.name for k in EventKind],
    ("events", "kernel_class"): [c.name for c in KernelClass],
}
# Columns where -1 is a real value, not "missing".
NO_SENTINEL = {"pid", "tid", "ts", "dur", "value", "phase", "binds_enclosing", "scope"}

UNITS = {"ts": "ns", "dur": "ns", "bytes": "B", "memory_bandwidth_gbps": "GB/s",
         "shared_memory": "B", "total_allocated": "B", "total_reserved": "B"}

DESCRIPTIONS = {
    ("events", "ts"): "start, ns since the epoch (baseTimeNanoseconds applied)",
    ("events", "partner"): "row of the linked launch (GPU event) or first GPU event (launch)",
    ("events", "parent"): "row of the innermost enclosing CPU event on the same thread",
    ("events", "step"): "profiler step; GPU events take their launch's step",
    ("events", "pid"): "process id; string ids are -(2**32) - string index (Trace.id_name)",
    ("flows", "event"): "row in events that this flow endpoint binds to",
    ("kernel_args", "row"): "row in events",
    ("op_args", "row"): "row in events",
    ("comm_args", "row"): "row in events",
    ("sync_args", "row"): "row in events",
    ("steps", "row"): "row in events of the ProfilerStep#N event",
}

STRING_ID_BASE = -(1 << 32)


def field_metadata(table: str, column: str) -> dict[bytes, bytes] | None:
    meta = {}
    if column in UNITS:
        meta[b"unit"] = UNITS[column].encode()
    desc = DESCRIPTIONS.get((table, column))
    if desc:
        meta[b"description"] = desc.encode()
    return meta or None
