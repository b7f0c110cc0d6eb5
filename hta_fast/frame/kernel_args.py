"""Kernel arguments (grid, block, occupancy, bytes) of chosen event rows, and the device
facts they are compared with: the SM count of each event's device, from the trace's
deviceProperties or, where those say nothing, from the kernels' own `warps per SM`."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..trace import Trace


def locate(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit, src): for each event row, whether it has kernel args and their row in the
    kernel_args table (valid where hit). Compute once, pass to kernel_arg for each column."""
    ka_row = trace.column("kernel_args", "row")
    if len(ka_row) == 0 or len(rows) == 0:
        return np.zeros(len(rows), bool), np.zeros(len(rows), np.int64)
    order = trace.memo.get(
        ("frame.kernel_args", "order"),
        lambda: None if np.all(ka_row[1:] >= ka_row[:-1]) else np.argsort(ka_row, kind="stable"),
    )
    sorted_rows = ka_row if order is None else ka_row[order]
    idx = np.minimum(np.searchsorted(sorted_rows, rows), len(sorted_rows) - 1)
    hit = sorted_rows[idx] == rows
    return hit, (idx if order is None else order[idx])


def kernel_arg(
    trace: Trace,
    rows: np.ndarray,
    column: str,
    where: Optional[tuple[np.ndarray, np.ndarray]] = None,
) -> np.ndarray:
    """kernel_args[column] for each event row; -1 (NaN for floats) where the row has none.
    `where`: locate(trace, rows), when several columns of the same rows are read."""
    values = trace.column("kernel_args", column)
    floating = values.dtype.kind == "f"
    out = np.full(len(rows), np.nan if floating else -1, values.dtype if floating else np.int64)
    hit, src = where if where is not None else locate(trace, rows)
    out[hit] = values[src[hit]]
    return out


def grid_blocks(
    trace: Trace, rows: np.ndarray, where: Optional[tuple[np.ndarray, np.ndarray]] = None
) -> np.ndarray:
    """Thread blocks in each kernel's grid (x*y*z); -1 where unknown."""
    where = where if where is not None else locate(trace, rows)
    gx, gy, gz = (kernel_arg(trace, rows, f"grid_{a}", where) for a in "xyz")
    known = (gx > 0) & (gy > 0) & (gz > 0)
    return np.where(known, gx * gy * gz, -1)


def kernel_blocks(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """grid_blocks of GPU event rows, taken from the launch call where the event itself has
    no grid (ROCm traces put grid and block on hipLaunchKernel); -1 where neither has one."""
    blocks = grid_blocks(trace, rows)
    missing = blocks < 0
    if missing.any():
        partner = trace.column("events", "partner")[rows[missing]]
        linked = partner >= 0
        from_launch = np.full(len(partner), -1, np.int64)
        from_launch[linked] = grid_blocks(trace, partner[linked])
        blocks[missing] = from_launch
    return blocks


def _device_value(device: dict[str, Any], *keys: str) -> Optional[int]:
    for k in keys:
        v = device.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return int(v)
    return None


def sm_counts(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The SM (NVIDIA) or compute-unit (AMD) count of each event's device from the trace
    header (deviceProperties: numSms / multiProcessorCount / computeUnitCount); -1 unknown."""
    by_id: dict[int, int] = {}
    first: Optional[int] = None
    for i, d in enumerate(trace.meta.devices):
        if not isinstance(d, dict):
            continue
        n = _device_value(d, "numSms", "multiProcessorCount", "computeUnitCount", "numCUs")
        if n is None:
            continue
        dev_id = d.get("id", i)
        by_id[int(dev_id) if isinstance(dev_id, (int, float)) else i] = n
        first = n if first is None else first
    out = np.full(len(rows), -1, np.int64)
    if first is None:
        return out
    device = trace.column("events", "device")[rows]
    out[:] = first  # one device per process is the rule; its id may be missing on events
    for dev_id, n in by_id.items():
        out[device == dev_id] = n
    return out


def sm_counts_from_warps(
    trace: Trace, rows: np.ndarray, where: Optional[tuple[np.ndarray, np.ndarray]] = None
) -> Optional[int]:
    """The SM count the kernels' own arguments imply, for a trace whose header has none:
    Kineto writes `warps per SM` = blocks x warps per block / SMs, so each kernel with a
    grid, a block and that value gives SMs = blocks x threads / 32 / warps per SM. The
    median over the kernels, rounded; None when no kernel has the three."""
    where = where if where is not None else locate(trace, rows)
    blocks = grid_blocks(trace, rows, where)
    bx, by, bz = (kernel_arg(trace, rows, f"block_{a}", where) for a in "xyz")
    threads = np.where((bx > 0) & (by > 0) & (bz > 0), bx * by * bz, -1)
    warps_per_sm = kernel_arg(trace, rows, "warps_per_sm", where).astype(np.float64)
    ok = (blocks > 0) & (threads > 0) & (warps_per_sm > 0)
    if not ok.any():
        return None
    warps = blocks[ok] * threads[ok] / 32.0
    sms = float(np.median(warps / warps_per_sm[ok]))
    return int(round(sms)) if sms >= 0.5 else None


def compute_capability(trace: Trace) -> Optional[int]:
    """computeMajor of the first NVIDIA device in the header, or None."""
    for d in trace.meta.devices:
        if isinstance(d, dict) and isinstance(d.get("computeMajor"), int):
            return int(d["computeMajor"])
    return None
