"""The what-if "this step on another GPU" (declared in hta_fast.model.whatif.declared.device_edit): each GPU event's new duration from the kernel
models (hta_fast.model.predict), as per-rank duration changes the replay applies.

predict() gives every launched GPU event of the trace a predicted duration on the target
device: kernels of a costed operator by their family's model, other compute kernels by the
ratio of memory bandwidths, communication kernels and host transfers unchanged. The change
handed to the replay is predicted - measured per event, so the graph's waits, CPU work and
launch order stay as recorded: the GPU is swapped, the host is not.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import as_numpy
from ...costs.devices import Device
from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from ..predict import predict
from .edits import Edits

Changes = dict[int, tuple[np.ndarray, np.ndarray]]


def device_changes(
    traces: Union[Trace, TraceSet],
    device: Union[str, Device],
    *,
    source_device: Union[str, Device, None] = None,
    devices_file: Optional[str] = None,
    allow_tf32: Union[bool, str] = False,
    efficiency_curves: bool = True,
    selection: Optional[select.Selection] = None,
) -> tuple[Changes, list[str], dict[str, Changes]]:
    """Per rank, (GPU event rows, ns added to each one's duration) for the kernels predicted
    on `device`; predict's notes; and the same changes with every event at the low and at
    the high end of its prediction's band (predict's predicted_low / predicted_high: the
    error measured on real pairs, hta_fast.model.predict_errors): {"low": ..., "high": ...}."""
    r = predict(
        traces,
        device,
        source_device=source_device,
        devices_file=devices_file,
        allow_tf32=allow_tf32,
        efficiency_curves=efficiency_curves,
        selection=selection,
    )
    ev = r["events"]
    bands = {b: _changes(ev, f"predicted_{b}") for b in ("low", "high")}
    return _changes(ev, "predicted"), list(r.notes), bands


def edit_changes(
    traces: Union[Trace, TraceSet], edits: Edits, sel: select.Selection
) -> tuple[Changes, list[str], dict[str, Changes]]:
    """device_changes for the edits' device, source device, devices file and TF32 choice,
    on the selection's ranks: the device edit as the what-if replay applies it
    (hta_fast.model.whatif.changes.DeviceEdit)."""
    assert edits.device is not None
    return device_changes(
        traces,
        edits.device,
        source_device=edits.source_device,
        devices_file=edits.devices_file,
        allow_tf32=edits.allow_tf32,
        selection=select.Selection(ranks=sel.ranks),
    )


def _changes(ev: pa.Table, column: str) -> Changes:
    """Per rank, (rows, `column` - dur) of predict's events, where they differ."""
    rank = as_numpy(ev["rank"])
    rows = as_numpy(ev["row"])
    delta = as_numpy(ev[column]) - as_numpy(ev["dur"]).astype(np.float64)
    out: Changes = {}
    for k in np.unique(rank):
        sel = (rank == k) & (delta != 0)
        out[int(k)] = (rows[sel].astype(np.int64), delta[sel])
    return out
