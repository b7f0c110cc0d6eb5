"""Elementwise (unary, binary, ternary), reductions, copies and casts, and views.

Elementwise: the output has the broadcast shape of the tensor inputs; FLOPs are output
elements times a per-operator count (1 unless listed in FLOPS_PER_ELEMENT; a transcendental
function counts 1, as these operators are bound by memory, not math); bytes are every tensor
input read once plus the output written once. Reductions: FLOPs are the input's elements;
bytes the input plus the output when its size is known (the reduced dims recorded), else the
input alone. An `out=` tensor (one input past the operator's own, shaped as the output) is
written, not read. Copies and casts: source read and destination written, each in its own
dtype, with the source's precision; no FLOPs; gather and index_select read the index and
the selected elements (no more than the source holds: a repeated index reads cache) and
write them; scatters (scatter, scatter_add, scatter_reduce, index_add, index_copy) read the
index and a source element per place written, and read too where they accumulate,
repeat reads its input and writes the repeated output, _foreach_copy_ copies its list.
In-place random fills (normal_, uniform_, ...) write every element, one FLOP each. vLLM's
gated activations (`_C::silu_and_mul`, ...: out [..., d] from input [..., 2 d]) 2 FLOPs an
output element. Views and allocations move nothing (family "view", zero FLOPs and bytes);
composites (`aten::to`, `aten::contiguous`, randn and rand, which fill with normal_ or
uniform_) leave their work to the operators they call (family "composite", zero here,
counted there).
"""

from __future__ import annotations

import math

from .. import dtypes
from ..cost import Cost, model, precision_of
from ..op_call import NoModel, OpCall

UNARY = """abs neg relu relu6 gelu silu sigmoid tanh exp exp2 log log2 log10 sqrt rsqrt sin cos
erf erfinv reciprocal sign floor ceil round trunc clamp clamp_min clamp_max hardtanh
hardswish hardsigmoid leaky_relu elu selu celu softplus mish nan_to_num logical_not
bitwise_not log1p expm1 square threshold isnan isinf isfinite sgn frac glu""".split()
BINARY = """add sub mul div rsub maximum minimum eq ne lt le gt ge pow fmod remainder atan2
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor masked_fill where
addcmul addcdiv lerp threshold_backward gelu_backward silu_backward sigmoid_backward
tanh_backward hardtanh_backward leaky_relu_backward elu_backward mish_backward
hardswish_backward hardsigmoid_backward softplus_backward xlogy true_divide floor_divide
mul_ add_ clamp_min_ copysign hypot""".split()
FLOPS_PER_ELEMENT = {
    "addcmul": 3,
    "addcdiv": 3,
    "lerp": 3,
    "gelu_backward": 2,
    "silu_backward": 2,
    "sigmoid_backward": 2,
    "tanh_backward": 2,
}
REDUCTIONS = """sum mean amax amin max min prod norm linalg_vector_norm var std var_mean
std_mean argmax argmin all any logsumexp nansum count_nonzero""".split()
SCANS = "cumsum cumprod".split()
VIEWS = """view as_strided t transpose permute slice select narrow expand unsqueeze
squeeze detach alias _reshape_alias _unsafe_view empty empty_like empty_strided
resize_ lift_fresh resolve_conj resolve_neg split chunk unbind unflatten view_as expand_as
record_stream set_ split_with_sizes numpy_T lift_fresh_copy
""".split()
# Operators whose work, if any, is done by the operators they call (counted there).
COMPOSITES = """to contiguous type_as reshape_as reshape flatten concat concatenate randn rand
randn_like rand_like""".split()
# In-place random fills: every element written, one FLOP each (the generator's arithmetic,
# counted as one as for a transcendental function).
RANDOM_FILLS = "normal_ uniform_ bernoulli_ random_ exponential_ cauchy_ log_normal_".split()


def _broadcast(shapes: list[list[int]]) -> list[int]:
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for j, d in enumerate([1] * (n - len(s)) + s):
            if d != 1:
                if out[j] not in (1, d):
                    raise NoModel(f"shapes {shapes} do not broadcast")
                out[j] = d
    return out


def _float_inputs(call: OpCall) -> list[int]:
    return [i for i in call.tensor_inputs() if dtypes.precision(call.dtype(i)) is not None]


