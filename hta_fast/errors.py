"""Errors raised for bad input."""

from __future__ import annotations

import os
from typing import Optional

from ._core import ErrorCode

__all__ = ["ErrorCode", "NOT_A_TRACE", "TraceFormatError"]

# ErrorCode (what kind of fault) is declared once, in the core (csrc/io/format_error.h).
# The codes of a file that is no trace at all, rather than a broken one: a folder's loader
# leaves such files out, and the CLI says which files it reads.
NOT_A_TRACE = frozenset({ErrorCode.not_json, ErrorCode.not_a_trace})


class TraceFormatError(ValueError):
    """A trace file that cannot be read: which file, where, what kind of fault and what is
    wrong.

    code         an ErrorCode; None when Python code raised the error without one
    offset       the byte offset of the fault, or None when no single byte is to blame
    key          the field at fault ("ts", "args.bytes", "baseTimeNanoseconds"), or None
    recoverable  loading with recover=True would get past this fault (False for an error
                 that recover=True raised)
    """

    def __init__(
        self,
        path: Optional[os.PathLike | str],
        offset: Optional[int],
        reason: str,
        *,
        rank: Optional[int] = None,
        code: Optional[ErrorCode] = None,
        key: Optional[str] = None,
        recoverable: bool = False,
    ):
        self.path = None if path is None else os.fspath(path)
        self.offset = offset
        self.reason = reason
        self.rank = rank  # set when the file is one rank of a set (load_dir)
        self.code = code
        self.key = key
        self.recoverable = recoverable
        where = self.path or "<bytes>"
        at = f" at byte {offset}" if offset is not None else ""
        who = f"rank {rank}: " if rank is not None else ""
        super().__init__(f"{who}{where}{at}: {reason}")
