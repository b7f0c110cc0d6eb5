"""The Arrow schema of a loaded trace: column types, enums, units and missing values.

The core hands over plain arrays with sentinels (-1, NaN). What each column means is declared
once, beside the column, in the core (csrc/trace/tables.h); this module reads that
declaration from `_core` and is where Python code looks it up. hta_fast._arrow turns the
sentinels into Arrow nulls from it.
"""

from __future__ import annotations

from . import _core
from ._core import ColumnRole, ColumnSpec, EventKind, KernelClass

__all__ = [
    "SCHEMA_VERSION",
    "EventKind",
    "KernelClass",
    "GPU_KINDS",
    "GPU_WORK_KINDS",
    "CPU_KINDS",
    "ColumnRole",
    "ColumnSpec",
    "COLUMNS",
    "STRING_ID_BASE",
    "field_metadata",
]

# 5: comm_args.comms_id (the collective's Comms Id, kineto 2026)
# 6: kernel_args.hsa_queue (ROCm's HSA queue, kineto June 2026)
SCHEMA_VERSION = 6

# EventKind and KernelClass are IntEnums made by the core from its own enums
# (csrc/trace/event_kind.h), so their names and values exist once.

# Which event kinds run where, the one list every module asks (tuples, so that `in` and
# np.isin both take them): the GPU timeline's kinds as the core classes them; of those, GPU
# work occupies the device (kernels, copies, fills; not GPU annotations or syncs).
GPU_KINDS = tuple(k for k in EventKind if _core.is_gpu_kind(k))
GPU_WORK_KINDS = (EventKind.kernel, EventKind.memcpy, EventKind.memset)
CPU_KINDS = (
    EventKind.cpu_op,
    EventKind.user_annotation,
    EventKind.python_function,
    EventKind.runtime,
    EventKind.driver,
)

# (table, column) -> its spec: Arrow value type, role, sentinel, unit, description, labels.
COLUMNS: dict[tuple[str, str], ColumnSpec] = {(c.table, c.name): c for c in _core.column_specs()}

# String pids/tids are stored as STRING_ID_BASE - (string index): see Trace.id_name.
STRING_ID_BASE: int = _core.STRING_ID_BASE


def field_metadata(table: str, column: str) -> dict[bytes, bytes] | None:
    """The Arrow field metadata of one column: its unit and description, where it has them."""
    spec = COLUMNS[(table, column)]
    meta = {}
    if spec.unit:
        meta[b"unit"] = spec.unit.encode()
    if spec.description:
        meta[b"description"] = spec.description.encode()
    return meta or None
