"""load(): one trace file (or its bytes, or a saved trace) in, a Trace out."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Optional, Sequence, Union

from .. import _core, saved_trace
from ..errors import ErrorCode, TraceFormatError
from ..raw_columns import RawColumns
from ..schema import KernelClass
from ..trace import Trace, TraceMeta, open_saved
from . import cache as cache_mod
from . import quote_repair
from .files import PathLike

KernelClassRules = Optional[Sequence[tuple[str, Union[str, int, KernelClass]]]]


def _rules(kernel_classes: KernelClassRules) -> list[tuple[str, int]]:
    """User kernel-class rules: (regex searched in the kernel name, class)."""
    out = []
    for pattern, cls in kernel_classes or ():
        if isinstance(cls, str):
            cls = KernelClass[cls.upper()]
        re.compile(pattern)  # a bad pattern fails here, with Python's message
        out.append((pattern, int(cls)))
    return out


def _read(
    source: Optional[Union[bytes, bytearray, memoryview]],
    path: Optional[str],
    threads: int,
    recover: bool,
    chunk_size: int,
    kernel_classes: KernelClassRules,
) -> tuple[RawColumns, TraceMeta]:
    rules = _rules(kernel_classes)
    try:
        if path is not None:
            loaded = _core.load_file(path, threads, recover, chunk_size, rules)
        else:
            assert source is not None
            loaded = _core.load_bytes(source, threads, recover, chunk_size, rules)
    except _core.FormatError as e:
        error = TraceFormatError(
            path, e.offset, e.reason, code=e.code, key=e.key, recoverable=e.recoverable
        )
        if e.code != ErrorCode.bad_json:
            raise error from None
        return _read_quotes_repaired(source, path, error, threads, recover, chunk_size, rules)
    # The core parsed the header (see TraceMeta); nothing here parses it again.
    meta = TraceMeta.from_header(loaded.header, path, loaded.json_bytes, loaded.base_time_ns)
    return RawColumns.of(loaded), meta


def _read_quotes_repaired(
    source: Optional[Union[bytes, bytearray, memoryview]],
    path: Optional[str],
    error: TraceFormatError,
    threads: int,
    recover: bool,
    chunk_size: int,
    rules: list[tuple[str, int]],
) -> tuple[RawColumns, TraceMeta]:
    """A file that is not JSON because of unescaped quotes inside strings
    (hta_fast.loading.quote_repair): with recover, read with them escaped and counted;
    without, the error says where the first one is and that recover reads it."""
    if path is not None:
        if os.path.getsize(path) > quote_repair.LARGEST_FILE:
            raise error from None
        with open(path, "rb") as f:
            data = f.read()
    else:
        assert source is not None
        data = bytes(source)
    text = quote_repair.json_text(data)
    if text is None:
        raise error from None
    repaired, offsets = quote_repair.repair_quotes(text)
    if not offsets:
        raise error from None
    if not recover:
        raise TraceFormatError(
            path,
            offsets[0],
            f"an unescaped quote inside a string ({len(offsets):,} in the file; traces "
            f"before 2026 did not escape names); recover=True escapes them",
            code=ErrorCode.bad_json,
            recoverable=True,
        ) from None
    try:
        loaded = _core.load_bytes(repaired, threads, recover, chunk_size, rules)
    except _core.FormatError:
        raise error from None  # the quotes were not all that is wrong
    meta = TraceMeta.from_header(loaded.header, path, loaded.json_bytes, loaded.base_time_ns)
    raw = RawColumns.of(loaded)
    stats = [*raw.stats, quote_repair.repaired_stat(text, offsets)]
    return dataclasses.replace(raw, stats=stats), meta


def load(
    source: Union[PathLike, bytes, bytearray, memoryview],
    *,
    threads: int = 0,
    recover: bool = False,
    cache: bool = False,
    cache_dir: Optional[PathLike] = None,
    kernel_classes: KernelClassRules = None,
    chunk_size: int = 0,
    rank: Optional[int] = None,
) -> Trace:
    """Loads one trace file (.json, .json.gz, .json.zst, or a Perfetto protobuf trace:
    .pftrace, .pftrace.gz, .perfetto-trace), the bytes of one, or a directory written by
    Trace.save. The format is told by content, not by name (docs/format.md).

    threads         parser threads (0 = one per core); with more than one, a compressed
                    file is also decompressed on a thread of its own, ahead of the parser;
                    1 does all on the calling thread (the least CPU: ranks loaded side by
                    side use it)
    recover         keep the complete events of a truncated file, skip events with a
                    core field of the wrong type, read a bad argument (args.*) as missing
                    and invalid UTF-8 as U+FFFD (each counted in Trace.stats); without it
                    such input raises TraceFormatError (see docs/format.md)
    cache           reuse an Arrow copy of the loaded trace while the file is unchanged
    kernel_classes  extra (regex, class) rules for kernel classes, tried first:
                    [("^my_allreduce", "COMM")]
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, meta = _read(source, None, threads, recover, chunk_size, kernel_classes)
        return Trace(raw, meta, rank)
    path = os.fspath(source)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    if os.path.isdir(path):
        if not saved_trace.is_saved(path):
            raise IsADirectoryError(
                f"{path} is a directory, not a trace or a saved trace "
                "(use load_dir for one file per rank)"
            )
        return open_saved(path)
    if cache:
        options = {"recover": recover, "kernel_classes": _rules(kernel_classes)}
        hit = cache_mod.lookup(path, cache_dir, options)
        if hit is not None:
            return hit
    raw, meta = _read(None, path, threads, recover, chunk_size, kernel_classes)
    trace = Trace(raw, meta, rank)
    if cache:
        cache_mod.store(trace, path, cache_dir, options)
    return trace
