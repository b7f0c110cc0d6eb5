"""A folder written beside its target and then put in its place in one step, so that a reader,
or a writer killed at any moment, finds at the path the old folder or the new one, never a mix
of the two, half of one, or nothing.

On Linux the two folders are exchanged with renameat2(RENAME_EXCHANGE), one atomic system call;
elsewhere (or on a filesystem without it) the old folder is renamed aside and the new one
renamed in, which leaves the path empty for the moment between the two renames.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sys
import tempfile
from typing import Any, Optional

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# The errors with which renameat2 says it cannot exchange here (not that the paths are bad).
_CANNOT_EXCHANGE = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP}


def _renameat2() -> Optional[Any]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28 and later
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


# None where the system has no renameat2: install() then renames aside. Setting it to None
# takes that path on Linux too (tests/project/test_portable.py does).
_RENAMEAT2 = _renameat2()


def exchange(a: str, b: str) -> bool:
    """Swaps two existing paths in one step; False where this system cannot (nothing moved)."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _CANNOT_EXCHANGE:
        return False
    raise OSError(err, os.strerror(err), a, None, b)


def staging_beside(target: str, purpose: str) -> str:
    """A new, empty, hidden folder beside `target`: on the same filesystem, so that renaming it
    to `target` is one step. Named `.NAME.PURPOSE-XXXXXX`: what a killed writer leaves behind
    is recognisable, and safe to delete."""
    target = os.path.abspath(target)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.{purpose}-", dir=parent)


def install(new: str, target: str) -> None:
    """Puts the folder `new` at `target`, replacing what is there (the caller has made sure
    that it may); `new` no longer exists afterwards. Safe against another process installing
    at the same target at the same time: the last one to install wins."""
    for _ in range(8):  # each pass fails only when another writer moved `target` meanwhile
        try:
            os.rename(new, target)  # `target` absent (or an empty folder): done
            return
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        try:
            swapped = exchange(new, target)
        except FileNotFoundError:
            continue  # `target` went away between the two calls: rename again
        if swapped:
            shutil.rmtree(new, ignore_errors=True)  # `new` now holds the old folder
            return
        old = f"{new}.old"
        try:
            os.rename(target, old)
        except FileNotFoundError:
            continue
        os.rename(new, target)
        shutil.rmtree(old, ignore_errors=True)
        return
    raise OSError(errno.EBUSY, f"{target} kept changing while it was being replaced")
