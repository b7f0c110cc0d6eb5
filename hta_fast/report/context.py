"""What the report sections share: the traces, the selection, and each analysis run once
(as the command line runs it: analysis.registry)."""

from __future__ import annotations

import collections
import dataclasses
import logging
import re
from typing import Any, Callable

from ..analysis.registry import ANALYSES
from ..frame.result import Result
from ..frame.select import Selection
from ..traceset import TraceSet

log = logging.getLogger("hta_fast")


@dataclasses.dataclass
class Section:
    """One part of the report: figures (plotly dicts), tables (see tables.py), notes."""

    id: str
    title: str
    intro: str = ""
    figures: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tables: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


class SectionFailed(Exception):
    """An analysis a section needs could not run on these traces."""


class Context:
    def __init__(
        self,
        traces: TraceSet,
        selection: Selection,
        max_points: int = 20_000,
        source: str = "DIR",
    ):
        self.traces = traces
        self.selection = selection
        self.max_points = max_points  # points per figure, over all its series
        self.source = source  # the traces as the command line names them, for commands shown
        self._results: dict[str, Result] = {}
        self._derived: dict[str, Any] = {}
        self.runs: collections.Counter[str] = collections.Counter()  # analyses run, by name

    def result(self, name: str) -> Result:
        if name not in self._results:
            self.runs[name] += 1
            try:
                self._results[name] = ANALYSES[name](self.traces, self.selection)
            except Exception as e:  # noqa: BLE001 - one odd trace must not sink the report
                log.warning("report: %s could not run: %s", name, e)
                log.debug("report: %s failed", name, exc_info=True)
                raise SectionFailed(f"{name}: {e}") from e
        return self._results[name]

    def release(self, keep: set[str]) -> None:
        """Forget the results of the analyses not in `keep` (asked for again, one runs
        anew): the sections still to come read only those."""
        for name in set(self._results) - keep:
            del self._results[name]

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """A value worked out from the results once and shared by the sections."""
        if name not in self._derived:
            self._derived[name] = compute()
        return self._derived[name]

    def notes(self, *names: str) -> list[str]:
        found = [n for name in names if name in self._results for n in self._results[name].notes]
        return fold_rank_notes(found)


_RANK_NOTE = re.compile(r"^rank (\d+): (.*)$", re.S)
FOLD_FROM = 4  # ranks sharing a note before it is said once for all of them
SHOWN_RANKS = 8


def fold_rank_notes(notes: list[str]) -> list[str]:
    """Notes that say the same of many ranks ("rank 7: no communication kernels ...") said
    once, naming a few of the ranks and counting the rest: on thousands of ranks the page
    would otherwise hold a line per rank. Order: each text where it first appears."""
    ranks_of: dict[str, list[int]] = {}
    for n in notes:
        m = _RANK_NOTE.match(n)
        if m:
            ranks_of.setdefault(m.group(2), []).append(int(m.group(1)))
    out: list[str] = []
    said: set[str] = set()
    for n in notes:
        m = _RANK_NOTE.match(n)
        if not m or len(ranks_of[m.group(2)]) < FOLD_FROM:
            out.append(n)
        elif m.group(2) not in said:
            said.add(m.group(2))
            ranks = sorted(set(ranks_of[m.group(2)]))
            shown = ", ".join(map(str, ranks[:SHOWN_RANKS]))
            more = f" ... and {len(ranks) - SHOWN_RANKS:,} more" if len(ranks) > SHOWN_RANKS else ""
            out.append(f"{len(ranks):,} ranks ({shown}{more}): {m.group(2)}")
    return out


def run_section(build: Callable[[Context], Section], ctx: Context, id: str, title: str) -> Section:
    """Builds a section; an analysis that fails leaves the section with a note instead."""
    try:
        return build(ctx)
    except SectionFailed as e:
        return Section(id, title, notes=[f"not available for these traces ({e})"])
