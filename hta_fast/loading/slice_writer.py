"""Writes a time window of one rank as Chrome-trace JSON, the profiler's own format: a step
of a trace too big for a browser then opens in Perfetto UI or chrome://tracing, and loads
back into hta_fast or the reference tool.

What is written is what the loader keeps (docs/format.md): complete events with their
name, cat, pid, tid (string ids as their strings), ts and dur in µs with three decimals
(absolute: the loaded ts already holds baseTimeNanoseconds, so none is written), and the
arguments kept as columns under the names Kineto writes (events, kernel_args, op_args,
comm_args, sync_args); flows, counters and instants of the window; every metadata event;
the header members the loader keeps.

A window is [lo, hi) in ns on the events' clock. Its events are the complete events that
start in it, plus the GPU work launched in it, which runs past its end. A flow is kept only
when every end of its arrow (its cat and id) is inside: an end bound to an event kept, or
an unbound end whose ts is in the window.

Text is built column by column with pyarrow compute, a batch of rows at a time, and
streamed out (through gzip when the path ends in .gz): no Python object per event, memory
of the order of a batch. Trace text is untrusted: every string is JSON-escaped, invalid
UTF-8 read as U+FFFD.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow, _core
from .._arrow import as_numpy
from ..schema import COLUMNS, GPU_KINDS, STRING_ID_BASE
from ..trace import Trace

__all__ = [
    "Window",
    "SliceCounts",
    "trace_start",
    "steps_window",
    "window_rows",
    "write_slice",
    "write_slice_pftrace",
]

Window = tuple[int, int]  # [lo, hi) in ns, the clock of the events' ts column

# A slice is a view to open now, not an archive: gzip level 1 writes several times faster
# than torch's level 9, for files about a third larger.
GZIP_LEVEL = 1
# Rows turned into text at once: large enough that the compute calls cost little per row,
# small enough that a batch's text stays some tens of MB.
BATCH_ROWS = 1 << 16

_TEXT = pa.large_string()
# A string that JSON takes as is between quotes: printable ASCII but the quote and the
# backslash. Anything else is escaped by json.dumps.
_PLAIN = r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$"


@dataclasses.dataclass(frozen=True)
class SliceCounts:
    """What one slice holds, by phase."""

    events: int
    flows: int
    counters: int
    instants: int
    meta: int


# --- the window ---------------------------------------------------------------------------
def trace_start(trace: Trace) -> Optional[int]:
    """The start of the trace's first complete event (ns), what relative windows count
    from; None for a trace without events."""
    ts = trace.column("events", "ts")
    return int(ts.min()) if len(ts) else None


def steps_window(trace: Trace, steps: Sequence[int]) -> Window:
    """The span of these steps: from the first one's start to the last one's end. A step the
    trace does not have raises ValueError naming it and the steps the trace has."""
    if not len(steps):
        raise ValueError("no step named")
    numbers = trace.column("steps", "step")
    missing = sorted(set(steps) - set(numbers.tolist()))
    if missing:
        raise ValueError(
            f"rank {trace.rank} has no step {_ranges(missing)} (its steps: "
            f"{_ranges(sorted(set(numbers.tolist()))) or 'none'})"
        )
    chosen = np.isin(numbers, np.asarray(steps))
    ts = trace.column("steps", "ts")[chosen]
    end = ts + trace.column("steps", "dur")[chosen]
    return int(ts.min()), int(end.max())


def _ranges(values: Sequence[int], shown: int = 6) -> str:
    """'3, 5-9, 12': sorted ints as runs, the first few of them."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:shown])
    return text + (f" and {len(runs) - shown} more runs" if len(runs) > shown else "")


def window_rows(trace: Trace, window: Window) -> np.ndarray:
    """Rows of events in the window, in row order: those that start in it, and the GPU work
    whose launch does (it runs after the launch, often past the window's end)."""
    lo, hi = window
    ts = trace.column("events", "ts")
    inside = (ts >= lo) & (ts < hi)
    partner = trace.column("events", "partner")
    launched = np.flatnonzero(np.isin(trace.column("events", "kind"), GPU_KINDS) & (partner >= 0))
    inside[launched] |= inside[partner[launched]]
    return np.flatnonzero(inside)


