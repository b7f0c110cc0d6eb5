"""The columns a metric can ask for, and gathering them for the selected events.

A metric names its columns by its parameter names. They come from three places:

    events        ts, dur, name, cat, pid, tid, kind, kernel_class, device, stream,
                  correlation, external_id, partner, parent, step
    kernel_args   queued, context, grid_x/y/z, block_x/y/z, registers_per_thread,
                  shared_memory, blocks_per_sm, warps_per_sm, est_achieved_occupancy,
                  bytes, memory_bandwidth_gbps (per GPU event; -1 or NaN where it has none)
    derived       end (ts + dur, a negative dur counting as 0), launch_ts (start of the
                  CPU launch of a GPU event, -1 without one), and one boolean column per
                  name flag passed to apply()

ts, end and dur (= end - ts, so a negative duration counts as zero) are clipped to the
selection window, and to each time bucket when grouping by "window" (an event that spans
several buckets is in each, with the part inside it). Other values are the core's: int64 nanoseconds, string ids (name, cat) as int32 indices into
trace.strings, enums as their uint8 codes (hta_fast.EventKind, hta_fast.KernelClass), and
missing values as -1 (NaN for floats), so a metric can test them without nulls.
"""

from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from ..frame.kernel_args import kernel_arg
from ..schema import GPU_KINDS
from ..trace import Trace

EVENT_COLUMNS = (
    "ts",
    "dur",
    "name",
    "cat",
    "pid",
    "tid",
    "kind",
    "kernel_class",
    "device",
    "stream",
    "correlation",
    "external_id",
    "partner",
    "parent",
    "step",
)
KERNEL_ARG_COLUMNS = (
    "queued",
    "context",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "shared_memory",
    "blocks_per_sm",
    "warps_per_sm",
    "est_achieved_occupancy",
    "bytes",
    "memory_bandwidth_gbps",
)
DERIVED_COLUMNS = ("end", "launch_ts")
COLUMNS = EVENT_COLUMNS + KERNEL_ARG_COLUMNS + DERIVED_COLUMNS


def check_names(wanted: tuple[str, ...], flags: Mapping[str, str]) -> None:
    """ValueError naming the first parameter that is no column and no flag."""
    for name in wanted:
        if name not in COLUMNS and name not in flags:
            raise ValueError(
                f"metric parameter {name!r} is not a column; columns are {', '.join(COLUMNS)}"
                + (f"; flags are {', '.join(flags)}" if flags else "")
            )
    for name in flags:
        if name in COLUMNS:
            raise ValueError(f"flag {name!r} has the name of a column; choose another name")


def name_flags(trace: Trace, pattern: str) -> np.ndarray:
    """Per string id: does the string match the regular expression (re.search)? Evaluated
    once per distinct string, not per event."""
    rx = re.compile(pattern)
    strings = trace.strings.to_pylist()
    return np.fromiter(
        (s is not None and rx.search(s) is not None for s in strings), bool, count=len(strings)
    )


def gather(
    trace: Trace,
    names: tuple[str, ...],
    rows: np.ndarray,
    flags: Mapping[str, str],
    ts: np.ndarray,
    end: np.ndarray,
) -> list[np.ndarray]:
    """The named columns at the given event rows, in order, as contiguous arrays; ts, end
    and dur are the given (clipped) times."""
    out = []
    for name in names:
        if name == "ts":
            col = ts
        elif name == "end":
            col = end
        elif name == "dur":
            col = end - ts
        elif name in EVENT_COLUMNS:
            col = trace.column("events", name)[rows]
        elif name in KERNEL_ARG_COLUMNS:
            # in the column's own type, as user code has always seen it
            col = kernel_arg(trace, rows, name).astype(trace.column("kernel_args", name).dtype)
        elif name == "launch_ts":
            partner = trace.column("events", "partner")[rows]
            gpu = np.isin(trace.column("events", "kind")[rows], GPU_KINDS)
            col = np.where(
                gpu & (partner >= 0), trace.column("events", "ts")[np.maximum(partner, 0)], -1
            )
        else:
            ids = trace.column("events", "name")[rows]
            col = name_flags(trace, flags[name])[np.maximum(ids, 0)] & (ids >= 0)
        out.append(np.ascontiguousarray(col))
    return out
