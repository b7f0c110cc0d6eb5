"""One line for each kind of bad input: which file, where, and what to do about it."""

from __future__ import annotations

import errno

from ..errors import NOT_A_TRACE, ErrorCode, TraceFormatError


def describe(e: BaseException) -> str:
    if isinstance(e, TraceFormatError):
        text = str(e)
        if e.code is ErrorCode.truncated and "pass recover=True" in text:
            return text.replace("pass recover=True", "pass --recover")  # in command-line terms
        if e.code is ErrorCode.empty:
            return f"{text} (nothing to read: was the profile written out completely?)"
        if e.code in NOT_A_TRACE:
            return f"{text} (hta-fast reads PyTorch profiler / Kineto Chrome-trace JSON files)"
        # Suggested only where it helps: the core knows which faults recover=True reads
        # past (a bad event, a cut, invalid UTF-8), and none where --recover was given.
        if e.recoverable:
            return f"{text} (the file is damaged; --recover keeps the events that can be read)"
        return f"{text} (the file is damaged)"
    if isinstance(e, IsADirectoryError):
        return str(e)
    if isinstance(e, FileNotFoundError):
        name = e.filename or (e.args[0] if e.args else "")
        if e.filename is None and len(e.args) == 1 and isinstance(name, str) and " " in name:
            return name  # already a sentence ("no trace files (...) in DIR")
        return f"{name}: no such file or directory"
    if isinstance(e, PermissionError):
        return f"{e.filename}: permission denied"
    if isinstance(e, OSError):
        what = e.strerror or errno.errorcode.get(e.errno or 0, "") or str(e)
        return f"{e.filename}: {what}" if e.filename else str(e)
    if isinstance(e, MemoryError):
        return "out of memory: analyse fewer ranks (--ranks) or steps (--steps)"
    if isinstance(e, (ValueError, KeyError)):
        return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    return f"{type(e).__name__}: {e} (run with --debug for the traceback)"