def _flow_rows(trace: Trace, window: Window, kept_events: np.ndarray) -> np.ndarray:
    """Rows of flows whose every end, of all the flows of its (cat, id), is inside."""
    lo, hi = window
    ts, event = trace.column("flows", "ts"), trace.column("flows", "event")
    inside = np.where(event >= 0, kept_events[np.maximum(event, 0)], (ts >= lo) & (ts < hi))
    ends_inside = np.flatnonzero(inside)
    if not len(ends_inside):
        return ends_inside
    ids, cats = trace.column("flows", "id"), trace.column("flows", "cat")
    # Only flows that share an id with an end inside can be kept: the grouping sorts those.
    known = np.unique(ids[ends_inside])
    at = np.minimum(np.searchsorted(known, ids), len(known) - 1)
    candidates = np.flatnonzero(known[at] == ids)
    order = candidates[np.lexsort((ids[candidates], cats[candidates]))]
    first = np.ones(len(order), bool)
    first[1:] = (np.diff(ids[order]) != 0) | (np.diff(cats[order]) != 0)
    starts = np.flatnonzero(first)
    whole = np.logical_and.reduceat(inside[order], starts)
    keep = np.repeat(whole, np.diff(np.append(starts, len(order))))
    return np.sort(order[keep])


def _rows_in(trace: Trace, table: str, window: Window) -> np.ndarray:
    ts = trace.column(table, "ts")
    return np.flatnonzero((ts >= window[0]) & (ts < window[1]))


# --- values as JSON text ------------------------------------------------------------------
def _texts(values: list[str]) -> pa.Array:
    return _arrow.labels(values).cast(_TEXT)


