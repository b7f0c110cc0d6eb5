"""TraceSet: the ranks of one job, each a Trace."""

from __future__ import annotations

from typing import Iterator, Mapping

from .trace import Trace


class TraceSet(Mapping[int, Trace]):
    """Rank -> Trace, ordered by rank."""

    def __init__(self, traces: dict[int, Trace]):
        self._traces = dict(sorted(traces.items()))

    def __getitem__(self, rank: int) -> Trace:
        return self._traces[rank]

    def __iter__(self) -> Iterator[int]:
        return iter(self._traces)

    def __len__(self) -> int:
        return len(self._traces)

    @property
    def ranks(self) -> list[int]:
        return list(self._traces)

    def __repr__(self) -> str:
        return f"<TraceSet ranks={self.ranks}>"
