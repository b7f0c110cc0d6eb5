"""Triton kernels that TorchInductor generates, reached through their operator.

When Inductor's launcher is profiled it records each kernel as a CPU operator named like the
kernel (`triton_poi_fused_add_cos_sin_0`, args kernel_backend "triton") whose Input Dims and
Input type are the kernel's tensor arguments (its in_ptr, out_ptr and in_out_ptr buffers) and
whose Concrete Inputs hold its scalars (xnumel, rnumel). Source of shapes: those arguments.

Bytes: every tensor argument once: each input buffer read, each output buffer written (an
in-place buffer, read and written, is counted once: a lower bound). FLOPs: pointwise kernels
(`triton_poi_`) one per element of the largest buffer, reductions (`triton_red_`,
`triton_per_`) one per element of the largest buffer (the reduced input). The fused
operations' own counts are not recorded, and these kernels are bound by memory. Template
kernels (`triton_tem_`, GEMMs and convolutions) have no model: which buffer is which operand
is not recorded.
"""

from __future__ import annotations

import re

from .. import dtypes
from ..cost import Cost, pattern_model
from ..op_call import NoModel, OpCall

NAME = re.compile(r"^triton_(poi|red|per)_")


def inductor_kernel(call: OpCall) -> Cost:
    m = NAME.match(call.name)
    assert m is not None
    tensors = call.tensor_inputs()
    if not tensors:
        raise NoModel("no tensor argument with a shape and dtype recorded")
    nbytes = sum(call.nbytes(i) for i in tensors)
    elems = max(call.numel(i) for i in tensors)
    floats = [i for i in tensors if dtypes.precision(call.dtype(i)) is not None]
    precision = dtypes.precision(call.dtype(floats[0])) if floats else None
    family = "elementwise" if m.group(1) == "poi" else "reduction"
    return Cost(family, float(elems), float(nbytes), precision or "fp32")


pattern_model(NAME, inductor_kernel)
