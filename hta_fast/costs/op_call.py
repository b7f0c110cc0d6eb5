"""One operator call as the FLOP models see it: name, input shapes, dtypes and the concrete
scalar inputs, parsed from the raw JSON text the profiler records (`Input Dims`, `Input
type`, `Concrete Inputs`). Parsing happens once per distinct shape group, never per event."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Optional

from . import dtypes


class NoModel(Exception):
    """Raised by a FLOP model that cannot cost this call; the message is the reason."""


@dataclasses.dataclass
class OpCall:
    name: str
    dims: list  # per input: a shape (list of ints), [] for a scalar/none, or nested
    types: list  # per input: dtype spelling, "Scalar", "TensorList", ...
    concrete: list  # per input: the concrete value's text ("" where not recorded)
    # what other operators of the trace tell about this call (flops_fbgemm: a lookup's
    # output width read from its autograd node); None when nothing
    extra: Optional[dict] = None
    # per input: its strides where the profiler recorded them (Input Strides), else []
    strides: list = dataclasses.field(default_factory=list)
    # what a model had to assume that changes its answer (each a sentence; see assume)
    assumed: list = dataclasses.field(default_factory=list)

    @staticmethod
    def parse(
        name: str,
        dims_text: Optional[str],
        types_text: Optional[str],
        concrete_text: Optional[str],
        strides_text: Optional[str] = None,
    ) -> "OpCall":
        """Raises NoModel when the shapes are missing or not JSON lists. Strides that are not
        a JSON list are left out (they refine the bytes; they are not needed)."""
        if dims_text is None:
            raise NoModel("no input shapes recorded (record_shapes off)")
        dims = _json_list(dims_text, "Input Dims")
        types = _json_list(types_text, "Input type") if types_text is not None else []
        concrete = _json_list(concrete_text, "Concrete Inputs") if concrete_text is not None else []
        try:
            strides = _json_list(strides_text, "Input Strides") if strides_text else []
        except NoModel:
            strides = []
        return OpCall(name, dims, types, concrete, strides=strides)

    def assume(self, what: str) -> None:
        """Record an assumption the model made that changes its answer: the row is then
        `uncertain`, with these sentences as `uncertain_why`."""
        if what not in self.assumed:
            self.assumed.append(what)

    # --- inputs ---------------------------------------------------------------------
    def shape(self, i: int) -> list[int]:
        """Input i's shape; NoModel when it is absent or not a flat list of ints."""
        if i >= len(self.dims):
            raise NoModel(f"input {i} not recorded")
        s = self.dims[i]
        if not isinstance(s, list) or not all(isinstance(d, int) for d in s):
            raise NoModel(f"input {i} shape {s!r} is not a tensor shape")
        if any(d < 0 for d in s):
            raise NoModel(f"input {i} has a negative dimension {s}")
        return s

    def has_tensor(self, i: int) -> bool:
        return (
            i < len(self.dims)
            and isinstance(self.dims[i], list)
            and len(self.dims[i]) > 0
            and all(isinstance(d, int) for d in self.dims[i])
        )

    def numel(self, i: int) -> int:
        return math.prod(self.shape(i))

    def dtype(self, i: int) -> str:
        return self.types[i] if i < len(self.types) else ""

    def itemsize(self, i: int, default: Optional[int] = None) -> int:
        size = dtypes.itemsize(self.dtype(i))
        if size is None:
            if default is not None:
                return default
            raise NoModel(f"input {i} dtype {self.dtype(i)!r} unknown")
        return size

    def nbytes(self, i: int) -> int:
        """Bytes input i occupies: its distinct elements (a dimension of stride 0, an
        expanded or broadcast view, repeats one element: counted once) times its size."""
        return self.distinct(i) * self.itemsize(i)

    def distinct(self, i: int) -> int:
        """Input i's elements in memory: numel, less the repeats of stride-0 dimensions
        where Input Strides records them."""
        shape = self.shape(i)
        st = self.strides[i] if i < len(self.strides) else None
        if not (isinstance(st, list) and len(st) == len(shape)):
            return math.prod(shape)
        if not all(isinstance(x, int) for x in st):
            return math.prod(shape)
        return math.prod(d for d, x in zip(shape, st) if x != 0)

    def tensor_inputs(self) -> list[int]:
        """Indices of inputs that are plain tensors (a shape and a known dtype)."""
        return [
            i
            for i in range(len(self.dims))
            if self.has_tensor(i) and dtypes.itemsize(self.dtype(i)) is not None
        ]

    def list_shapes(self, i: int) -> list[tuple[list[int], int]]:
        """Shapes (and item sizes) of a TensorList input: Input Dims holds a list of shapes."""
        if i >= len(self.dims) or not isinstance(self.dims[i], list):
            raise NoModel(f"input {i} not recorded")
        shapes = [s for s in self.dims[i] if isinstance(s, list)]
        if not shapes:
            raise NoModel(f"input {i} holds no tensor shapes")
        return [(s, 4) for s in shapes]

    def value(self, i: int) -> Any:
        """The concrete input i parsed as JSON-ish text (ints, floats, lists, True/False);
        None when not recorded."""
        if i >= len(self.concrete):
            return None
        text = self.concrete[i]
        if not isinstance(text, str):
            return text
        text = text.strip()
        if text == "":
            return None
        if text in ("True", "False"):
            return text == "True"
        try:
            return json.loads(text)
        except ValueError:
            return text

    def numbers(self, i: int) -> Optional[list[float]]:
        """A concrete number or number list input as floats; None when not recorded or not
        numbers. Lenient where JSON is not: profilers write float lists as "[2., 2.]"."""
        v = self.value(i)
        if isinstance(v, str):
            parts = v.strip().strip("[]").split(",")
            try:
                return [float(p) for p in parts if p.strip()]
            except ValueError:
                return None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return [float(v)]
        if isinstance(v, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v
        ):
            return [float(x) for x in v]
        return None

    def text(self, i: int) -> Optional[str]:
        """A concrete string input without its quotes (an einsum equation); None when the
        profiler did not record it."""
        v = self.value(i)
        if not isinstance(v, str):
            return None
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        return v or None

    def int_list(
        self, i: int, length: int, default: Optional[int] = None, what: str = ""
    ) -> list[int]:
        """A concrete int or int list input spread to `length` values (stride=2 -> [2, 2]).
        Where it is not recorded, `default` stands in, and with `what` (the argument's
        name) that is recorded as an assumption."""
        v = self.value(i)
        if v is None:
            if default is None:
                raise NoModel(f"concrete input {i} not recorded")
            if what:
                self.assume(f"{what} not recorded (no Concrete Inputs): {default} assumed")
            return [default] * length
        if isinstance(v, int) and not isinstance(v, bool):
            return [v] * length
        if isinstance(v, list) and all(isinstance(x, int) for x in v):
            return v * length if len(v) == 1 else v
        raise NoModel(f"concrete input {i} {v!r} is not an int list")


def _json_list(text: str, what: str) -> list:
    try:
        value = json.loads(text)
    except ValueError:
        raise NoModel(f"{what} is not JSON: {text[:60]!r}") from None
    if not isinstance(value, list):
        raise NoModel(f"{what} is not a list: {text[:60]!r}")
    return value
