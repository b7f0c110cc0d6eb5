"""Convolutions, forward and backward.

Forward (input N x C x spatial, weight K x C/groups x kernel): every output element is a dot
product of length (C/groups) * prod(kernel), so FLOPs = 2 * N * K * prod(out) * C/g *
prod(kernel). The output size needs stride, padding and dilation (Concrete Inputs); a
transposed convolution swaps the roles of input and output. Backward (grad_output, input,
weight, ...): grad_input and grad_weight each cost one forward; the output size is
grad_output's. Bytes: the tensors read and written once.
"""

from __future__ import annotations

import math

from ..cost import Cost, model, precision_of
from ..op_call import NoModel, OpCall


def _out_size(inp: int, k: int, s: int, p: int, d: int) -> int:
    return (inp + 2 * p - d * (k - 1) - 1) // s + 1


# Argument positions of (stride, padding, dilation, groups) per signature, and whether the
# operator is a transposed convolution (None: read the `transposed` argument at index 6).
_ARGS = {
    "aten::convolution": (3, 4, 5, 8, None),
    "aten::_convolution": (3, 4, 5, 8, None),
    "aten::conv1d": (3, 4, 5, 6, False),
    "aten::conv2d": (3, 4, 5, 6, False),
    "aten::conv3d": (3, 4, 5, 6, False),
    "aten::conv_transpose1d": (3, 4, 7, 6, True),
    "aten::conv_transpose2d": (3, 4, 7, 6, True),
    "aten::conv_transpose3d": (3, 4, 7, 6, True),
    "aten::cudnn_convolution": (3, 2, 4, 5, False),
    "aten::cudnn_convolution_transpose": (4, 2, 5, 6, True),
    "aten::miopen_convolution": (4, 3, 5, 6, False),
}


@model(*_ARGS)
def conv_forward(call: OpCall) -> Cost:
    x, w = call.shape(0), call.shape(1)
    nd = len(w) - 2
    if nd < 1 or len(x) != nd + 2:
        raise NoModel(f"convolution of shapes {x} and {w}")
    i_stride, i_pad, i_dil, i_groups, transposed = _ARGS[call.name]
    if transposed is None:
        transposed = call.value(6) is True
    kernel = w[2:]
    if call.value(i_stride) is None and any(k > 1 for k in kernel):
        raise NoModel("stride/padding not recorded (Concrete Inputs missing)")
    stride, pad = call.int_list(i_stride, nd, 1), call.int_list(i_pad, nd, 0)
    dil = call.int_list(i_dil, nd, 1)
    groups = call.int_list(i_groups, 1, 1)[0]
    if transposed:
        # weight: C_in x K/groups x kernel; each input element scatters into K/g x kernel
        out = [
            (i - 1) * s - 2 * p + d * (k - 1) + 1
            for i, k, s, p, d in zip(x[2:], kernel, stride, pad, dil)
        ]
        k_out = w[1] * groups
        flops = 2.0 * x[0] * x[1] * math.prod(x[2:]) * w[1] * math.prod(kernel)
    else:
        out = [_out_size(i, k, s, p, d) for i, k, s, p, d in zip(x[2:], kernel, stride, pad, dil)]
        k_out = w[0]
        flops = 2.0 * x[0] * k_out * math.prod(out) * w[1] * math.prod(kernel)
    if any(o <= 0 for o in out):
        raise NoModel(f"output size {out} from input {x}, weight {w}")
    size = call.itemsize(0)
    nbytes = (math.prod(x) + math.prod(w) + x[0] * k_out * math.prod(out)) * size
    if call.has_tensor(2) and len(call.shape(2)) == 1 and not call.name.startswith("aten::cudnn"):
        nbytes += call.nbytes(2)
        flops += x[0] * k_out * math.prod(out)
    return Cost("conv", flops, float(nbytes), precision_of(call, 0), matrix=True)


@model(
    "aten::convolution_backward",
    "aten::cudnn_convolution_backward",
    "aten::miopen_convolution_backward",
)
def conv_backward(call: OpCall) -> Cost:
    """(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask). output_mask says which gradients are computed."""
    go, x, w = call.shape(0), call.shape(1), call.shape(2)
    nd = len(w) - 2
    if nd < 1 or len(x) != nd + 2 or len(go) != nd + 2:
        raise NoModel(f"convolution backward of shapes {go}, {x}, {w}")
    mask = call.value(10)
    if not (isinstance(mask, list) and len(mask) == 3):
        mask = [True, True, False]
    transposed = call.value(7) is True
    spatial = x[2:] if transposed else go[2:]
    batch_out = go[0] * (x[1] if transposed else go[1])
    one_pass = 2.0 * batch_out * math.prod(spatial) * w[1] * math.prod(w[2:])
    flops = one_pass * (int(bool(mask[0])) + int(bool(mask[1])))
    size = call.itemsize(0)
    nbytes = math.prod(go) + math.prod(x) + math.prod(w)  # reads
    nbytes += (math.prod(x) if mask[0] else 0) + (math.prod(w) if mask[1] else 0)  # writes
    if mask[2]:
        flops += math.prod(go)
        nbytes += go[1]
    return Cost("conv", flops, float(nbytes * size), precision_of(call, 0), matrix=True)
