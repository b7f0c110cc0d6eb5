"""Raw core output (numpy columns with sentinels) -> Arrow tables, without copying values.

How each column is read comes from its spec (hta_fast.schema.COLUMNS, declared in the core):
string ids become a dictionary over the string pool, enum codes a dictionary over their
labels, and a sentinel a null."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa

from . import _core
from .schema import COLUMNS, ColumnRole, ColumnSpec, field_metadata


def string_dictionary(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(
        pa.large_string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def masked(values: np.ndarray, null: np.ndarray, arrow_type: pa.DataType | None = None) -> pa.Array:
    """A numeric array null where `null` holds, built from buffers: pa.array(mask=...)
    imports pandas, a second or so the first time in a process."""
    arrow_type = arrow_type or pa.from_numpy_dtype(values.dtype)
    values = np.ascontiguousarray(values, dtype=arrow_type.to_pandas_dtype())
    validity = None
    if null.any():
        validity = pa.py_buffer(np.packbits(~np.asarray(null, bool), bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)])


def numeric(values: np.ndarray) -> pa.Array:
    """A numeric array without nulls over the numpy buffer, built from buffers: pa.array()
    on numpy would import pandas."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(
        pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
    )


def labels(names: list[str]) -> pa.Array:
    """A small string array built from buffers: pa.array() on a list would import pandas."""
    encoded = [n.encode() for n in names]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


# Arrow value type name (ColumnSpec.type) -> (Arrow type, the numpy dtype its buffer holds).
_TYPES = {
    name: (pa.type_for_alias(name), np.dtype(name))
    for name in {spec.type for spec in COLUMNS.values()}
}


def _numeric(values: np.ndarray, type_name: str, sentinel: int | float | None) -> pa.Array:
    arrow_type, dtype = _TYPES[type_name]
    if values.dtype != dtype:  # the buffer is handed over as is: its layout must be the type's
        raise TypeError(f"a {type_name} column holds {values.dtype} values")
    validity = None
    if sentinel is not None and len(values):
        bits = _core.validity(values, values.dtype.type(sentinel))
        validity = None if bits is None else pa.py_buffer(bits)
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)])


class _Enum:
    """An enum column's dictionary, and the codes' positions in it when they are not 0..n-1
    (flow phases are stored as their character)."""

    def __init__(self, spec: ColumnSpec):
        codes = np.array([c for c, _ in spec.labels], np.int64)
        self.dictionary = labels([name for _, name in spec.labels])
        self.codes = None if np.array_equal(codes, np.arange(len(codes))) else codes

    def indices(self, values: np.ndarray) -> pa.Array:
        if self.codes is None:
            return _numeric(values, "uint8", None)
        positions = np.searchsorted(self.codes, values).astype(np.uint8)
        return _numeric(positions, "uint8", None)


_ENUMS = {key: _Enum(spec) for key, spec in COLUMNS.items() if spec.role is ColumnRole.enum}


def column(table: str, name: str, values: np.ndarray, dictionary: pa.Array) -> pa.Array:
    spec = COLUMNS[(table, name)]
    if spec.role is ColumnRole.string:
        return pa.DictionaryArray.from_arrays(
            _numeric(values, spec.type, spec.sentinel), dictionary, safe=False
        )
    if spec.role is ColumnRole.enum:
        enum = _ENUMS[(table, name)]
        return pa.DictionaryArray.from_arrays(enum.indices(values), enum.dictionary, safe=False)
    return _numeric(values, spec.type, spec.sentinel)


def table(name: str, columns: Mapping[str, np.ndarray], dictionary: pa.Array) -> pa.Table:
    arrays, fields = [], []
    for col, values in columns.items():
        arr = column(name, col, values, dictionary)
        arrays.append(arr)
        fields.append(pa.field(col, arr.type, metadata=field_metadata(name, col)))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
