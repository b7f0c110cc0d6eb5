"""Layer 2, costs: per-event knowledge: dtype sizes, FLOPs and bytes per operator, devices
and their peaks, kernel-time models, collective sizes. One owner each: a dtype's size is
dtypes.itemsize, a collective's bytes and bus factor are collectives.message_bytes and
collectives.bus_factor; everything that needs them calls these."""

from .collectives import bus_factor, message_bytes
from .cost import Cost
from .devices import Device, DeviceTable, trace_device, trace_device_note
from .dtypes import itemsize, precision
from .flops import cost_of, no_model_summary, op_costs, with_costs

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
