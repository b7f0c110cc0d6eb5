"""torch.einsum: contractions named by an equation ("bhqd,bhkd->bhqk").

Source of shapes: `aten::einsum(str equation, Tensor[] tensors, *, int[]? path)`; the
operands' shapes are the TensorList's entry in Input Dims (a list of shapes), the equation
and the contraction path are Concrete Inputs. Profilers that do not record strings leave the
equation out: then there is no model, and the reason says so (the shapes alone do not tell
which dimensions are contracted).

Every label (and every dimension an ellipsis stands for, broadcast from the right) has one
size; a label of size 1 broadcasts. Two operands: FLOPs = 2 x the product of every distinct
label's size when a label is summed (a multiply-add per term), or the product alone when none
is (an outer or elementwise product: one multiply per output element). More operands are
contracted pairwise, along `path` when it is recorded (opt_einsum's order, as torch passes
it: each pair of positions is taken out of the list and its result appended), else left to
right (torch's order without a path); each step counts as a two-operand einsum whose output
keeps the labels still needed. One operand: a reduction (its elements, when a label is
summed) or a view (permutation, diagonal: no work). Bytes: the operands read once and the
output written once. The operands' dtypes are those of the list when recorded; profilers
record a list as "TensorList" without them, and then 4 bytes an element and fp32 are assumed
(as for cat).
"""

from __future__ import annotations

import math
import re
from typing import Optional

from .. import dtypes
from ..cost import Cost, model
from ..op_call import NoModel, OpCall

_TERM = re.compile(r"^(?:[A-Za-z]|\.\.\.)*$")


def _parse(equation: str) -> tuple[list[str], Optional[str]]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    for t in terms + ([rhs] if arrow else []):
        if not _TERM.match(t) or t.count("...") > 1:
            raise NoModel(f"einsum equation {equation!r} not understood")
    return terms, (rhs if arrow else None)


def _labels(term: str, shape: list[int]) -> list[str]:
    """One label per dimension: the term's letters, the ellipsis' dimensions as "...k"
    counted from the right (so that they broadcast across operands)."""
    letters = term.replace("...", "")
    if "..." not in term:
        if len(letters) != len(shape):
            raise NoModel(f"einsum term {term!r} for a {len(shape)}-D operand")
        return list(letters)
    n = len(shape) - len(letters)
    if n < 0:
        raise NoModel(f"einsum term {term!r} for a {len(shape)}-D operand")
    head, tail = term.split("...")
    return list(head) + [f"...{n - 1 - j}" for j in range(n)] + list(tail)


def _sizes(operands: list[list[str]], shapes: list[list[int]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for labels, shape in zip(operands, shapes):
        for label, d in zip(labels, shape):
            known = sizes.get(label, 1)
            if d != known and 1 not in (d, known):
                raise NoModel(f"einsum label {label!r} has sizes {known} and {d}")
            sizes[label] = max(known, d)
    return sizes


def _output(operands: list[list[str]], rhs: Optional[str], ell: list[str]) -> list[str]:
    if rhs is not None:
        head, _, tail = rhs.partition("...")
        return list(head) + (ell if "..." in rhs else []) + list(tail)
    counts: dict[str, int] = {}
    for labels in operands:
        for label in labels:
            if not label.startswith("..."):
                counts[label] = counts.get(label, 0) + 1
    return ell + sorted(label for label, c in counts.items() if c == 1)


def _step_flops(a: list[str], b: list[str], keep: set[str], sizes: dict[str, int]) -> float:
    every = set(a) | set(b)
    product = float(math.prod(sizes[label] for label in every))
    summed = every - keep
    return 2.0 * product if summed else product


def contraction_flops(
    operands: list[list[str]], out: list[str], sizes: dict[str, int], path: Optional[list[int]]
) -> tuple[float, bool]:
    """FLOPs of contracting the operands pairwise (see the module's docstring), and whether
    any label is summed on the way."""
    ops = [list(o) for o in operands]
    order: list[tuple[int, int]]
    if path is not None:
        if len(path) % 2 or len(path) // 2 != len(ops) - 1:
            raise NoModel(f"einsum path {path} does not fit {len(ops)} operands")
        order = [(path[k], path[k + 1]) for k in range(0, len(path), 2)]
    else:
        order = [(0, 1)] * (len(ops) - 1)
    flops, summed = 0.0, False
    for i, j in order:
        if not (0 <= i < len(ops) and 0 <= j < len(ops)) or i == j:
            raise NoModel(f"einsum path {path} does not fit {len(operands)} operands")
        a, b = ops[i], ops[j]
        rest = [o for k, o in enumerate(ops) if k not in (i, j)]
        keep = set(out).union(*rest) if rest else set(out)
        flops += _step_flops(a, b, keep, sizes)
        summed = summed or bool((set(a) | set(b)) - keep)
        merged = [label for label in dict.fromkeys(a + b) if label in keep]
        ops = rest + [merged]
    return flops, summed


@model("aten::einsum")
def einsum(call: OpCall) -> Cost:
    equation = call.text(0)
    if equation is None:
        raise NoModel("einsum equation not recorded (this profiler records no strings)")
    terms, rhs = _parse(equation)
    shapes = [s for s, _ in call.list_shapes(1)]
    if len(terms) != len(shapes) or not all(all(isinstance(d, int) for d in s) for s in shapes):
        raise NoModel(f"einsum {equation!r} of {len(shapes)} operands {shapes}")
    operands = [_labels(t, s) for t, s in zip(terms, shapes)]
    sizes = _sizes(operands, shapes)
    ell = sorted(
        {label for o in operands for label in o if label.startswith("...")},
        key=lambda label: -int(label[3:]),
    )
    out = _output(operands, rhs, ell)
    if any(label not in sizes for label in out):
        raise NoModel(f"einsum output labels {out} not in its operands")
    types = call.types[1] if len(call.types) > 1 and isinstance(call.types[1], list) else None
    sizes_b = (
        [dtypes.itemsize(t) or 4 for t in types] if types and len(types) == len(shapes) else []
    )
    item = sizes_b or [4] * len(shapes)
    precision = (dtypes.precision(types[0]) if types else None) or "fp32"
    in_bytes = sum(math.prod(s) * z for s, z in zip(shapes, item))
    out_elems = math.prod(sizes[label] for label in out)
    if len(operands) == 1:
        if set(operands[0]) - set(out):
            n = math.prod(shapes[0])
            return Cost("reduction", float(n), float(in_bytes + out_elems * item[0]), precision)
        return Cost("view", 0.0, 0.0, precision)
    path = call.value(2)
    if not (isinstance(path, list) and all(isinstance(x, int) for x in path)):
        path = None
    flops, summed = contraction_flops(operands, out, sizes, path)
    family = "matmul" if summed else "elementwise"
    return Cost(family, flops, float(in_bytes + out_elems * item[0]), precision, matrix=summed)
