"""Layer 2, costs: per-event knowledge: dtype sizes, FLOPs and bytes per operator, devices
and their peaks, kernel-time models, collective sizes. One owner each: a dtype's size is
dtypes.itemsize, a collective's bytes and bus factor are collectives.message_bytes and
collectives.bus_factor; everything that needs them calls these.

The names below resolve on first use (hta_fast._lazy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .collectives import bus_factor, message_bytes
    from .cost import Cost
    from .devices import Device, DeviceTable, trace_device, trace_device_note
    from .dtypes import itemsize, precision
    from .flops import cost_of, no_model_summary, op_costs, with_costs

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {
    "itemsize": "hta_fast.costs.dtypes",
    "precision": "hta_fast.costs.dtypes",
    "message_bytes": "hta_fast.costs.collectives",
    "bus_factor": "hta_fast.costs.collectives",
    "Cost": "hta_fast.costs.cost",
    "cost_of": "hta_fast.costs.flops",
    "op_costs": "hta_fast.costs.flops",
    "with_costs": "hta_fast.costs.flops",
    "no_model_summary": "hta_fast.costs.flops",
    "Device": "hta_fast.costs.devices",
    "DeviceTable": "hta_fast.costs.devices",
    "trace_device": "hta_fast.costs.devices",
    "trace_device_note": "hta_fast.costs.devices",
}

__all__ = [
    "itemsize",
    "precision",
    "message_bytes",
    "bus_factor",
    "Cost",
    "cost_of",
    "op_costs",
    "with_costs",
    "no_model_summary",
    "Device",
    "DeviceTable",
    "trace_device",
    "trace_device_note",
]

lazy_package(__name__, PUBLIC)
