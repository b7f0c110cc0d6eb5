"""Metric: a plain Python function over column arrays, compiled by Numba on first use.

The function's parameter names say which columns it reads (see columns.py); it is called
once per group with that group's rows, in start-time order, and returns one number. Numba
is imported only here, when a metric is first compiled, so `import hta_fast` stays light.
"""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .errors import MetricCompileError

# What a metric may return, by Numba type, and the column type it becomes.
_OUTPUT_TYPES = {
    "int": np.dtype(np.int64),
    "uint": np.dtype(np.int64),
    "float": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
}


def _numba() -> Any:
    try:
        import numba
    except ImportError as e:  # pragma: no cover - numba is in the udf and test extras
        raise ImportError("hta_fast.udf needs numba: pip install 'hta_fast[udf]'") from e
    return numba


class Metric:
    """A user metric. `function(col_a, col_b, ...)` takes one numpy array per named column and
    returns a number; `Metric(fn)` or the `@metric` decorator wraps it.

    name      the result column's name (default: the function's name)
    columns   the columns it reads, from its parameter names
    """

    def __init__(self, fn: Callable[..., Any], name: Optional[str] = None):
        if isinstance(fn, Metric):
            fn = fn.function
        if not callable(fn):
            raise TypeError(f"a metric is a function, got {type(fn).__name__}")
        params = inspect.signature(fn).parameters.values()
        for p in params:
            if (
                p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                or p.default is not p.empty
            ):
                raise TypeError(
                    f"metric {fn.__name__}: parameter {p.name!r} must be a plain "
                    f"positional parameter naming a column"
                )
        self.function: Callable[..., Any] = fn
        self.name = name or fn.__name__
        self.columns: tuple[str, ...] = tuple(p.name for p in params)
        if not self.columns:
            raise TypeError(f"metric {self.name}: it must take at least one column")
        self._jit: Any = None
        self._output: dict[tuple, np.dtype] = {}

    def __call__(self, *columns: np.ndarray) -> Any:
        """The plain Python function, uncompiled (for checking a metric by hand)."""
        return self.function(*columns)

    def __repr__(self) -> str:
        return f"<Metric {self.name}({', '.join(self.columns)})>"

    @property
    def compiled(self) -> Any:
        """The Numba dispatcher, made on first use; cached on disk when the function lives
        in a file (a function typed into a prompt is compiled once per process)."""
        if self._jit is None:
            numba = _numba()
            try:
                self._jit = numba.njit(cache=True, nogil=True)(self.function)
            except RuntimeError:  # no source file to key the disk cache on
                self._jit = numba.njit(nogil=True)(self.function)
        return self._jit

    def output_dtype(self, columns: Sequence[np.ndarray]) -> np.dtype:
        """Compiles the metric for these columns' types and returns the result's dtype.
        A metric that does not compile raises MetricCompileError naming the column(s) and
        type(s) at fault."""
        numba = _numba()
        argtypes = tuple(numba.typeof(c) for c in columns)
        if argtypes not in self._output:
            disp = self.compiled
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", numba.NumbaWarning)
                    disp.compile(argtypes)
            except numba.core.errors.TypingError as e:
                raise MetricCompileError(self._explain(str(e), columns)) from None
            except numba.core.errors.NumbaError as e:
                raise MetricCompileError(
                    f"metric {self.name} does not compile: {_first_line(str(e))}"
                ) from None
            ret = disp.overloads[argtypes].signature.return_type
            self._output[argtypes] = self._output_of(ret, columns)
        return self._output[argtypes]

    def _output_of(self, ret: Any, columns: Sequence[np.ndarray]) -> np.dtype:
        numba = _numba()
        if isinstance(ret, numba.types.Boolean):
            return _OUTPUT_TYPES["bool"]
        if isinstance(ret, numba.types.Integer):
            return _OUTPUT_TYPES["int"]
        if isinstance(ret, numba.types.Float):
            return _OUTPUT_TYPES["float"]
        raise MetricCompileError(
            f"metric {self.name} must return one number per group, but returns {ret} "
            f"(for columns {_describe(self.columns, columns)})"
        )

    def _explain(self, message: str, columns: Sequence[np.ndarray]) -> str:
        """Numba's typing error in one line, naming the columns on the failing source line."""
        numba = _numba()
        culprit = _failing_line(message)
        on_line = [
            i
            for i, c in enumerate(self.columns)
            if culprit and re.search(rf"\b{re.escape(c)}\b", culprit)
        ]
        # Of the columns on the failing line, those whose type the message names.
        typed = [i for i in on_line if str(numba.typeof(columns[i])) in message]
        named = typed or on_line or list(range(len(self.columns)))
        cols = _describe([self.columns[i] for i in named], [columns[i] for i in named])
        where = f" at `{culprit.strip()}`" if culprit else ""
        return (
            f"metric {self.name} does not compile{where}: {_first_line(message)}; "
            f"column{'s' if len(named) > 1 else ''} {cols}"
        )


def _describe(names: Sequence[str], columns: Sequence[np.ndarray]) -> str:
    return ", ".join(f"{n!r} ({c.dtype} array)" for n, c in zip(names, columns))


def _first_line(message: str) -> str:
    """The first meaningful line of a Numba error, without its colour codes."""
    clean = re.sub(r"\x1b\[[0-9;]*m", "", message)
    for line in clean.splitlines():
        line = line.strip()
        if line and not line.startswith(("Failed in", "During:", "File ")):
            return line.rstrip(":")
    return clean.strip()


def _failing_line(message: str) -> Optional[str]:
    """The source line Numba marks with a '^' line below it, if any."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", message).splitlines()
    for above, line in zip(lines, lines[1:]):
        if line.strip() == "^" and above.strip():
            return above
    return None


def metric(fn: Optional[Callable[..., Any]] = None, *, name: Optional[str] = None) -> Any:
    """Decorator: `@metric` or `@metric(name="...")` turns a function into a Metric."""
    if fn is None:
        return lambda f: Metric(f, name=name)
    return Metric(fn, name=name)
