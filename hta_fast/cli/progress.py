"""Progress bars: tqdm on stderr, only for a person at a terminal."""

from __future__ import annotations

from typing import Any

from tqdm import tqdm

from .app import Options


def bar(opts: Options, **kwargs: Any) -> tqdm[Any]:
    # delay: work that finishes within half a second never shows a bar at all.
    return tqdm(disable=not opts.progress, leave=False, delay=0.5, dynamic_ncols=True, **kwargs)