def _prec(call: OpCall, i: int) -> str:
    """Input i's math precision, FP32 where its dtype has none (an integer or bool)."""
    return dtypes.precision(call.dtype(i)) or "fp32"


# Inputs of each operator's functional form where that is not 1 (unary) or 2 (binary):
# an input past these, a tensor of the output's shape, is the out= tensor (written, never
# read). aten's schemas: add(self, other, alpha), clamp(self, min, max), where(condition,
# self, other), addcmul(self, tensor1, tensor2, value), elu_backward(grad_output, alpha,
# scale, input_scale, is_result, self_or_result), ...
ARITY = {
    **dict.fromkeys("gelu leaky_relu celu glu clamp_min clamp_max round".split(), 2),
    **dict.fromkeys("clamp hardtanh softplus threshold".split(), 3),
    **dict.fromkeys("elu nan_to_num".split(), 4),
    **dict.fromkeys(
        "add sub rsub masked_fill where lerp threshold_backward gelu_backward".split(), 3
    ),
    **dict.fromkeys(
        "addcmul addcdiv hardtanh_backward leaky_relu_backward softplus_backward".split(), 4
    ),
    "elu_backward": 6,
}


def _out_tensor(call: OpCall, base: str) -> int | None:
    """The index of an out= tensor: one input past the functional form's, a tensor shaped
    as the others broadcast (aten::mul(self, other, out) records three inputs)."""
    n = len(call.dims)
    arity = ARITY.get(base, 1 if base in UNARY else 2)
    if n != arity + 1 or not call.has_tensor(n - 1):
        return None
    operands = [i for i in call.tensor_inputs() if i < n - 1]
    if not operands or call.shape(n - 1) != _broadcast([call.shape(i) for i in operands]):
        return None
    return n - 1


@model(*[f"aten::{n}" for n in UNARY + BINARY])
def elementwise(call: OpCall) -> Cost:
    """Every input read once and the output written once; an out= tensor is the output,
    written only; an in-place form reads and writes its first input."""
    base = call.name.split("::")[-1].rstrip("_")
    out_at = _out_tensor(call, base)
    tensors = [i for i in call.tensor_inputs() if i != out_at]
    if not tensors:
        raise NoModel("no tensor input with a shape and dtype")
    out = math.prod(_broadcast([call.shape(i) for i in tensors]))
    flops = float(out * FLOPS_PER_ELEMENT.get(base, 1))
    main = (_float_inputs(call) or tensors)[0]
    written = call.itemsize(out_at) if out_at is not None else call.itemsize(main)
    nbytes = sum(call.nbytes(i) for i in tensors) + out * written
    return Cost("elementwise", flops, float(nbytes), _prec(call, main))


@model(
    "aten::fill_",
    "aten::zero_",
    "aten::zeros",
    "aten::ones",
    "aten::full",
    "aten::zeros_like",
    "aten::ones_like",
    "aten::full_like",
)
def fill(call: OpCall) -> Cost:
    if call.name in ("aten::zeros", "aten::ones", "aten::full"):
        shape = call.value(0)
        if not (isinstance(shape, list) and all(isinstance(d, int) for d in shape)):
            raise NoModel("output size not recorded (Concrete Inputs missing)")
        return Cost("elementwise", 0.0, float(math.prod(shape) * 4), "fp32")
    return Cost(
        "elementwise",
        0.0,
        float(call.nbytes(0)),
        precision_of(call, 0) if dtypes.precision(call.dtype(0)) is not None else "fp32",
    )


@model(*[f"aten::{n}" for n in REDUCTIONS])
def reduction(call: OpCall) -> Cost:
    x = call.shape(0)
    n = math.prod(x)
    size = call.itemsize(0)
    factor = (
        3
        if call.name.split("::")[-1]
        in ("var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm")
        else 1
    )
    out_elems = _reduced_elems(call, x)
    nbytes = n * size + (out_elems or 0) * size
    precision = dtypes.precision(call.dtype(0)) or "fp32"
    return Cost("reduction", float(n * factor), float(nbytes), precision)


