"""Matrix products: mm, addmm, bmm, baddbmm, matmul, linear, scaled (FP8) and grouped GEMMs,
and the quantized GEMMs of serving stacks (vLLM's CUTLASS w8a8, aiter's a8w8 and hipBLASLt).

A product of an (m x k) and a (k x n) matrix costs 2*m*k*n FLOPs; a bias or accumulated
input adds m*n. Bytes: each operand read once and the output written once (the least
traffic a kernel can have).

Serving stacks' GEMMs (sources of shapes: the custom op's own signature; each model checks
that the recorded shapes fit it and has no model otherwise):
* `_C::cutlass_scaled_mm(out, a, b, a_scales, b_scales, bias?)` and `_C::cutlass_scaled_mm_azp
  (out, a, b, a_scales, b_scales, azp_adj, azp?, bias?)`: out [m, n], a [m, k], b [k, n];
* aiter's a8w8 GEMMs, `aiter::gemm_a8w8*` (XQ, WQ, x_scale, w_scale, [Out,] ...): XQ [m, k],
  WQ [n, k] (also when pre-shuffled), the output [m, n] in the Out tensor's dtype where one
  is recorded, else 2 bytes (bf16, their default);
* hipBLASLt through aiter or vLLM's gradlib, `aiter::hipb_mm`, `_gradlib_C::hipb_mm`,
  `_gradlib_C::rocb_mm` (mat1, mat2, solution_index, bias?, out_dtype?, ...): mat1 [m, k],
  mat2 [k, n], as torch.mm; the output in out_dtype where recorded, else mat1's dtype.
Scales and biases are read too (a bias adds m*n FLOPs).
"""

from __future__ import annotations

import math
import re

from .. import dtypes
from ..cost import Cost, model, pattern_model, precision_of
from ..op_call import NoModel, OpCall


def _gemm(
    call: OpCall,
    batch: int,
    m: int,
    k: int,
    n: int,
    a: int,
    b: int,
    extra_inputs: tuple[int, ...] = (),
    out_itemsize: int | None = None,
) -> Cost:
    size = call.itemsize(a)
    flops = 2.0 * batch * m * k * n
    nbytes = batch * (m * k * size + n * k * call.itemsize(b) + m * n * (out_itemsize or size))
    for i in extra_inputs:
        if call.has_tensor(i):
            flops += batch * m * n
            nbytes += call.nbytes(i)
    return Cost("matmul", flops, float(nbytes), precision_of(call, a), matrix=True)


def _check_inner(k1: int, k2: int, call: OpCall) -> None:
    if k1 != k2:
        raise NoModel(f"inner dimensions differ ({k1} vs {k2}) in {call.dims[:3]}")


@model("aten::mm")
def mm(call: OpCall) -> Cost:
    (m, k), (k2, n) = _mat(call, 0), _mat(call, 1)
    _check_inner(k, k2, call)
    return _gemm(call, 1, m, k, n, 0, 1)


@model("aten::addmm")
def addmm(call: OpCall) -> Cost:
    (m, k), (k2, n) = _mat(call, 1), _mat(call, 2)
    _check_inner(k, k2, call)
    return _gemm(call, 1, m, k, n, 1, 2, extra_inputs=(0,))


@model("aten::bmm")
def bmm(call: OpCall) -> Cost:
    (b, m, k), (_, k2, n) = _batched(call, 0), _batched(call, 1)
    _check_inner(k, k2, call)
    return _gemm(call, b, m, k, n, 0, 1)


@model("aten::baddbmm")
def baddbmm(call: OpCall) -> Cost:
    (b, m, k), (_, k2, n) = _batched(call, 1), _batched(call, 2)
    _check_inner(k, k2, call)
    return _gemm(call, b, m, k, n, 1, 2, extra_inputs=(0,))


@model("aten::matmul")
def matmul(call: OpCall) -> Cost:
    """torch.matmul's broadcasting rules: 1-D operands gain (and lose) a unit dimension;
    batch dimensions broadcast."""
    a, b = list(call.shape(0)), list(call.shape(1))
    if not a or not b:
        raise NoModel("matmul of a scalar")
    a = [1] + a if len(a) == 1 else a
    b = b + [1] if len(b) == 1 else b
    _check_inner(a[-1], b[-2], call)
    batch = math.prod(_broadcast(a[:-2], b[:-2], call))
    return _gemm(call, batch, a[-2], a[-1], b[-1], 0, 1)


@model("aten::linear")
def linear(call: OpCall) -> Cost:
    x, w = call.shape(0), call.shape(1)
    if not x or len(w) not in (1, 2):
        raise NoModel(f"linear of shapes {x} and {w}")
    n = w[0] if len(w) == 2 else 1
    _check_inner(x[-1], w[-1], call)
    return _gemm(call, 1, math.prod(x[:-1]), x[-1], n, 0, 1, extra_inputs=(2,))


