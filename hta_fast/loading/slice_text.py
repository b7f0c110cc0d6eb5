"""A slice's columns as JSON text (hta_fast.loading.slice_writer), a batch of rows at a
time with pyarrow compute: numbers, times in µs, pool strings, ids, and the arguments kept as
columns under the names Kineto writes. Trace text is untrusted: every string is JSON-escaped,
invalid UTF-8 read as U+FFFD.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .._arrow import as_numpy
from ..schema import COLUMNS, STRING_ID_BASE
from ..trace import Trace

TEXT = pa.large_string()
# A string that JSON takes as is between quotes: printable ASCII but the quote and the
# backslash. Anything else is escaped by json.dumps.
_PLAIN = r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$"


def texts(values: list[str]) -> pa.Array:
    return _arrow.labels(values).cast(TEXT)


def _bools(mask: np.ndarray) -> pa.Array:
    """A boolean array from numpy, bit-packed as Arrow holds it (pa.array would import
    pandas)."""
    bits = np.packbits(np.asarray(mask, bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def where(mask: np.ndarray, text: pa.Array | pa.Scalar) -> pa.Array:
    """text where mask holds, else null."""
    return pc.if_else(_bools(mask), text, pa.nulls(1, TEXT)[0])


def constant(text: str, arrow_type: pa.DataType = TEXT) -> pa.Scalar:
    """A string scalar to join with columns (made from an array: pa.scalar imports pandas,
    a second the first time in a process)."""
    return _arrow.labels([text]).cast(arrow_type)[0]


def join(parts: Sequence[pa.Array | pa.Scalar]) -> pa.Array:
    """Parts concatenated row by row; a null part adds nothing. (Not null_handling="skip":
    pyarrow 26 drops the rows whose parts are all null from its result.)"""
    return pc.binary_join_element_wise(
        *parts, constant(""), null_handling="replace", null_replacement=""
    )


def member(key: str, text: pa.Array) -> pa.Array:
    """',"key":value' per row, null where the value is: one member of an object after
    another, each bringing its comma."""
    return pc.binary_join_element_wise(constant(f",{json.dumps(key)}:"), text, constant(""))


def always(key: str, text: pa.Array) -> list[pa.Array | pa.Scalar]:
    """The parts of a member that every row has (ids, times): joined once, with the rest."""
    return [constant(f",{json.dumps(key)}:"), text]


def args_object(members: Sequence[pa.Array]) -> list[pa.Array | pa.Scalar]:
    """The parts of ',"args":{...}' with the members present per row ('{}' where none is),
    to join with the rest of the line in one pass."""
    if not members:
        return [constant(',"args":{}')]
    inner = pc.utf8_slice_codeunits(join(members), 1)  # less the first member's comma
    return [constant(',"args":{'), inner, constant("}")]


def _missing(values: np.ndarray, sentinel: int | float | None) -> np.ndarray:
    if values.dtype.kind == "f":
        return ~np.isfinite(values)  # NaN is missing; JSON has no inf
    if sentinel is None:
        return np.zeros(len(values), bool)
    return values == sentinel


def number_texts(values: np.ndarray, sentinel: int | float | None = -1) -> pa.Array:
    """Numbers as JSON text (floats in their shortest exact form), null where missing."""
    values = np.ascontiguousarray(values)
    return _arrow.masked(values, _missing(values, sentinel)).cast(TEXT)


def micros(ns: np.ndarray) -> pa.Array:
    """int64 ns as µs with three decimals, exactly (no float on the way)."""
    whole, part = np.divmod(np.abs(ns), 1000)
    text = join(
        [number_texts(whole, None), constant("."), pc.utf8_lpad(number_texts(part, None), 3, "0")]
    )
    negative = ns < 0
    if negative.any():
        text = pc.if_else(_bools(negative), join([constant("-"), text]), text)
    return text


def by_distinct(
    values: np.ndarray, missing: np.ndarray, texts_of: Callable[[np.ndarray], pa.Array]
) -> pa.Array:
    """texts_of(the distinct values present) spread back over `values`, null where missing:
    each distinct value is turned into text once (found by hashing, not sorting)."""
    encoded = pc.dictionary_encode(_arrow.masked(np.ascontiguousarray(values), missing))
    return texts_of(as_numpy(encoded.dictionary)).take(encoded.indices)


def _pool(trace: Trace, ids: np.ndarray) -> pa.Array:
    """The pool's strings of these ids as bytes (invalid UTF-8 is decoded where used)."""
    index = _arrow.masked(ids.astype(np.int64), np.zeros(len(ids), bool))
    return trace.strings.take(index).cast(pa.large_binary())


