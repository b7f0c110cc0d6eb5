"""Where a tool may read and write, and the traces loaded so far.

A path an agent gives is resolved (symbolic links followed) and must lie under one of the
roots given at start; an output is a bare file name, written under the output folder. A
loaded trace set is kept, keyed by its files and their sizes and modification times, so a
second call on the same traces does not load them again (a changed file is loaded anew).
"""

from __future__ import annotations

import os
import re
import time
from collections import OrderedDict
from pathlib import Path
from typing import Iterable, NamedTuple, Optional

from ..loading.files import trace_files
from ..loading.sets import load_dir
from ..traceset import TraceSet

# Trace sets kept loaded at once; the least recently used is dropped first.
KEPT_SETS = 4
# What an output file may be called: a plain name, no folder, no leading dot.
_OUTPUT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


class Loaded(NamedTuple):
    traces: TraceSet
    cached: bool
    seconds: float


class Workspace:
    """roots: folders (or files) a tool may read; out: the folder it may write (None: no
    tool writes)."""

    def __init__(self, roots: Iterable[str], out: Optional[str] = None, kept: int = KEPT_SETS):
        self.roots = [Path(r).resolve() for r in roots]
        if not self.roots:
            raise ValueError("give at least one root folder the tools may read (--root)")
        for r in self.roots:
            if not r.exists():
                raise ValueError(f"{r}: no such root")
        self.out = Path(out).resolve() if out is not None else None
        self.kept = kept
        self.loads = 0  # trace sets loaded from files (a cached one does not count)
        self._sets: OrderedDict[tuple, TraceSet] = OrderedDict()

    def readable(self, path: str) -> Path:
        """The path resolved, if it lies under a root; else ValueError."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise ValueError("give a path to a trace file or a folder of rank files")
        resolved = Path(path).expanduser().resolve()
        if not any(resolved == r or r in resolved.parents for r in self.roots):
            roots = ", ".join(str(r) for r in self.roots)
            raise ValueError(f"{path}: outside the folders this server reads ({roots})")
        if not resolved.exists():
            raise ValueError(f"{path}: no such file or folder")
        return resolved

    def writable(self, name: str) -> Path:
        """Where the output `name` goes: a plain file name under the output folder."""
        if self.out is None:
            raise ValueError("this server writes no files: start it with --out DIR")
        if not isinstance(name, str) or not _OUTPUT_NAME.match(name):
            raise ValueError(
                f"{name!r}: give a plain file name (letters, digits, _ . -), written under "
                f"{self.out}"
            )
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out / name

    def load(self, path: str) -> Loaded:
        """The traces at `path` (a file or a folder of ranks), loaded once."""
        files = trace_files(str(self.readable(path)), must_exist=True)
        key = tuple((f, *_stamp(f)) for f in files)
        if key in self._sets:
            self._sets.move_to_end(key)
            return Loaded(self._sets[key], True, 0.0)
        t0 = time.perf_counter()
        traces = load_dir(files)
        self.loads += 1
        self._sets[key] = traces
        while len(self._sets) > self.kept:
            self._sets.popitem(last=False)
        return Loaded(traces, False, time.perf_counter() - t0)


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns
