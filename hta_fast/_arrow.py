"""Raw core output (numpy columns with sentinels) -> Arrow tables, without copying values."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import _core
from .schema import ENUM_COLUMNS, NO_SENTINEL, STRING_COLUMNS, field_metadata

_ARROW_TYPES = {
    np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32(),
    np.dtype(np.uint8): pa.uint8(), np.dtype(np.float32): pa.float32(),
    np.dtype(np.float64): pa.float64(),
}


def string_dictionary(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.large_string(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def labels(names: list[str]) -> pa.Array:
    """A small string array built from buffers: pa.array() on a list would import pandas."""
    encoded = [n.encode() for n in names]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _numeric(values: np.ndarray, nullable: bool) -> pa.Array:
    validity = None
    if nullable and len(values):
        sentinel = values.dtype.type(-1) if values.dtype.kind in "iu" else values.dtype.type(0)
        bits = _core.validity(values, sentinel)
        validity = None if bits is None else pa.py_buffer(bits)
    return pa.Array.from_buffers(_ARROW_TYPES[values.dtype], len(values),
                                 [validity, pa.py_buffer(values)])


_PHASES = labels(["f", "s", "t"])


def column(table: str, name: str, values: np.ndarray, dictionary: pa.Array) -> pa.Array:
    if name in STRING_COLUMNS.get(table, ()):
        return pa.DictionaryArray.from_arrays(_numeric(values, True), dictionary, safe=False)
    enum_labels = ENUM_COLUMNS.get((table, name))
    if enum_labels is not None:
        return pa.DictionaryArray.from_arrays(_numeric(values, False), labels(enum_labels), safe=False)
    if table == "flows" and name == "phase":
        codes = np.searchsorted(np.frombuffer(b"fst", np.uint8), values).astype(np.uint8)
        return pa.DictionaryArray.from_arrays(_numeric(codes, False), _PHASES, safe=False)
    return _numeric(values, name not in NO_SENTINEL)


def table(name: str, columns: dict[str, np.ndarray], dictionary: pa.Array) -> pa.Table:
    arrays, fields = [], []
    for col, values in columns.items():
        arr = column(name, col, values, dictionary)
        arrays.append(arr)
        fields.append(pa.field(col, arr.type, metadata=field_metadata(name, col)))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