def _reduced_elems(call: OpCall, x: list[int]) -> int | None:
    """Output elements when the reduced dims are recorded (argument 1), else None."""
    if len(call.dims) == 1:
        return 1  # reduction over everything
    dims = call.value(1)
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = [dims]
    if isinstance(dims, list) and dims and all(isinstance(d, int) for d in dims) and x:
        keep = [d for j, d in enumerate(x) if j not in {k % len(x) for k in dims}]
        return math.prod(keep)
    return None


@model(*[f"aten::{n}" for n in SCANS])
def scan(call: OpCall) -> Cost:
    n = call.numel(0)
    return Cost(
        "reduction", float(n), float(2 * call.nbytes(0)), dtypes.precision(call.dtype(0)) or "fp32"
    )


@model("aten::copy_")
def copy(call: OpCall) -> Cost:
    """copy_(dst, src): read src, write dst, each in its own dtype (a cast when they differ)."""
    return Cost("copy", 0.0, float(call.nbytes(0) + call.nbytes(1)), _prec(call, 1))


@model("aten::_to_copy", "aten::clone")
def to_copy(call: OpCall) -> Cost:
    """_to_copy(x, dtype, ...): the output dtype is a ScalarType code; when it is not
    recorded the output keeps the input's."""
    code = call.value(1) if call.name == "aten::_to_copy" else None
    cast = (
        dtypes.scalar_type_itemsize(code)
        if isinstance(code, int) and not isinstance(code, bool)
        else None
    )
    out_size = cast or call.itemsize(0)
    return Cost("copy", 0.0, float(call.nbytes(0) + call.numel(0) * out_size), _prec(call, 0))


@model("aten::cat", "aten::stack", "aten::_cat", "aten::cat_out", "aten::_cat_out")
def concatenate(call: OpCall) -> Cost:
    """cat(tensors, dim[, out]): every input read once and written once into the output, so
    bytes read = bytes written = the inputs' sum. The TensorList's shapes are its Input Dims
    entry when the profiler records them (a list of shapes; their dtypes are not recorded:
    the out tensor's, else 4 bytes). Older profilers write [] for a list of tensors; then
    an `out=` tensor (the third input) gives the size, or the calls' autograd nodes
    (call.extra["out_bytes"], see model.cat_sizes)."""
    out_size = call.itemsize(2) if call.has_tensor(2) and dtypes.itemsize(call.dtype(2)) else None
    lists = call.dims[0] if call.dims and isinstance(call.dims[0], list) else []
    shapes = [s for s in lists if isinstance(s, list)]
    if shapes and all(isinstance(d, int) for s in shapes for d in s):
        types = call.types[0] if call.types and isinstance(call.types[0], list) else None
        sizes = (
            [dtypes.itemsize(t) or out_size or 4 for t in types]
            if types and len(types) == len(shapes)
            else [out_size or 4] * len(shapes)
        )
        nbytes = sum(math.prod(s) * z for s, z in zip(shapes, sizes))
        return Cost("copy", 0.0, float(2 * nbytes), "fp32")
    if call.dtype(0) == "TensorList" and out_size is not None:
        return Cost("copy", 0.0, float(2 * call.nbytes(2)), "fp32")
    if call.dtype(0) == "TensorList" and call.dims and call.dims[0] == []:
        tied = (call.extra or {}).get("out_bytes")
        if tied is not None:  # from the calls' CatBackward0 nodes (model.cat_sizes)
            extra = call.extra or {}
            call.assume(
                "the list's sizes are not recorded: the mean output of the "
                f"{extra.get('tied', '?')} of {extra.get('calls', '?')} calls tied to "
                "CatBackward0 nodes stands for every call of the group"
            )
            return Cost("copy", 0.0, float(2 * tied), "fp32")
        raise NoModel(
            "TensorList shapes not recorded (this profiler writes [] for a list of "
            "tensors), no out= tensor, and no CatBackward0 node tied to these calls"
        )
    raise NoModel(
        f"TensorList input not recorded as a list of shapes: {call.dims[:1]!r} "
        f"of type {call.types[:1]!r}"
    )


@model(*[f"aten::{n}" for n in VIEWS])
def view(call: OpCall) -> Cost:
    return Cost("view", 0.0, 0.0, "fp32")


@model(*[f"aten::{n}" for n in COMPOSITES])
def composite(call: OpCall) -> Cost:
    return Cost("composite", 0.0, 0.0, "fp32")


