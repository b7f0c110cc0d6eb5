"""Models of the work in a trace: FLOPs and bytes per operator (flops), the devices' peaks
(devices), bytes of collectives (comm_bytes.comm_bytes), kernel time models and prediction on
another GPU (kernel_model, predict.predict). The per-operator analyses that use them live in
hta_fast.analysis.op_table and hta_fast.analysis.roofline."""
from .cost import Cost
from .devices import Device, DeviceTable, trace_device
from .flops import cost_of, no_model_summary, op_costs, with_costs

__all__ = ["Cost", "Device", "DeviceTable", "trace_device", "cost_of", "no_model_summary",
           "op_costs", "with_costs"]
