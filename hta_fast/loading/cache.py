"""The load cache: `load(path, cache=True)` keeps a saved trace (hta_fast.saved_trace) per
source file and options, and rebuilds it when the source, the options, the schema or the
package version change, or when the entry is found damaged.

Entries live in HTA_FAST_CACHE_DIR, else $XDG_CACHE_HOME/hta_fast, else ~/.cache/hta_fast.
Processes may fill the cache at once: each writes its entry beside the final one and swaps it
in (saved_trace.write), so a reader sees a whole entry or none; the last writer wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zlib
from pathlib import Path
from typing import Any, Optional, Union

from .. import saved_trace
from .._core import __version__
from ..schema import SCHEMA_VERSION
from ..trace import Trace, open_saved

# The source's first and last MiB are checksummed: a file rewritten in place with its size
# and mtime kept (a copy with `cp -p`, a tool that restores mtime) is still seen as changed,
# for the cost of reading 2 MiB however big the trace. CRC-32 (about 0.2 ms a MiB, five times
# quicker than blake2b) is enough: this finds accidents, ctime and inode back it, and whoever
# can write the trace can change what it says anyway.
_PROBE_BYTES = 1 << 20


def default_cache_dir() -> Path:
    env = os.environ.get("HTA_FAST_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hta_fast"


def _source_identity(path: str) -> dict[str, Any]:
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        head = zlib.crc32(fh.read(_PROBE_BYTES))
        tail = 0
        if st.st_size > _PROBE_BYTES:
            fh.seek(max(_PROBE_BYTES, st.st_size - _PROBE_BYTES))
            tail = zlib.crc32(fh.read(_PROBE_BYTES))
    return {
        "path": os.path.abspath(path),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        # Changed by any write, and not settable by the writer (os.utime sets it to now).
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "head_tail_crc32": [head, tail],
    }


def _entry_dir(path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict) -> Path:
    key = json.dumps([os.path.abspath(path), options], sort_keys=True).encode()
    return Path(cache_dir or default_cache_dir()) / hashlib.sha1(key).hexdigest()[:20]


def lookup(
    path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> Optional[Trace]:
    """The cached trace for `path`, or None when there is none, it is stale or it is damaged
    (then with a warning: store() rebuilds it)."""
    entry = _entry_dir(path, cache_dir, options)
    if not entry.is_dir():
        return None
    manifest = saved_trace.read_manifest(entry)
    if manifest is None:
        _damaged(entry, path, "its manifest cannot be read")
        return None
    fresh = (
        manifest.get("schema_version") == SCHEMA_VERSION
        and manifest.get("package_version") == __version__
        and manifest.get("source") == _source_identity(path)
        and manifest.get("options") == options
    )
    if not fresh:
        return None
    try:
        return open_saved(entry)
    except Exception as e:  # noqa: BLE001 - whatever is wrong with an entry, the load goes on
        _damaged(entry, path, f"{type(e).__name__}: {e}")
        return None


def _damaged(entry: Path, path: str, why: str) -> None:
    warnings.warn(
        f"hta_fast cache entry {entry} for {path} is damaged ({why}); rebuilding it",
        stacklevel=4,
    )


def store(
    trace: Trace, path: str, cache_dir: Optional[Union[str, os.PathLike]], options: dict
) -> None:
    """Writes (or replaces) the entry; a cache that cannot be written only warns: the trace
    is loaded all the same."""
    try:
        saved_trace.write(
            _entry_dir(path, cache_dir, options),
            trace._raw,
            {**trace.saved_facts(), "source": _source_identity(path), "options": options},
            owned=True,  # the cache names its entries: whatever is at one is an entry
        )
    except OSError as e:
        warnings.warn(f"hta_fast cache: could not keep {path} ({e})", stacklevel=3)
