"""Errors raised for bad input."""
from __future__ import annotations

import os
from typing import Optional


class TraceFormatError(ValueError):
    """A trace file that cannot be read: which file, where, and what is wrong."""

    def __init__(self, path: Optional[os.PathLike | str], offset: Optional[int], reason: str,
                 *, rank: Optional[int] = None):
        self.path = None if path is None else os.fspath(path)
        self.offset = offset
        self.reason = reason
        self.rank = rank  # set when the file is one rank of a set (load_dir)
        where = self.path or "<bytes>"
        at = f" at byte {offset}" if offset is not None else ""
        who = f"rank {rank}: " if rank is not None else ""
        super().__init__(f"{who}{where}{at}: {reason}")