@model(*[f"aten::{n}" for n in RANDOM_FILLS])
def random_fill(call: OpCall) -> Cost:
    n = call.numel(0)
    return Cost(
        "elementwise", float(n), float(call.nbytes(0)), dtypes.precision(call.dtype(0)) or "fp32"
    )


@model("aten::gather")
def gather(call: OpCall) -> Cost:
    """gather(self, dim, index, sparse_grad[, out]): the index read, one element of self
    read per index (no more than self holds: repeated indices read it again from cache),
    one written per index."""
    n = call.numel(2)
    size = call.itemsize(0)
    read = min(n, call.distinct(0)) * size
    return Cost("copy", 0.0, float(call.nbytes(2) + read + n * size), _prec(call, 0))


@model("aten::index_select")
def index_select(call: OpCall) -> Cost:
    """index_select(self, dim, index): self with dimension `dim` cut to the index's length,
    read (the selected slices, no more than self holds) and written."""
    x = call.shape(0)
    dim = call.value(1)
    if not isinstance(dim, int) or isinstance(dim, bool) or not x:
        raise NoModel("dim not recorded (Concrete Inputs missing)")
    d = dim % len(x)
    out = math.prod(x[:d] + [call.numel(2)] + x[d + 1 :])
    size = call.itemsize(0)
    read = min(out, call.distinct(0)) * size
    return Cost("copy", 0.0, float(call.nbytes(2) + read + out * size), _prec(call, 0))


@model("aten::repeat")
def repeat(call: OpCall) -> Cost:
    """repeat(self, repeats): the input read, the output (its shape times repeats, which
    may add leading dimensions) written."""
    x = call.shape(0)
    reps = call.value(1)
    if not (isinstance(reps, list) and all(isinstance(r, int) for r in reps)) or len(reps) < len(x):
        raise NoModel("repeats not recorded (Concrete Inputs missing)")
    out = math.prod(reps) * math.prod(x)
    return Cost("copy", 0.0, float(call.nbytes(0) + out * call.itemsize(0)), "fp32")


@model("aten::_foreach_copy_")
def foreach_copy(call: OpCall) -> Cost:
    """_foreach_copy_(self, src, non_blocking): each src tensor read and copied into self.
    Lists' dtypes are not recorded: 4 bytes an element, as for cat."""
    src = call.list_shapes(1)
    nbytes = sum(math.prod(s) * z for s, z in src)
    return Cost("copy", 0.0, float(2 * nbytes), "fp32")


# vLLM's gated activations, (out, input [..., 2 d]): the activation of the first half times
# the second, 2 FLOPs per output element; input read, out written.
@model("_C::silu_and_mul", "_C::mul_and_silu", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul")
def gated_activation(call: OpCall) -> Cost:
    out, x = call.shape(0), call.shape(1)
    if not x or x[-1] != 2 * out[-1] or x[:-1] != out[:-1]:
        raise NoModel(f"gated activation of input {x} into {out}")
    n = math.prod(out)
    p = dtypes.precision(call.dtype(1)) or "fp32"
    return Cost("elementwise", float(2 * n), float(call.nbytes(1) + call.nbytes(0)), p)


@model(
    "aten::scatter",
    "aten::scatter_add",
    "aten::scatter_reduce",
    "aten::index_add",
    "aten::index_copy",
)
def scatter(call: OpCall) -> Cost:
    """scatter(self, dim, index, src|value, ...), index_add(self, dim, index, source, ...):
    one element of the source (or a slice, for index_add/index_copy: the source's size)
    read per place written, the index read, and that many elements of self written (read
    too where they accumulate: scatter_add, scatter_reduce, index_add). The out-of-place
    forms first copy self (read and written); the in-place forms (`_`) do not."""
    base = call.name.split("::")[-1]
    in_place = base.endswith("_")
    base = base.rstrip("_")
    size = call.itemsize(0)
    if base in ("index_add", "index_copy"):
        n = call.numel(3)
    else:
        n = call.numel(2)
    accumulates = base in ("scatter_add", "scatter_reduce", "index_add")
    nbytes = call.nbytes(2) + n * size * (3 if accumulates else 2)
    if not in_place:
        nbytes += 2 * call.nbytes(0)
    return Cost("copy", float(n if accumulates else 0), float(nbytes), _prec(call, 0))
