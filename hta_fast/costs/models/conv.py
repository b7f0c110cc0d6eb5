"""Convolutions, forward and backward.

Forward (input N x C x spatial, weight K x C/groups x kernel): every output element is a dot
product of length (C/groups) * prod(kernel), so FLOPs = 2 * N * K * prod(out) * C/g *
prod(kernel). The output size needs stride, padding and dilation (Concrete Inputs); a
transposed convolution swaps the roles of input and output. Backward: grad_input and
grad_weight each cost one forward (the same formula, conv_pass_flops); the output size is
grad_output's. Bytes: the tensors read and written once.

Backward signatures (sources of shapes):
* convolution_backward (grad_output, input, weight, bias_sizes, stride, padding, dilation,
  transposed, output_padding, groups, output_mask);
* the older cudnn_convolution_backward / miopen_convolution_backward (input, grad_output,
  weight, padding, stride, dilation, groups, benchmark, deterministic, [allow_tf32],
  output_mask): output_mask last (two entries for cuDNN, three with the bias for MIOpen);
* their halves cudnn/miopen_convolution_backward_input (input_size, grad_output, weight,
  ...) and _backward_weight (weight_size, grad_output, input, ...): the size a half writes is
  an int list, recorded only in Concrete Inputs; where it is not, it is taken from the
  enclosing cudnn/miopen_convolution_backward group of the rank with the same grad_output
  and weight (input) shapes, when exactly one such group names one size (`backward_sizes`).
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Optional

from ..cost import Cost, model, precision_of, rank_extras
from ..op_call import NoModel, OpCall


def conv_pass_flops(n: int, k_out: int, out: list[int], weight: list[int]) -> float:
    """One pass of a (non-transposed) convolution: N x K x prod(out) output elements, each a
    dot product of C/g x prod(kernel) (weight K x C/g x kernel)."""
    return 2.0 * n * k_out * math.prod(out) * weight[1] * math.prod(weight[2:])


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
    stride = call.int_list(i_stride, nd, 1, what="stride")
    pad = call.int_list(i_pad, nd, 0, what="padding")
    dil = call.int_list(i_dil, nd, 1, what="dilation")
    groups = call.int_list(i_groups, 1, 1, what="groups")[0]
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
        flops = conv_pass_flops(x[0], k_out, out, w)
    if any(o <= 0 for o in out):
        raise NoModel(f"output size {out} from input {x}, weight {w}")
    size = call.itemsize(0)
    nbytes = (math.prod(x) + math.prod(w) + x[0] * k_out * math.prod(out)) * size
    if call.has_tensor(2) and len(call.shape(2)) == 1 and not call.name.startswith("aten::cudnn"):
        nbytes += call.nbytes(2)
        flops += x[0] * k_out * math.prod(out)
    return Cost("conv", flops, float(nbytes), precision_of(call, 0), matrix=True)


@model("aten::convolution_backward")
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


def _bool_list(call: OpCall, i: int) -> Optional[list[bool]]:
    """A concrete bool list ("[True, False]", as profilers write it); None if absent."""
    v = call.value(i)
    if isinstance(v, str):
        parts = [p.strip() for p in v.strip("[] ").split(",")]
        if parts and all(p in ("True", "False", "true", "false") for p in parts):
            return [p.lower() == "true" for p in parts]
        return None
    if isinstance(v, list) and all(isinstance(b, bool) for b in v):
        return v
    return None


_OLD_BACKWARD = ("aten::cudnn_convolution_backward", "aten::miopen_convolution_backward")


@model(*_OLD_BACKWARD)
def conv_backward_old(call: OpCall) -> Cost:
    """(input, grad_output, weight, padding, stride, dilation, groups, ..., output_mask)."""
    x, go, w = call.shape(0), call.shape(1), call.shape(2)
    nd = len(w) - 2
    if nd < 1 or len(x) != nd + 2 or len(go) != nd + 2 or go[1] != w[0]:
        raise NoModel(f"convolution backward of shapes {x}, {go}, {w}")
    mask = next(
        (m for m in (_bool_list(call, i) for i in (10, 9)) if m and len(m) in (2, 3)),
        [True, True],
    )
    one_pass = conv_pass_flops(go[0], go[1], go[2:], w)
    flops = one_pass * (int(mask[0]) + int(mask[1]))
    nbytes = math.prod(go) + math.prod(x) + math.prod(w)
    nbytes += (math.prod(x) if mask[0] else 0) + (math.prod(w) if mask[1] else 0)
    if len(mask) == 3 and mask[2]:
        flops += math.prod(go)
        nbytes += go[1]
    return Cost("conv", flops, float(nbytes * call.itemsize(1)), precision_of(call, 1), matrix=True)


def _written_size(call: OpCall, key: str) -> list[int]:
    """The size a backward half writes: argument 0 (Concrete Inputs), else its pairing."""
    v = call.value(0)
    if isinstance(v, list) and v and all(isinstance(d, int) for d in v):
        return v
    extra = call.extra or {}
    if key in extra:
        return extra[key]
    raise NoModel(
        extra.get(
            "reason",
            "the size it writes is an int list not recorded (no Concrete Inputs) and no "
            "enclosing convolution backward with these shapes names it",
        )
    )


@model("aten::cudnn_convolution_backward_input", "aten::miopen_convolution_backward_input")
def conv_backward_input(call: OpCall) -> Cost:
    """(input_size, grad_output, weight, padding, stride, dilation, groups, ...)."""
    go, w = call.shape(1), call.shape(2)
    if len(go) != len(w) or len(w) < 3 or go[1] != w[0]:
        raise NoModel(f"convolution backward_input of grad_output {go} and weight {w}")
    x = _written_size(call, "input_shape")
    if len(x) != len(go) or x[0] != go[0]:
        raise NoModel(f"input size {x} does not fit grad_output {go}")
    flops = conv_pass_flops(go[0], go[1], go[2:], w)
    nbytes = (math.prod(go) + math.prod(w) + math.prod(x)) * call.itemsize(1)
    return Cost("conv", flops, float(nbytes), precision_of(call, 1), matrix=True)


@model("aten::cudnn_convolution_backward_weight", "aten::miopen_convolution_backward_weight")
def conv_backward_weight(call: OpCall) -> Cost:
    """(weight_size, grad_output, input, padding, stride, dilation, groups, ...)."""
    go, x = call.shape(1), call.shape(2)
    if len(go) != len(x) or len(go) < 3 or go[0] != x[0]:
        raise NoModel(f"convolution backward_weight of grad_output {go} and input {x}")
    w = _written_size(call, "weight_shape")
    if len(w) != len(go) or w[0] != go[1]:
        raise NoModel(f"weight size {w} does not fit grad_output {go}")
    flops = conv_pass_flops(go[0], go[1], go[2:], w)
    nbytes = (math.prod(go) + math.prod(x) + math.prod(w)) * call.itemsize(1)
    return Cost("conv", flops, float(nbytes), precision_of(call, 1), matrix=True)


_HALVES = {
    "aten::cudnn_convolution_backward_input": ("aten::cudnn_convolution_backward", "input"),
    "aten::cudnn_convolution_backward_weight": ("aten::cudnn_convolution_backward", "weight"),
    "aten::miopen_convolution_backward_input": ("aten::miopen_convolution_backward", "input"),
    "aten::miopen_convolution_backward_weight": ("aten::miopen_convolution_backward", "weight"),
}


@rank_extras
def backward_sizes(
    groups: Iterable[tuple[Any, str, Optional[str], Optional[str], Optional[str]]],
) -> dict[Any, dict]:
    """The size each backward half writes, from the rank's enclosing backward groups: an
    input half (grad_output, weight) takes the input shape of the cudnn/miopen backward
    groups with that grad_output and weight, a weight half (grad_output, input) their
    weight; {"input_shape"} or {"weight_shape"} when exactly one shape fits, else a reason."""
    parents: dict[tuple, set] = {}
    halves = []
    for key, name, dims, _types, _concrete in groups:
        if name in _OLD_BACKWARD or name in _HALVES:
            try:
                shapes = json.loads(dims) if dims else None
            except ValueError:
                continue
            if not isinstance(shapes, list) or len(shapes) < 3:
                continue
            if name in _OLD_BACKWARD:
                x, go, w = (json.dumps(s) for s in shapes[:3])
                parents.setdefault((name, "input", go, w), set()).add(x)
                parents.setdefault((name, "weight", go, x), set()).add(w)
            else:
                halves.append((key, name, json.dumps(shapes[1]), json.dumps(shapes[2])))
    out: dict = {}
    for key, name, go, other in halves:
        parent, half = _HALVES[name]
        found = parents.get((parent, half, go, other), set())
        if len(found) == 1:
            out[key] = {f"{half}_shape": json.loads(next(iter(found)))}
        elif found:
            out[key] = {"reason": f"{len(found)} enclosing backward groups name different sizes"}
    return out
