"""The report forgets each analysis's result once no later section reads it (on thousands of
ranks a result is hundreds of MB): every section reads only what build.py says it reads, so
no analysis runs twice, and the results are gone when the page is written."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast import synth
from hta_fast.frame.select import Selection
from hta_fast.report import build
from hta_fast.report.page.context import TITLES, Context, SectionFailed, section


class Watched(Context):
    """A Context that records which analyses each section reads."""

    section = "summary"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: dict[str, set[str]] = {}

    def result(self, name):
        self.read.setdefault(self.section, set()).add(name)
        return super().result(name)


def _build(traces) -> Watched:
    ctx = Watched(traces, Selection())
    ids = iter(["summary"] + [part.id for part in build.sections_for(len(traces))])

    def on_section(done: str) -> None:
        ctx.section = next(ids, done)  # the next section's id, for what it reads

    next(ids)
    build.build_sections(ctx, 0.0, on_section)
    return ctx


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    folder = tmp_path_factory.mktemp("many")
    synth.generate(folder, 0.2, build.MANY_RANKS, stragglers={3: 1.3})
    return hta_fast.load_dir(str(folder))


def test_each_section_reads_what_it_declares_and_nothing_runs_twice(traces_dir, many):
    few = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    for traces in (few, many):
        ctx = _build(traces)
        declared = {part.id: set(part.uses) for part in build.sections_for(len(traces))}
        declared["summary"] = set(build.SUMMARY_USES)
        for part_id, read in ctx.read.items():
            assert read <= declared[part_id], (len(traces), part_id, read - declared[part_id])
        assert ctx.runs and max(ctx.runs.values()) == 1, ctx.runs
        assert not ctx._results  # all released once the last section is built


def test_each_part_is_declared_once_and_shown_once_per_layout():
    for plan in (build.SECTIONS, build.MANY_SECTIONS):
        ids = [part.id for part in plan]
        assert len(ids) == len(set(ids)), ids
    used = {part.id for plan in (build.SECTIONS, build.MANY_SECTIONS) for part in plan}
    assert set(TITLES) == used | {"summary"}  # no title without a part that draws it
    with pytest.raises(KeyError, match="not in TITLES"):
        section("no-such-part", "temporal")


def test_a_failing_analysis_leaves_the_declared_part_with_a_note():
    @section("modules", "modules")
    def broken(ctx):
        raise SectionFailed("modules: no frames")

    s = broken(Context(hta_fast.TraceSet({}), Selection()))
    assert (s.id, s.title) == ("modules", TITLES["modules"])
    assert s.notes == ["not available for these traces (modules: no frames)"]
