"""What the report sections share: the traces, the selection, and each analysis run once
(as the command line runs it: analysis.registry)."""

from __future__ import annotations

import dataclasses
import logging
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

    def result(self, name: str) -> Result:
        if name not in self._results:
            try:
                self._results[name] = ANALYSES[name](self.traces, self.selection)
            except Exception as e:  # noqa: BLE001 - one odd trace must not sink the report
                log.warning("report: %s could not run: %s", name, e)
                log.debug("report: %s failed", name, exc_info=True)
                raise SectionFailed(f"{name}: {e}") from e
        return self._results[name]

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """A value worked out from the results once and shared by the sections."""
        if name not in self._derived:
            self._derived[name] = compute()
        return self._derived[name]

    def notes(self, *names: str) -> list[str]:
        return [n for name in names if name in self._results for n in self._results[name].notes]


def run_section(build: Callable[[Context], Section], ctx: Context, id: str, title: str) -> Section:
    """Builds a section; an analysis that fails leaves the section with a note instead."""
    try:
        return build(ctx)
    except SectionFailed as e:
        return Section(id, title, notes=[f"not available for these traces ({e})"])
