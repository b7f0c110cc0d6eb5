"""Normalisation (layer, group, batch, RMS), softmax and dropout: memory-bound operators.

FLOPs per element (x = input elements) are round counts of the arithmetic, not measured
instruction counts: layer/group norm forward 5 (mean, variance, normalise) + 2 with an affine
weight, backward 8 (aiter's group norm as aten's); batch norm the same; RMS norm forward 4,
backward 6 (vLLM's rms_norm 4, fused_add_rms_norm 5 and both tensors read and written); softmax forward 5
(max, subtract, exp, sum, divide), backward 3; dropout forward 2 (random number, scale),
backward 1. Bytes are the least traffic: the input read and the output written once (the
backward also reads the saved input or output), plus the parameters; dropout writes (and
its backward reads) a one-byte mask.
"""

from __future__ import annotations

import math

from .. import dtypes
from ..cost import Cost, model
from ..op_call import NoModel, OpCall


def _elems(call: OpCall, i: int = 0) -> tuple[int, int, str]:
    return call.numel(i), call.itemsize(i), dtypes.precision(call.dtype(i)) or "fp32"


def _params(call: OpCall, indices: tuple[int, ...]) -> int:
    return sum(call.nbytes(i) for i in indices if call.has_tensor(i))


# where the weight (and after it the bias) is: group norm's (input, weight, bias, ...) and
# (input, num_groups, weight, bias, ...) signatures; aiter's group norm (x, num_groups,
# weight, bias, eps) has the second
_WEIGHT_AT = {
    "aten::native_layer_norm": 2,
    "aten::layer_norm": 2,
    "aten::native_group_norm": 1,
    "aten::group_norm": 2,
    "aiter::_groupnorm_run": 2,
}


@model(*_WEIGHT_AT)
def layer_norm(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    weight = _WEIGHT_AT[call.name]
    affine = call.has_tensor(weight)
    return Cost(
        "norm",
        float(n * (7 if affine else 5)),
        float(2 * n * size + _params(call, (weight, weight + 1))),
        p,
    )


@model("aten::native_layer_norm_backward", "aten::native_group_norm_backward")
def layer_norm_backward(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    params = _params(call, (5, 6)) if "layer" in call.name else _params(call, (4,))
    return Cost("norm", float(8 * n), float(3 * n * size + 2 * params), p)


@model(
    "aten::native_batch_norm",
    "aten::batch_norm",
    "aten::_batch_norm_impl_index",
    "aten::cudnn_batch_norm",
    "aten::miopen_batch_norm",
    "aten::_native_batch_norm_legit",
    "aten::_native_batch_norm_legit_no_training",
    "aten::instance_norm",
)
def batch_norm(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("norm", float(7 * n), float(2 * n * size + _params(call, (1, 2, 3, 4))), p)


@model(
    "aten::native_batch_norm_backward",
    "aten::cudnn_batch_norm_backward",
    "aten::miopen_batch_norm_backward",
    "aten::batch_norm_backward",
)
def batch_norm_backward(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("norm", float(8 * n), float(3 * n * size + 2 * _params(call, (2,))), p)


@model("aten::rms_norm", "aten::_fused_rms_norm")
def rms_norm(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("norm", float(4 * n), float(2 * n * size + _params(call, (2,))), p)


@model("_C::rms_norm")
def vllm_rms_norm(call: OpCall) -> Cost:
    """vLLM's (result, input, weight, epsilon): input read, result written."""
    n, size, p = _elems(call, 1)
    return Cost("norm", float(4 * n), float(2 * n * size + _params(call, (2,))), p)


@model("_C::fused_add_rms_norm")
def vllm_fused_add_rms_norm(call: OpCall) -> Cost:
    """vLLM's in-place (input, residual, weight, epsilon): residual += input, then input =
    rms_norm(residual): both read and both written, an add and the norm per element."""
    n, size, p = _elems(call)
    return Cost("norm", float(5 * n), float(4 * n * size + _params(call, (2,))), p)


@model("aten::_fused_rms_norm_backward")
def rms_norm_backward(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("norm", float(6 * n), float(3 * n * size + 2 * _params(call, (3,))), p)


@model(
    "aten::_softmax",
    "aten::softmax",
    "aten::_log_softmax",
    "aten::log_softmax",
    "aten::_safe_softmax",
)
def softmax(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    out_size = 4 if call.value(2) is True and call.name.startswith("aten::_") else size
    return Cost("softmax", float(5 * n), float(n * (size + out_size)), p)


@model("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def softmax_backward(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("softmax", float(3 * n), float(n * (call.itemsize(0) + call.itemsize(1) + size)), p)


@model(
    "aten::native_dropout",
    "aten::dropout",
    "aten::feature_dropout",
    "aten::fused_dropout",
    "aten::_fused_dropout",
)
def dropout(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    return Cost("dropout", float(2 * n), float(2 * n * size + n), p)


@model("aten::native_dropout_backward", "aten::_masked_scale")
def dropout_backward(call: OpCall) -> Cost:
    n, size, p = _elems(call)
    if math.prod(call.shape(1)) != n:
        raise NoModel("mask and gradient sizes differ")
    return Cost("dropout", float(n), float(2 * n * size + n), p)