def _bools(mask: np.ndarray) -> pa.Array:
    """A boolean array from numpy, bit-packed as Arrow holds it (pa.array would import
    pandas)."""
    bits = np.packbits(np.asarray(mask, bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def _where(mask: np.ndarray, text: pa.Array | pa.Scalar) -> pa.Array:
    """text where mask holds, else null."""
    return pc.if_else(_bools(mask), text, pa.nulls(1, _TEXT)[0])


def _constant(text: str, arrow_type: pa.DataType = _TEXT) -> pa.Scalar:
    """A string scalar to join with columns (made from an array: pa.scalar imports pandas,
    a second the first time in a process)."""
    return _arrow.labels([text]).cast(arrow_type)[0]


def _join(parts: Sequence[pa.Array | pa.Scalar]) -> pa.Array:
    """Parts concatenated row by row; a null part adds nothing. (Not null_handling="skip":
    pyarrow 26 drops the rows whose parts are all null from its result.)"""
    return pc.binary_join_element_wise(
        *parts, _constant(""), null_handling="replace", null_replacement=""
    )


def _member(key: str, text: pa.Array) -> pa.Array:
    """',"key":value' per row, null where the value is: one member of an object after
    another, each bringing its comma."""
    return pc.binary_join_element_wise(_constant(f",{json.dumps(key)}:"), text, _constant(""))


def _always(key: str, text: pa.Array) -> list[pa.Array | pa.Scalar]:
    """The parts of a member that every row has (ids, times): joined once, with the rest."""
    return [_constant(f",{json.dumps(key)}:"), text]


def _args(members: Sequence[pa.Array]) -> list[pa.Array | pa.Scalar]:
    """The parts of ',"args":{...}' with the members present per row ('{}' where none is),
    to join with the rest of the line in one pass."""
    if not members:
        return [_constant(',"args":{}')]
    inner = pc.utf8_slice_codeunits(_join(members), 1)  # less the first member's comma
    return [_constant(',"args":{'), inner, _constant("}")]


def _missing(values: np.ndarray, sentinel: int | float | None) -> np.ndarray:
    if values.dtype.kind == "f":
        return ~np.isfinite(values)  # NaN is missing; JSON has no inf
    if sentinel is None:
        return np.zeros(len(values), bool)
    return values == sentinel


def _numbers(values: np.ndarray, sentinel: int | float | None = -1) -> pa.Array:
    """Numbers as JSON text (floats in their shortest exact form), null where missing."""
    values = np.ascontiguousarray(values)
    return _arrow.masked(values, _missing(values, sentinel)).cast(_TEXT)


def _micros(ns: np.ndarray) -> pa.Array:
    """int64 ns as µs with three decimals, exactly (no float on the way)."""
    whole, part = np.divmod(np.abs(ns), 1000)
    text = _join(
        [_numbers(whole, None), _constant("."), pc.utf8_lpad(_numbers(part, None), 3, "0")]
    )
    negative = ns < 0
    if negative.any():
        text = pc.if_else(_bools(negative), _join([_constant("-"), text]), text)
    return text


def _by_distinct(
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


def _pool_strings(trace: Trace, ids: np.ndarray) -> list[str]:
    return [b.decode("utf-8", "replace") for b in _pool(trace, ids).to_pylist()]


def _string_literals(trace: Trace, ids: np.ndarray) -> pa.Array:
    """JSON string literals of pool strings by id: plain ASCII quoted by compute, the rest
    escaped by json.dumps (quotes, backslashes, control characters, non-ASCII as \\uXXXX)."""
    raw = _pool(trace, ids)
    quote, nothing = _constant('"', pa.large_binary()), _constant("", pa.large_binary())
    quoted = pc.binary_join_element_wise(quote, raw, quote, nothing)
    odd = pc.invert(pc.match_substring_regex(raw, _PLAIN))
    if pc.any(odd).as_py():
        escaped = [json.dumps(b.decode("utf-8", "replace")) for b in raw.filter(odd).to_pylist()]
        quoted = pc.replace_with_mask(quoted, odd, _texts(escaped).cast(pa.large_binary()))
    return quoted.cast(_TEXT)


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
    return _texts([_json_value(s) for s in _pool_strings(trace, ids)])


def _strings(trace: Trace, ids: np.ndarray) -> pa.Array:
    """String columns (pool ids, -1 for none) as JSON string literals, null where none."""
    return _by_distinct(ids, ids < 0, lambda u: _string_literals(trace, u))


def _raw_json(trace: Trace, ids: np.ndarray) -> pa.Array:
    return _by_distinct(ids, ids < 0, lambda u: _json_values(trace, u))


def _ids(trace: Trace, values: np.ndarray) -> pa.Array:
    """pid/tid/flow id values as JSON: numbers as written, string ids as their strings."""
    numbers = _numbers(values, None)
    # String ids lie at or below STRING_ID_BASE; Trace.id_name tells which of those are.
    maybe = values <= STRING_ID_BASE
    if not maybe.any():
        return numbers

    def names(distinct: np.ndarray) -> pa.Array:
        found = [trace.id_name(int(v)) for v in distinct]
        return _texts(
            [str(int(v)) if s is None else json.dumps(s) for v, s in zip(distinct, found)]
        )

    return pc.coalesce(_by_distinct(values, ~maybe, names), numbers)


def _characters(codes: np.ndarray) -> pa.Array:
    """One-letter strings stored as their character code (ph, scope), null for none."""
    printable = (codes > 0x20) & (codes < 0x7F)
    return _by_distinct(codes, ~printable, lambda u: _texts([json.dumps(chr(int(c))) for c in u]))


# --- the arguments kept as columns, under the names Kineto writes ---------------------------
@dataclasses.dataclass(frozen=True)
class _Arg:
    key: str  # as the profiler writes it (csrc/parse/arg_keys.h)
    columns: tuple[str, ...]
    form: str = "number"  # "number", "string" (pool string), "json" (raw JSON text), "dim3"


_EVENT_ARGS = (
    _Arg("External id", ("external_id",)),
    _Arg("correlation", ("correlation",)),
    _Arg("device", ("device",)),
    _Arg("stream", ("stream",)),
)
# The tables beside events whose rows hold one event's arguments (their `row`).
_SIDE_ARGS: dict[str, tuple[_Arg, ...]] = {
    "kernel_args": (
        _Arg("queued", ("queued",)),
        _Arg("context", ("context",)),
        _Arg("grid", ("grid_x", "grid_y", "grid_z"), "dim3"),
        _Arg("block", ("block_x", "block_y", "block_z"), "dim3"),
        _Arg("registers per thread", ("registers_per_thread",)),
        _Arg("shared memory", ("shared_memory",)),
        _Arg("blocks per SM", ("blocks_per_sm",)),
        _Arg("warps per SM", ("warps_per_sm",)),
        _Arg("est. achieved occupancy %", ("est_achieved_occupancy",)),
        _Arg("bytes", ("bytes",)),
        _Arg("memory bandwidth (GB/s)", ("memory_bandwidth_gbps",)),
        _Arg("kernel", ("launched_kernel",), "string"),
        _Arg("hsa_queue", ("hsa_queue",)),
    ),
    "op_args": (
        _Arg("Record function id", ("record_function_id",)),
        _Arg("Sequence number", ("sequence_number",)),
        _Arg("Fwd thread id", ("fwd_thread_id",)),
        _Arg("Ev Idx", ("ev_idx",)),
        _Arg("Input Dims", ("input_dims",), "json"),
        _Arg("Input type", ("input_type",), "json"),
        _Arg("Input Strides", ("input_strides",), "json"),
        _Arg("Concrete Inputs", ("concrete_inputs",), "json"),
    ),
    # Kineto writes the collectives' names, dtypes and groups as strings ("[0, 1]" too).
    "comm_args": (
        _Arg("Collective name", ("collective_name",), "string"),
        _Arg("In msg nelems", ("in_msg_nelems",)),
        _Arg("Out msg nelems", ("out_msg_nelems",)),
        _Arg("dtype", ("dtype",), "string"),
        _Arg("Group size", ("group_size",)),
        _Arg("Process Group Name", ("process_group_name",), "string"),
        _Arg("Process Group Description", ("process_group_desc",), "string"),
        _Arg("Process Group Ranks", ("process_group_ranks",), "string"),
        _Arg("In split size", ("in_split_size",), "string"),
        _Arg("Out split size", ("out_split_size",), "string"),
        _Arg("Rank", ("rank",)),
        _Arg("Seq", ("seq",)),
        _Arg("Comms Id", ("comms_id",), "json"),  # a uint64 hash, kept as its text
    ),
    "sync_args": (
        _Arg("wait_on_stream", ("wait_on_stream",)),
        _Arg("wait_on_cuda_event_record_corr_id", ("wait_on_event_correlation",)),
    ),
}
_INSTANT_ARGS = (
    _Arg("Bytes", ("bytes",)),
    _Arg("Total Allocated", ("total_allocated",)),
    _Arg("Total Reserved", ("total_reserved",)),
    _Arg("Addr", ("addr",)),
    _Arg("Device Type", ("device_type",)),
    _Arg("Device Id", ("device_id",)),
)


def _arg_text(trace: Trace, table: str, arg: _Arg, rows: np.ndarray) -> Optional[pa.Array]:
    """One argument of these rows as JSON text, null where missing; None where it is missing
    on every row (no member to build)."""
    values = [trace.column(table, c)[rows] for c in arg.columns]
    sentinel = COLUMNS[(table, arg.columns[0])].sentinel
    missing = np.logical_and.reduce([_missing(v, sentinel) for v in values])
    if missing.all():
        return None
    if arg.form == "string":
        return _strings(trace, values[0])
    if arg.form == "json":
        return _raw_json(trace, values[0])
    if arg.form == "dim3":
        # [x, y, z] as the loader read it (a short list leaves -1 in the missing places)
        xyz = _join(
            [
                _numbers(values[0], None),
                _constant(","),
                _numbers(values[1], None),
                _constant(","),
                _numbers(values[2], None),
            ]
        )
        text = _join([_constant("["), xyz, _constant("]")])
        return _where(~missing, text)
    return _numbers(values[0], sentinel)


def _args_members(
    trace: Trace, table: str, args: Sequence[_Arg], rows: np.ndarray
) -> list[pa.Array]:
    members = []
    for arg in args:
        text = _arg_text(trace, table, arg, rows)
        if text is not None:
            members.append(_member(arg.key, text))
    return members


# --- the lines of each phase ----------------------------------------------------------------
class _EventLines:
    """The complete events of a window as lines of JSON text, a batch of rows at a time,
    with the arguments their side tables hold."""

    def __init__(self, trace: Trace, rows: np.ndarray):
        self.trace, self.rows = trace, rows
        kept = np.zeros(trace.num_rows("events"), bool)
        kept[rows] = True
        self.kept = kept
        # For each row of the window, its row in each side table, or -1.
        self.side = {table: self._side_rows(table) for table in _SIDE_ARGS}

    def _side_rows(self, table: str) -> np.ndarray:
        owner = self.trace.column(table, "row")
        hits = np.flatnonzero((owner >= 0) & self.kept[np.maximum(owner, 0)])
        out = np.full(len(self.rows), -1, np.int64)
        out[np.searchsorted(self.rows, owner[hits])] = hits
        return out

    def lines(self, start: int, stop: int) -> pa.Array:
        trace, rows = self.trace, self.rows[start:stop]

        def column(name: str) -> np.ndarray:
            return trace.column("events", name)[rows]

        args = _args_members(trace, "events", _EVENT_ARGS, rows)
        args += [self._side_args(table, start, stop) for table in _SIDE_ARGS]
        return _join(
            [
                _constant(',\n{"ph":"X"'),
                _member("cat", _strings(trace, column("cat"))),
                _member("name", _strings(trace, column("name"))),
                *_always("pid", _ids(trace, column("pid"))),
                *_always("tid", _ids(trace, column("tid"))),
                *_always("ts", _micros(column("ts"))),
                *_always("dur", _micros(column("dur"))),
                *_args(args),
                _constant("}"),
            ]
        )

    def _side_args(self, table: str, start: int, stop: int) -> pa.Array:
        """The members of one side table for rows start:stop, null for rows it has none of."""
        side = self.side[table][start:stop]
        have = side >= 0
        members = _args_members(self.trace, table, _SIDE_ARGS[table], side[have])
        if not members:
            return pa.nulls(stop - start, _TEXT)
        at = np.cumsum(have) - 1
        return _join(members).take(_arrow.masked(np.maximum(at, 0), ~have))


def _flow_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("flows", name)[rows]

    bp = _where(column("binds_enclosing") == 1, _constant('"e"'))
    return _join(
        [
            _constant(',\n{"ph":'),
            _characters(column("phase")),
            *_always("id", _ids(trace, column("id"))),
            *_always("pid", _ids(trace, column("pid"))),
            *_always("tid", _ids(trace, column("tid"))),
            *_always("ts", _micros(column("ts"))),
            _member("cat", _strings(trace, column("cat"))),
            _member("name", _strings(trace, column("name"))),
            _member("bp", bp),
            _constant("}"),
        ]
    )


def _counter_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("counters", name)[rows]

    value = pc.binary_join_element_wise(
        _strings(trace, column("series")), _numbers(column("value")), _constant(":")
    )
    return _join(
        [
            _constant(',\n{"ph":"C"'),
            _member("name", _strings(trace, column("name"))),
            *_always("pid", _ids(trace, column("pid"))),
            *_always("tid", _ids(trace, column("tid"))),
            *_always("ts", _micros(column("ts"))),
            _constant(',"args":{'),
            value,
            _constant("}}"),
        ]
    )


def _instant_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("instants", name)[rows]

    return _join(
        [
            _constant(',\n{"ph":"i"'),
            _member("s", _characters(column("scope"))),
            _member("cat", _strings(trace, column("cat"))),
            _member("name", _strings(trace, column("name"))),
            *_always("pid", _ids(trace, column("pid"))),
            *_always("tid", _ids(trace, column("tid"))),
            *_always("ts", _micros(column("ts"))),
            *_args(_args_members(trace, "instants", _INSTANT_ARGS, rows)),
            _constant("}"),
        ]
    )


def _meta_lines(trace: Trace, rows: np.ndarray, ts_us: str) -> pa.Array:
    """Metadata events (process and thread names, labels, sort indexes), each at ts_us: the
    viewers read them whatever their time, and a time inside the window keeps it tight."""

    def column(name: str) -> np.ndarray:
        return trace.column("meta", name)[rows]

    names = column("name")
    # process_labels carries its value as "labels", the others as "name"; a value is written
    # as a string, as viewers read names (the loader keeps its text either way).
    key = _by_distinct(
        names,
        names < 0,
        lambda u: _texts(
            [',"labels":' if s.endswith("_labels") else ',"name":' for s in _pool_strings(trace, u)]
        ),
    )
    value = pc.binary_join_element_wise(
        pc.coalesce(key, _constant(',"name":')), _strings(trace, column("value")), _constant("")
    )
    args = [value, _member("sort_index", _numbers(column("sort_index")))]
    return _join(
        [
            _constant(',\n{"ph":"M"'),
            _member("name", _strings(trace, names)),
            *_always("pid", _ids(trace, column("pid"))),
            *_always("tid", _ids(trace, column("tid"))),
            _constant(f',"ts":{ts_us}'),
            *_args(args),
            _constant("}"),
        ]
    )


# --- the file -------------------------------------------------------------------------------
class _EventSink:
    """The items of traceEvents into a binary stream, comma-separated: every line starts with
    ',\\n', and the first line of the file is written without its comma."""

    def __init__(self, stream: io.BufferedIOBase):
        self.stream = stream
        self.count = 0

    def write(self, lines: pa.Array) -> None:
        if not len(lines):
            return
        offsets = np.frombuffer(lines.buffers()[1], np.int64)[
            lines.offset : lines.offset + len(lines) + 1
        ]
        data = memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]]
        self.stream.write(data[1:] if self.count == 0 else data)
        self.count += len(lines)


def _in_batches(sink: _EventSink, count: int, lines_of: Callable[[int, int], pa.Array]) -> None:
    for start in range(0, count, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, count)
        lines = lines_of(start, stop)
        if len(lines) != stop - start:  # a row lost on the way would shift every later one
            raise AssertionError(f"{len(lines)} lines built for {stop - start} rows")
        sink.write(lines)


def _header_text(trace: Trace) -> bytes:
    """The header members the loader keeps, up to the opening of traceEvents. The timestamps
    written are absolute, so baseTimeNanoseconds is left out."""
    header = {
        k: v
        for k, v in trace.meta.header.items()
        if k not in ("baseTimeNanoseconds", "traceEvents")
    }
    members = json.dumps(header, allow_nan=False, default=str)[1:-1]
    return ("{" + members + (", " if members else "") + '"traceEvents": [').encode()


def _open(path: Path, temporary: Path) -> tuple[io.BufferedWriter, io.BufferedIOBase]:
    """(the file, the stream to write into it): gzip when the name ends in .gz."""
    raw = open(temporary, "wb")
    if path.name.endswith(".gz"):
        name = path.name[: -len(".gz")]
        return raw, gzip.GzipFile(
            filename=name, mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0
        )
    return raw, raw


def write_slice(
    trace: Trace,
    path: str | os.PathLike,
    window: Window,
    rows: Optional[np.ndarray] = None,
) -> SliceCounts:
    """Writes the events of `window` ([lo, hi) ns on the events' clock) of one rank to
    `path` as Chrome-trace JSON (gzip when it ends in .gz); `rows`: the window's event rows
    when already worked out (window_rows). The file appears whole or not at all (written
    beside it, then renamed). A window without events raises ValueError."""
    lo, hi = window
    if hi <= lo:
        raise ValueError(f"the window [{lo}, {hi}) ns ends before it starts")
    rows = window_rows(trace, window) if rows is None else rows
    if not len(rows):
        raise ValueError(f"rank {trace.rank}: no event starts in the window [{lo}, {hi}) ns")
    events = _EventLines(trace, rows)
    flows = _flow_rows(trace, window, events.kept)
    counters, instants = _rows_in(trace, "counters", window), _rows_in(trace, "instants", window)
    meta = np.arange(trace.num_rows("meta"))
    ts_us = _micros(np.array([lo], np.int64))[0].as_py()

    target = Path(path)
    temporary = target.with_name(target.name + ".partial")
    raw, stream = _open(target, temporary)
    try:
        with raw:
            stream.write(_header_text(trace))
            sink = _EventSink(stream)
            _in_batches(sink, len(meta), lambda a, b: _meta_lines(trace, meta[a:b], ts_us))
            _in_batches(sink, len(rows), events.lines)
            _in_batches(sink, len(flows), lambda a, b: _flow_lines(trace, flows[a:b]))
            _in_batches(sink, len(counters), lambda a, b: _counter_lines(trace, counters[a:b]))
            _in_batches(sink, len(instants), lambda a, b: _instant_lines(trace, instants[a:b]))
            stream.write(b"\n]}\n")
            if stream is not raw:
                stream.close()
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return SliceCounts(len(rows), len(flows), len(counters), len(instants), len(meta))


def write_slice_pftrace(
    trace: Trace,
    path: str | os.PathLike,
    window: Window,
    rows: Optional[np.ndarray] = None,
) -> tuple[SliceCounts, dict[str, int]]:
    """The slice write_slice writes, as a Perfetto protobuf trace (gzip when `path` ends in
    .gz), which Perfetto UI opens past the size where it gives up on JSON: the JSON is
    written beside `path`, then rewritten by _core.json_to_pftrace. Returns the counts and
    what the protobuf trace could not carry ({reason: events left out}): events and metadata
    of string pids or tids, flow ends where no slice of their thread begins."""
    target = Path(path)
    text = target.with_name(target.name + ".json.partial")
    temporary = target.with_name(target.name + ".partial")
    try:
        counts = write_slice(trace, text, window, rows)
        data, left_out = _core.json_to_pftrace(text.read_bytes())
        text.unlink()
        with open(temporary, "wb") as raw:
            if target.name.endswith(".gz"):
                name = target.name[: -len(".gz")]
                with gzip.GzipFile(
                    filename=name, mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0
                ) as stream:
                    stream.write(data)
            else:
                raw.write(data)
        os.replace(temporary, target)
    except BaseException:
        text.unlink(missing_ok=True)
        temporary.unlink(missing_ok=True)
        raise
    return counts, left_out
