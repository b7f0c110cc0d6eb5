"""What a FLOP model returns, and the registry that maps operator names to models.

Each family module (costs/models/) registers its models with `@model("aten::mm", ...)`. A
model takes an OpCall and returns a Cost, or raises NoModel with the reason it cannot cost
the call. A family whose calls need what other calls of their rank tell registers that
look-up too (`rank_extras`), so that the code applying the models never names a family.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable, Optional

from . import dtypes
from .op_call import NoModel, OpCall


@dataclasses.dataclass(frozen=True)
class Cost:
    """family     the model family ("matmul", "conv", "attention", "elementwise", ...)
    flops         floating-point operations of one call (a multiply-add counts 2)
    bytes         bytes one call must move to and from device memory at least
    precision     the math precision it runs in ("fp32", "bf16", ...): a device peak's key
    matrix        True when the work runs on matrix units (tensor cores) where the device has them
    assumed       what the model had to assume that changes the answer (OpCall.assume): the
                  row is `uncertain` where this is not empty
    """

    family: str
    flops: float
    bytes: float
    precision: str
    matrix: bool = False
    assumed: tuple[str, ...] = ()


Model = Callable[[OpCall], Cost]
MODELS: dict[str, Model] = {}
# models of operators named by pattern (one name per optimizer, dtype, ...), tried in order
# after the exact names
PATTERN_MODELS: list[tuple[re.Pattern, Model]] = []


def model(*names: str) -> Callable[[Model], Model]:
    def register(fn: Model) -> Model:
        for n in names:
            MODELS[n] = fn
        return fn

    return register


def pattern_model(pattern: re.Pattern, fn: Model) -> None:
    """Register a model for every operator name the pattern matches (tried after the exact
    names)."""
    PATTERN_MODELS.append((pattern, fn))


# One rank's operator groups, each (key, name, Input Dims, Input type, Concrete Inputs), to
# the `extra` some of them need, {key: extra} (an FBGEMM lookup's output width, read from
# its autograd node).
Group = tuple[Any, str, Optional[str], Optional[str], Optional[str]]
RankExtras = Callable[[Iterable[Group]], dict]
RANK_EXTRAS: list[RankExtras] = []


def rank_extras(fn: RankExtras) -> RankExtras:
    """Register a look-up of what a rank's groups tell about one another (see above)."""
    RANK_EXTRAS.append(fn)
    return fn


def precision_of(call: OpCall, i: int) -> str:
    p = dtypes.precision(call.dtype(i))
    if p is None:
        raise NoModel(f"input {i} dtype {call.dtype(i)!r} has no math precision")
    return p


def _wrapper(call: OpCall) -> Cost:
    return Cost("composite", 0.0, 0.0, "fp32")


def is_autograd_wrapper(name: str) -> bool:
    """Autograd's nodes (`MulBackward0`, `autograd::engine::evaluate_function: ...`) run
    no kernels of their own: their work is in the aten operators they call."""
    return (
        name.startswith("autograd::engine::evaluate_function")
        or (name.rstrip("0123456789").endswith("Backward") and "::" not in name)
        or name == "torch::autograd::AccumulateGrad"
    )


def lookup(name: str) -> Model | None:
    """The model of an operator name; in-place variants (`aten::add_`) share their base's."""
    if is_autograd_wrapper(name):
        return _wrapper
    fn = MODELS.get(name)
    if fn is None and name.endswith("_") and not name.endswith("__"):
        fn = MODELS.get(name[:-1])
    if fn is None:
        fn = next((m for p, m in PATTERN_MODELS if p.match(name)), None)
    return fn