@model("aten::_scaled_mm")
def scaled_mm(call: OpCall) -> Cost:
    """FP8 GEMM: (a, b, scale_a, scale_b, bias, scale_result, out_dtype, ...). The output
    is usually BF16; without the out dtype it is counted as 2 bytes an element."""
    (m, k), (k2, n) = _mat(call, 0), _mat(call, 1)
    _check_inner(k, k2, call)
    return _gemm(call, 1, m, k, n, 0, 1, extra_inputs=(4,), out_itemsize=2)


@model("aten::_grouped_mm", "aten::_scaled_grouped_mm")
def grouped_mm(call: OpCall) -> Cost:
    """Grouped GEMM (mixture-of-experts): a (total_m, k) with b (groups, k, n) and group
    offsets, or a (groups, m, k) with b (groups, k, n). Every row of a meets one group's b."""
    a, b = call.shape(0), call.shape(1)
    size_a, size_b = call.itemsize(0), call.itemsize(1)
    out_size = 2 if call.name == "aten::_scaled_grouped_mm" else size_a
    if len(a) == 2 and len(b) == 3:
        rows, k, groups, n = a[0], a[1], b[0], b[2]
        _check_inner(k, b[1], call)
        flops = 2.0 * rows * k * n
        nbytes = rows * k * size_a + groups * k * n * size_b + rows * n * out_size
    elif len(a) == 3 and len(b) == 3:
        g, m, k = a
        _check_inner(k, b[1], call)
        n = b[2]
        flops = 2.0 * g * m * k * n
        nbytes = g * (m * k * size_a + k * n * size_b + m * n * out_size)
    else:
        raise NoModel(f"grouped GEMM of shapes {a} and {b} not modelled")
    return Cost("matmul", flops, float(nbytes), precision_of(call, 0), matrix=True)


def _mat(call: OpCall, i: int) -> tuple[int, int]:
    s = call.shape(i)
    if len(s) != 2:
        raise NoModel(f"input {i} is {len(s)}-D, a matrix expected")
    return s[0], s[1]


def _batched(call: OpCall, i: int) -> tuple[int, int, int]:
    s = call.shape(i)
    if len(s) != 3:
        raise NoModel(f"input {i} is {len(s)}-D, a batch of matrices expected")
    return s[0], s[1], s[2]


def _broadcast(a: list[int], b: list[int], call: OpCall) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise NoModel(f"batch dimensions {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


def _with_reads(cost: Cost, call: OpCall, indices: list[int]) -> Cost:
    extra = sum(call.nbytes(i) for i in indices if call.has_tensor(i) and call.itemsize(i, 0))
    return Cost(cost.family, cost.flops, cost.bytes + extra, cost.precision, cost.matrix)


@model("_C::cutlass_scaled_mm", "_C::cutlass_scaled_mm_azp")
def cutlass_scaled_mm(call: OpCall) -> Cost:
    out, (m, k), (k2, n) = call.shape(0), _mat(call, 1), _mat(call, 2)
    _check_inner(k, k2, call)
    if out != [m, n]:
        raise NoModel(f"output {out} is not [{m}, {n}]")
    bias = 5 if call.name == "_C::cutlass_scaled_mm" else 7
    c = _gemm(call, 1, m, k, n, 1, 2, extra_inputs=(bias,), out_itemsize=call.itemsize(0))
    return _with_reads(c, call, [3, 4] + ([5, 6] if bias == 7 else []))


def aiter_a8w8(call: OpCall) -> Cost:
    (m, k), (n, k2) = _mat(call, 0), _mat(call, 1)
    _check_inner(k, k2, call)
    rest = [i for i in call.tensor_inputs() if i >= 2]
    out = next((i for i in rest if call.shape(i) == [m, n]), None)
    size = call.itemsize(out) if out is not None else 2
    c = _gemm(call, 1, m, k, n, 0, 1, out_itemsize=size)
    return _with_reads(c, call, [i for i in rest if i != out])


pattern_model(re.compile(r"^aiter::_?gemm_a8w8(?:_\w+)?$"), aiter_a8w8)


@model("aiter::hipb_mm", "_gradlib_C::hipb_mm", "_gradlib_C::rocb_mm")
def hipb_mm(call: OpCall) -> Cost:
    (m, k), (k2, n) = _mat(call, 0), _mat(call, 1)
    _check_inner(k, k2, call)
    code = call.value(4)  # out_dtype, a ScalarType code where recorded
    out = (
        dtypes.scalar_type_itemsize(code)
        if isinstance(code, int) and not isinstance(code, bool)
        else None
    )
    c = _gemm(call, 1, m, k, n, 0, 1, extra_inputs=(3,), out_itemsize=out)
    return _with_reads(c, call, [i for i in (5, 6, 7) if call.has_tensor(i)])
