"""Progress bars: click's, on stderr, only for a person at a terminal, and only once the work
has lasted DELAY_S (work that finishes sooner never shows a bar at all)."""

from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Iterator, Optional

import click

from .app import Options

DELAY_S = 0.5


class Progress:
    """A bar over `total` units (update(n) as they are done), or over an iterable; shown
    once DELAY_S has passed, when `shown` (the person asked for progress)."""

    def __init__(
        self, shown: bool, total: Optional[int], desc: str, iterable: Optional[Iterable[Any]]
    ):
        self.shown, self.desc, self.iterable = shown, desc, iterable
        self.total = len(iterable) if total is None and hasattr(iterable, "__len__") else total  # type: ignore[arg-type]
        self.done = 0
        self.start = time.monotonic()
        self.bar: Any = None

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is None and self.shown and time.monotonic() - self.start >= DELAY_S:
            self.bar = click.progressbar(length=self.total, label=self.desc, file=sys.stderr)
            self.bar.__enter__()
            n = self.done
        if self.bar is not None:
            self.bar.update(n)

    def __iter__(self) -> Iterator[Any]:
        with self:
            for item in self.iterable or ():
                yield item
                self.update(1)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def bar(
    opts: Options,
    *,
    total: Optional[int] = None,
    desc: str = "",
    iterable: Optional[Iterable[Any]] = None,
) -> Progress:
    """A Progress for this command: shown when opts.progress (a terminal, not -q)."""
    return Progress(opts.progress, total, desc, iterable)
