"""What the report sections share: the traces, the selection, and each analysis run once
(as the command line runs it: analysis.registry)."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
from typing import Any, Callable, TypeVar

from ...analysis.registry import ANALYSES
from ...frame.result import Result, fold_rank_notes
from ...frame.select import Selection
from ...model.graph.walk import chains_kept
from ...traceset import TraceSet

log = logging.getLogger("hta_fast")
T = TypeVar("T")


# Every part the report can show, by id (the page's anchor), with its title: said here once.
# A builder declares which part it draws (`section`); the layouts in build.py list builders.
TITLES = {
    "summary": "Run summary",
    "ranks": "Outlier ranks",
    "temporal": "Temporal breakdown per rank",
    "gpu-efficiency": "GPU utilization, SM efficiency and occupancy",
    "step-breakdown": "Step time breakdown",
    "kernel-types": "Kernel types and their overlaps",
    "top-kernels": "Top kernels",
    "operators": "Operators: FLOPs, bytes and the roofline",
    "critical-path": "Critical path per step",
    "graph-replays": "Graph replays",
    "inference": "Inference passes",
    "overlap": "Communication / computation overlap",
    "idle": "Idle time per stream",
    "queue": "CUDA queue length over time",
    "bandwidth": "Memory bandwidth over time",
    "memory": "Memory per operator",
    "modules": "Modules",
    "launch-delay": "Launch delay",
    "steps": "Per-step and per-rank timings",
    "collectives": "Collectives",
}


@dataclasses.dataclass
class Section:
    """One part of the report: figures (plotly dicts), tables (see tables.py), notes. A
    builder fills what it draws; id and title come from its declaration (`section`)."""

    intro: str = ""
    figures: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tables: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    id: str = ""
    title: str = ""


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
        self._graphs = contextlib.ExitStack()  # the kept model graphs (keep_graphs)

    def result(self, name: str) -> Result:
        if name not in self._results:
            self.runs[name] += 1
            self._results[name] = self.guarded(
                name, lambda: ANALYSES[name](self.traces, self.selection)
            )
        return self._results[name]

    def result_on(self, name: str, selection: Selection) -> Result:
        """An analysis of the registry run on another selection (a few of the ranks, say),
        as result() runs it; not kept."""
        return self.guarded(name, lambda: ANALYSES[name](self.traces, selection))

    def guarded(self, name: str, compute: Callable[[], T]) -> T:
        """compute(); where it fails, SectionFailed naming `name` (the section says so in a
        note): one odd trace must not sink the report."""
        try:
            return compute()
        except Exception as e:  # noqa: BLE001 - the rest of the report stands without it
            log.warning("report: %s could not run: %s", name, e)
            log.debug("report: %s failed", name, exc_info=True)
            raise SectionFailed(f"{name}: {e}") from e

    def keep_graphs(self) -> None:
        """From here until release(graphs=False), the model's graphs are built once and
        shared (model.graph.walk.chains_kept): the doctor's what-if replays and the
        critical-path section walk the same ones."""
        self._graphs.enter_context(chains_kept())

    def release(self, keep: set[str], graphs: bool = False) -> None:
        """Forget the results of the analyses not in `keep` (asked for again, one runs
        anew), and the kept graphs unless `graphs`: the sections still to come read only
        those."""
        for name in set(self._results) - keep:
            del self._results[name]
        if not graphs:
            self._graphs.close()

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """A value worked out from the results once and shared by the sections."""
        if name not in self._derived:
            self._derived[name] = compute()
        return self._derived[name]

    def notes(self, *names: str) -> list[str]:
        found = [n for name in names if name in self._results for n in self._results[name].notes]
        return fold_rank_notes(found)


@dataclasses.dataclass(frozen=True)
class Part:
    """A declared section builder: the part it draws (an id of TITLES) and the analyses it
    reads (what build_sections keeps until the last reader is done). Calling it builds the
    section; an analysis that fails leaves the section with a note instead."""

    id: str
    uses: tuple[str, ...]
    build: Callable[..., Section]
    walks_graphs: bool = False  # reads the model's graphs (kept until the last such part)

    @property
    def title(self) -> str:
        return TITLES[self.id]

    def __call__(self, ctx: Context) -> Section:
        try:
            s = self.build(ctx)
        except SectionFailed as e:
            s = Section(notes=[f"not available for these traces ({e})"])
        s.id, s.title = self.id, self.title
        return s


def section(
    id: str, *uses: str, walks_graphs: bool = False
) -> Callable[[Callable[..., Section]], Part]:
    """Declares a builder as the part `id` of the report, reading the analyses `uses` (and
    the model's graphs: walks_graphs)."""
    if id not in TITLES:
        raise KeyError(f"report part {id!r} is not in TITLES")

    def declare(build: Callable[..., Section]) -> Part:
        return Part(id, uses, build, walks_graphs)

    return declare
