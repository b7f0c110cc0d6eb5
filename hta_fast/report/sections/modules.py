"""The report's module section: time per nn.Module, forward and backward, host and GPU, the
top modules by GPU time with their place in the tree (analysis.tensorboard.modules). One
line when no rank recorded module frames."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_numpy
from ..page.context import Context, Section, section
from ..page.figures import bar, figure
from ..page.tables import html_table

TOP = 25
ABOUT = (
    "Time per nn.Module (the profiler's with_stack or with_modules frames), inclusive of its "
    "submodules: forward host time is the module's call, forward GPU time the work launched "
    "in it; backward time is the autograd nodes of the operators the module ran. A module's "
    "path places it in the tree."
)


@section("modules", "modules")
def modules(ctx: Context) -> Section:
    t = ctx.result("modules").table
    if t.num_rows == 0:
        return Section(
            "No nn.Module frames recorded (profile with with_stack=True or with_modules=True).",
        )
    leaves = _top(t)
    names = leaves.column("path").to_pylist()
    data = [
        bar(names, as_numpy(leaves.column(c)) / 1e6, label, i)
        for i, (c, label) in enumerate(
            (("forward_gpu", "forward GPU"), ("backward_gpu", "backward GPU"))
        )
    ]
    return Section(
        ABOUT,
        figures=[figure(data, f"Top {len(names)} modules by GPU time", "", "ms", barmode="stack")],
        tables=[html_table("modules (tree order)", t, limit=60)],
        notes=ctx.notes("modules"),
    )


def _top(t: pa.Table) -> pa.Table:
    """The modules with most GPU time (forward and backward), one rank's rows after another."""
    total = pc.add(t["forward_gpu"], t["backward_gpu"])
    ranked = t.append_column("gpu", total).sort_by([("gpu", "descending")])
    return ranked.slice(0, TOP)