def pool_strings(trace: Trace, ids: np.ndarray) -> list[str]:
    return [b.decode("utf-8", "replace") for b in _pool(trace, ids).to_pylist()]


def _string_literals(trace: Trace, ids: np.ndarray) -> pa.Array:
    """JSON string literals of pool strings by id: plain ASCII quoted by compute, the rest
    escaped by json.dumps (quotes, backslashes, control characters, non-ASCII as \\uXXXX)."""
    raw = _pool(trace, ids)
    quote, nothing = constant('"', pa.large_binary()), constant("", pa.large_binary())
    quoted = pc.binary_join_element_wise(quote, raw, quote, nothing)
    odd = pc.invert(pc.match_substring_regex(raw, _PLAIN))
    if pc.any(odd).as_py():
        escaped = [json.dumps(b.decode("utf-8", "replace")) for b in raw.filter(odd).to_pylist()]
        quoted = pc.replace_with_mask(quoted, odd, texts(escaped).cast(pa.large_binary()))
    return quoted.cast(TEXT)


def _json_value(text: str) -> str:
    """A raw-JSON argument (the loader keeps Input Dims and friends as their JSON text) as a
    JSON value: an array or object as written, anything else as a string."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            json.loads(stripped, parse_constant=_no_constant)
            return stripped
        except (ValueError, RecursionError):
            pass
    return json.dumps(text)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_values(trace: Trace, ids: np.ndarray) -> pa.Array:
    return texts([_json_value(s) for s in pool_strings(trace, ids)])


def string_texts(trace: Trace, ids: np.ndarray) -> pa.Array:
    """String columns (pool ids, -1 for none) as JSON string literals, null where none."""
    return by_distinct(ids, ids < 0, lambda u: _string_literals(trace, u))


def _raw_json(trace: Trace, ids: np.ndarray) -> pa.Array:
    return by_distinct(ids, ids < 0, lambda u: _json_values(trace, u))


def id_texts(trace: Trace, values: np.ndarray) -> pa.Array:
    """pid/tid/flow id values as JSON: numbers as written, string ids as their strings."""
    numbers = number_texts(values, None)
    # String ids lie at or below STRING_ID_BASE; Trace.id_name tells which of those are.
    maybe = values <= STRING_ID_BASE
    if not maybe.any():
        return numbers

    def names(distinct: np.ndarray) -> pa.Array:
        found = [trace.id_name(int(v)) for v in distinct]
        return texts([str(int(v)) if s is None else json.dumps(s) for v, s in zip(distinct, found)])

    return pc.coalesce(by_distinct(values, ~maybe, names), numbers)


def char_texts(codes: np.ndarray) -> pa.Array:
    """One-letter strings stored as their character code (ph, scope), null for none."""
    printable = (codes > 0x20) & (codes < 0x7F)
    return by_distinct(codes, ~printable, lambda u: texts([json.dumps(chr(int(c))) for c in u]))


# --- the arguments kept as columns, under the names Kineto writes ---------------------------
@dataclasses.dataclass(frozen=True)
class Arg:
    key: str  # as the profiler writes it (csrc/parse/arg_keys.h)
    columns: tuple[str, ...]
    form: str = "number"  # "number", "string" (pool string), "json" (raw JSON text), "dim3"


EVENT_ARGS = (
    Arg("External id", ("external_id",)),
    Arg("correlation", ("correlation",)),
    Arg("device", ("device",)),
    Arg("stream", ("stream",)),
)
# The tables beside events whose rows hold one event's arguments (their `row`).
SIDE_ARGS: dict[str, tuple[Arg, ...]] = {
    "kernel_args": (
        Arg("queued", ("queued",)),
        Arg("context", ("context",)),
        Arg("grid", ("grid_x", "grid_y", "grid_z"), "dim3"),
        Arg("block", ("block_x", "block_y", "block_z"), "dim3"),
        Arg("registers per thread", ("registers_per_thread",)),
        Arg("shared memory", ("shared_memory",)),
        Arg("blocks per SM", ("blocks_per_sm",)),
        Arg("warps per SM", ("warps_per_sm",)),
        Arg("est. achieved occupancy %", ("est_achieved_occupancy",)),
        Arg("bytes", ("bytes",)),
        Arg("memory bandwidth (GB/s)", ("memory_bandwidth_gbps",)),
        Arg("kernel", ("launched_kernel",), "string"),
        Arg("hsa_queue", ("hsa_queue",)),
    ),
    "op_args": (
        Arg("Record function id", ("record_function_id",)),
        Arg("Sequence number", ("sequence_number",)),
        Arg("Fwd thread id", ("fwd_thread_id",)),
        Arg("Ev Idx", ("ev_idx",)),
        Arg("Input Dims", ("input_dims",), "json"),
        Arg("Input type", ("input_type",), "json"),
        Arg("Input Strides", ("input_strides",), "json"),
        Arg("Concrete Inputs", ("concrete_inputs",), "json"),
    ),
    # Kineto writes the collectives' names, dtypes and groups as strings ("[0, 1]" too).
    "comm_args": (
        Arg("Collective name", ("collective_name",), "string"),
        Arg("In msg nelems", ("in_msg_nelems",)),
        Arg("Out msg nelems", ("out_msg_nelems",)),
        Arg("dtype", ("dtype",), "string"),
        Arg("Group size", ("group_size",)),
        Arg("Process Group Name", ("process_group_name",), "string"),
        Arg("Process Group Description", ("process_group_desc",), "string"),
        Arg("Process Group Ranks", ("process_group_ranks",), "string"),
        Arg("In split size", ("in_split_size",), "string"),
        Arg("Out split size", ("out_split_size",), "string"),
        Arg("Rank", ("rank",)),
        Arg("Seq", ("seq",)),
        Arg("Comms Id", ("comms_id",), "json"),  # a uint64 hash, kept as its text
    ),
    "sync_args": (
        Arg("wait_on_stream", ("wait_on_stream",)),
        Arg("wait_on_cuda_event_record_corr_id", ("wait_on_event_correlation",)),
    ),
}
INSTANT_ARGS = (
    Arg("Bytes", ("bytes",)),
    Arg("Total Allocated", ("total_allocated",)),
    Arg("Total Reserved", ("total_reserved",)),
    Arg("Addr", ("addr",)),
    Arg("Device Type", ("device_type",)),
    Arg("Device Id", ("device_id",)),
)


def _arg_text(trace: Trace, table: str, arg: Arg, rows: np.ndarray) -> Optional[pa.Array]:
    """One argument of these rows as JSON text, null where missing; None where it is missing
    on every row (no member to build)."""
    values = [trace.column(table, c)[rows] for c in arg.columns]
    sentinel = COLUMNS[(table, arg.columns[0])].sentinel
    missing = np.logical_and.reduce([_missing(v, sentinel) for v in values])
    if missing.all():
        return None
    if arg.form == "string":
        return string_texts(trace, values[0])
    if arg.form == "json":
        return _raw_json(trace, values[0])
    if arg.form == "dim3":
        # [x, y, z] as the loader read it (a short list leaves -1 in the missing places)
        xyz = join(
            [
                number_texts(values[0], None),
                constant(","),
                number_texts(values[1], None),
                constant(","),
                number_texts(values[2], None),
            ]
        )
        text = join([constant("["), xyz, constant("]")])
        return where(~missing, text)
    return number_texts(values[0], sentinel)


def args_members(trace: Trace, table: str, args: Sequence[Arg], rows: np.ndarray) -> list[pa.Array]:
    members = []
    for arg in args:
        text = _arg_text(trace, table, arg, rows)
        if text is not None:
            members.append(member(arg.key, text))
    return members
