"""Raw core output (numpy columns with sentinels) -> Arrow tables, without copying values, and
Arrow <-> numpy and Python values without pandas.

How each column is read comes from its spec (hta_fast.schema.COLUMNS, declared in the core):
string ids become a dictionary over the string pool, enum codes a dictionary over their
labels, and a sentinel a null.

pyarrow imports pandas, where installed, the first time a process calls pa.array(),
pa.scalar(), Table.from_pylist() or Array.to_numpy() (a third of a second here, more than the
rest of a small command): as_numpy, numeric, masked, labels and table_from_rows do the same
from the buffers."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union, overload

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
    """A string array built from buffers: pa.array() on a list would import pandas."""
    return _strings([n.encode() for n in names], None)


def as_numpy(values: Any, *, writable: bool = False) -> np.ndarray:
    """What `values.to_numpy(zero_copy_only=False)` gives, read from the buffers for numbers
    and booleans (ints with nulls become float64 with NaN, as pyarrow does); other types, and
    anything that is not an Arrow array, through to_numpy itself. Numbers without nulls are a
    read-only view unless `writable`."""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            values = values.chunk(0)
        elif values.num_chunks == 0:
            values = pa.nulls(0, values.type) if _plain(values.type) else values
        else:
            values = values.combine_chunks()
    if not isinstance(values, pa.Array) or not _plain(values.type):
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            return values.to_numpy(zero_copy_only=False, writable=writable)
        out = values.to_numpy()
        return out.copy() if writable else out
    n, offset = len(values), values.offset
    validity, data = values.buffers()[:2]
    if pa.types.is_boolean(values.type):
        out = _bits(data, offset, n)
        if values.null_count:  # pyarrow gives objects with None here: so do we
            return np.array(values.to_pylist(), dtype=object)
        return out
    dtype = np.dtype(values.type.to_pandas_dtype())
    if n == 0 or data is None:
        out = np.zeros(0, dtype)
    else:
        out = np.frombuffer(data, dtype, count=n, offset=offset * dtype.itemsize)
    if values.null_count:
        null = ~_bits(validity, offset, n)
        out = out.astype(np.float64 if dtype.kind in "iu" else dtype)
        out[null] = np.nan
        return out
    return out.copy() if writable else out


def present_values(values: Union[pa.Array, pa.ChunkedArray]) -> np.ndarray:
    """The values that are not null, in their own numpy type (exact: an int64 column with
    nulls is not read through float64)."""
    if isinstance(values, pa.ChunkedArray):
        parts = [present_values(c) for c in values.chunks]
        return np.concatenate(parts) if parts else as_numpy(values)
    if not values.null_count:
        return as_numpy(values)
    if not _plain(values.type):
        return as_numpy(values.drop_null())
    n, offset = len(values), values.offset
    dtype = np.dtype(values.type.to_pandas_dtype())
    validity, data = values.buffers()[:2]
    keep = _bits(validity, offset, n)
    if pa.types.is_boolean(values.type):
        return _bits(data, offset, n)[keep]
    return np.frombuffer(data, dtype, count=n, offset=offset * dtype.itemsize)[keep]


def starts_with(strings: Union[pa.Array, pa.ChunkedArray], prefix: str) -> np.ndarray:
    """pc.starts_with(strings, prefix) as a numpy bool array, False for nulls, read from the
    string array's buffers: pyarrow.compute costs ~60 ms to import, more than a small
    command's whole load, and the loader's summaries need only this of it."""
    if isinstance(strings, pa.ChunkedArray):
        parts = [starts_with(c, prefix) for c in strings.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, bool)
    wide = pa.types.is_large_string(strings.type)
    if not (wide or pa.types.is_string(strings.type)):
        raise TypeError(f"starts_with reads strings, not {strings.type}")
    want = np.frombuffer(prefix.encode(), np.uint8)
    n, offset = len(strings), strings.offset
    validity, offsets_buf, data_buf = strings.buffers()
    kind = np.dtype(np.int64 if wide else np.int32)
    offsets = np.frombuffer(offsets_buf, kind, count=n + 1, offset=offset * kind.itemsize)
    # one byte at least: strings too short for the prefix read index 0 and are masked out
    data = np.frombuffer(data_buf if data_buf is not None and data_buf.size else b"\0", np.uint8)
    starts = offsets[:-1].astype(np.int64)
    out = np.diff(offsets) >= len(want)
    for j, byte in enumerate(want):  # the prefix's bytes, each checked on every string at once
        out &= data[np.where(out, starts + j, 0)] == byte
    if strings.null_count:
        out &= _bits(validity, offset, n)
    return out


@overload
def texts_at(pool: pa.Array, ids: np.ndarray, missing: str = "") -> list[str]: ...


@overload
def texts_at(pool: pa.Array, ids: np.ndarray, missing: None) -> list[Optional[str]]: ...


def texts_at(pool: pa.Array, ids: np.ndarray, missing: Optional[str] = "") -> list[Any]:
    """The strings of a string array at these positions as Python strings, `missing` where
    a position is negative: what take(ids).to_pylist() gives (None there), read from the
    buffers. A take and a to_pylist cost ~0.3 ms a call whatever the size, and the doctor
    and the summaries name a few events on each of thousands of ranks."""
    ids = np.asarray(ids, np.int64)
    wide = pa.types.is_large_string(pool.type)
    if pool.null_count or not (wide or pa.types.is_string(pool.type)):
        taken = pool.take(masked(np.maximum(ids, 0), ids < 0)).to_pylist()
        return [missing if t is None else t for t in taken]
    n = len(pool)
    if len(ids) and int(ids.max()) >= n:  # as take refuses them
        raise IndexError(f"string index {int(ids.max())} out of bounds (a pool of {n})")
    if not len(ids) or n == 0:
        return [missing] * len(ids)
    _, offsets_buf, data_buf = pool.buffers()
    kind = np.dtype(np.int64 if wide else np.int32)
    offsets = np.frombuffer(offsets_buf, kind, count=n + 1, offset=pool.offset * kind.itemsize)
    data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
    at = np.maximum(ids, 0)
    return [
        missing if i < 0 else str(data[a:b], "utf-8")
        for i, a, b in zip(ids.tolist(), offsets[at].tolist(), offsets[at + 1].tolist())
    ]


def _plain(arrow_type: pa.DataType) -> bool:
    """Types whose numpy form is their data buffer (bit-packed for booleans)."""
    return (
        pa.types.is_integer(arrow_type)
        or (pa.types.is_floating(arrow_type) and not pa.types.is_float16(arrow_type))
        or pa.types.is_boolean(arrow_type)
    )


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little")
    return bits[offset : offset + n].astype(bool)


Value = Union[None, bool, int, float, str]


def array_of(
    values: Union[Sequence[Any], np.ndarray],
    type: pa.DataType | None = None,
    mask: np.ndarray | None = None,
) -> pa.Array:
    """pa.array(values, type, mask) for a numpy array of numbers or booleans, or a list of one
    Python type (None for nulls: bool, int, float (ints among them count as floats), str),
    read from buffers; anything else through pa.array itself. `type` casts (safely) what the
    values make; NaN stays a value, as in pa.array."""
    try:
        made = _from_numpy(values) if isinstance(values, np.ndarray) else _from_list(values)
    except (OverflowError, ValueError, TypeError):
        made = None
    if made is None:
        return pa.array(values, type=type, mask=mask)
    if type is not None and pa.types.is_null(made.type):  # nulls only: no cast (~0.1 ms)
        return pa.nulls(len(made), type)
    if mask is not None and np.any(mask):
        keep = _validity(np.asarray(mask, bool))
        made = pa.Array.from_buffers(made.type, len(made), [keep, *made.buffers()[1:]])
    return made if type is None or made.type == type else made.cast(type)


def _from_numpy(values: np.ndarray) -> pa.Array | None:
    if values.ndim != 1:
        return None
    if values.dtype.kind == "b":
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    if values.dtype.kind in "iuf":
        return numeric(values.astype(values.dtype.newbyteorder("="), copy=False))
    if values.dtype.kind in "OU":
        return _from_list(values.tolist())
    return None


def _from_list(values: Sequence[Value]) -> pa.Array | None:
    types = set(map(type, values))  # a handful of types, looked at once each
    has_null = type(None) in types
    kinds = {_kind(t) for t in types if t is not type(None)}
    if not kinds:
        return pa.nulls(len(values))
    null = np.fromiter((v is None for v in values), bool, len(values)) if has_null else None
    if kinds == {"bool"}:
        bits = np.packbits(np.array([bool(v) for v in values], bool), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [_validity(null), pa.py_buffer(bits)])
    if kinds <= {"int", "float"}:
        dtype, zero = (np.int64, 0) if kinds == {"int"} else (np.float64, 0.0)
        data = np.array([zero if v is None else v for v in values] if has_null else values, dtype)
        return masked(data, null) if null is not None else numeric(data)
    if kinds == {"str"}:
        return _strings([b"" if v is None else v.encode() for v in values], null)  # type: ignore[union-attr]
    return None  # mixed or other types: pyarrow's own inference


def _kind(value_type: type) -> str:
    if issubclass(value_type, (bool, np.bool_)):
        return "bool"
    if issubclass(value_type, (int, np.integer)):
        return "int"
    if issubclass(value_type, (float, np.floating)):
        return "float"
    return "str" if issubclass(value_type, str) else "other"


def _strings(encoded: list[bytes], null: np.ndarray | None) -> pa.Array:
    lengths = list(map(len, encoded))
    arrow_type, offset_type = (
        (pa.string(), np.int32) if sum(lengths) < 2**31 else (pa.large_string(), np.int64)
    )
    offsets = np.zeros(len(encoded) + 1, offset_type)
    np.cumsum(lengths, out=offsets[1:])
    data = [_validity(null), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(arrow_type, len(encoded), data)


def _validity(null: np.ndarray | None) -> pa.Buffer | None:
    if null is None or not null.any():
        return None
    return pa.py_buffer(np.packbits(~null, bitorder="little"))


def nan_as_null(values: np.ndarray, type: pa.DataType) -> pa.Array:
    """pa.array(values, type, from_pandas=True) for floats: NaN becomes a null, read from
    buffers (from_pandas imports pandas). An integer type takes whole values only; others
    go through pa.array, which says why it refuses them."""
    values = np.asarray(values, np.float64)
    null = np.isnan(values)
    if pa.types.is_floating(type) and not pa.types.is_float16(type):
        return array_of(values.astype(type.to_pandas_dtype()), mask=null)
    if pa.types.is_integer(type):
        with np.errstate(invalid="ignore"):
            data = np.where(null, 0, values).astype(type.to_pandas_dtype())
        if np.array_equal(data[~null], values[~null]):
            return array_of(data, mask=null)
    return pa.array(values, type, from_pandas=True)


def table_from_rows(rows: Sequence[Mapping[str, Value]]) -> pa.Table:
    """pa.Table.from_pylist(rows) for rows of plain values: columns in the first row's order,
    a key missing from a row is a null there."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return pa.table({k: array_of([r.get(k) for r in rows]) for k in keys})


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
