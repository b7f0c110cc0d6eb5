"""Resampling: aten::upsample_{nearest,linear,bilinear,bicubic,trilinear}{1,2,3}d (and
_upsample_nearest_exact*), forward and backward. Bound by memory.

Sources of shapes: the input tensor (N x C x spatial) and, in Concrete Inputs, the output
size or the scale factors. Each name has two overloads that a trace records alike: the
`.vec` form (input, output_size?, [align_corners,] scale_factors?) and the sized form
(self, output_size, [align_corners,] scales...). The output size is argument 1 when it is
an int list of one entry per spatial dimension; otherwise the first list of scale factors
after it gives out = floor(in x scale) per dimension. Backward (grad_output, output_size,
input_size, ...): the sizes are arguments 1 and 2.

FLOPs: output elements x taps, the input points each output interpolates: nearest 1, linear
2 per dimension (bilinear 4, trilinear 8), bicubic 4 per dimension (16). The backward
scatters each output gradient over the same taps. Bytes: the input read and the output
written once (backward: the output gradient read, the input gradient written). The
antialiased forms (_upsample_*_aa), whose taps grow with the downscaling factor, have no
model.
"""

from __future__ import annotations

import math
import re

from .. import dtypes
from ..cost import Cost, pattern_model
from ..op_call import NoModel, OpCall

NAME = re.compile(
    r"^aten::_?upsample_(nearest|nearest_exact|linear|bilinear|bicubic|trilinear)([123])d"
    r"(_backward)?$"
)
TAPS_PER_DIM = {"nearest": 1, "nearest_exact": 1, "linear": 2, "bilinear": 2, "trilinear": 2}
TAPS_PER_DIM["bicubic"] = 4


def _sizes(call: OpCall, i: int, n: int) -> list[int] | None:
    v = call.value(i)
    if isinstance(v, list) and len(v) == n and all(isinstance(d, int) for d in v):
        return v
    return None


def _output_size(call: OpCall, x: list[int], nd: int) -> list[int]:
    out = _sizes(call, 1, nd)
    if out is not None:
        return out
    for i in range(2, len(call.concrete)):
        scales = call.numbers(i)
        if scales is not None and len(scales) == nd:
            return [math.floor(d * s) for d, s in zip(x[2:], scales)]
    raise NoModel("output size and scale factors not recorded (Concrete Inputs missing)")


def upsample(call: OpCall) -> Cost:
    m = NAME.match(call.name)
    assert m is not None
    mode, nd, backward = m.group(1), int(m.group(2)), bool(m.group(3))
    taps = TAPS_PER_DIM[mode] ** nd
    g = call.shape(0)
    if len(g) != nd + 2:
        raise NoModel(f"{nd}-D resampling of a {len(g)}-D tensor")
    size = call.itemsize(0)
    precision = dtypes.precision(call.dtype(0)) or "fp32"
    if backward:
        out = _sizes(call, 1, nd)
        inp = _sizes(call, 2, nd + 2)
        if out is None or inp is None:
            raise NoModel("output and input sizes not recorded (Concrete Inputs missing)")
        if list(g[2:]) != out or inp[:2] != g[:2]:
            raise NoModel(f"grad_output {g} does not fit output size {out}, input {inp}")
        n_out = math.prod(g)
        return Cost(
            "upsample", float(n_out * taps), float((n_out + math.prod(inp)) * size), precision
        )
    out = _output_size(call, g, nd)
    n_out = g[0] * g[1] * math.prod(out)
    return Cost("upsample", float(n_out * taps), float((math.prod(g) + n_out) * size), precision)


pattern_model(NAME, upsample)
