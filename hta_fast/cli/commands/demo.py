"""`hta-fast demo`: a realistic multi-rank synthetic trace set, and its report.

The traces are written by hta_fast.synth from a base trace: by default the real one in the
project's ../shared/traces, and where that is not there (an installed wheel) the small
made-up program shipped beside this module (demo_base.json.gz, written by
benchmarks/gen_demo_base.py). Its events are repeated with links kept intact, each rank's
clock skewed by a few milliseconds, as in real jobs. One rank (the middle one) is a straggler, so the
report has something to find: its GPU compute takes --straggler-factor times as long and the
other ranks wait for it in their collectives.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Optional

import click

from ... import synth
from ..app import Options, cli
from ..loading import load_files
from ..progress import bar
from .report import write

# The base where the project's sample trace is not there: a data-parallel training step made
# up by benchmarks/gen_demo_base.py (8 KB), shipped in the package.
DEMO_BASE = Path(__file__).with_name("demo_base.json.gz")

# The middle rank's GPU compute factor. The sample program is launch-bound: a GPU slower by
# less than about 1.6x catches up in its idle gaps, and the straggler is not the top cause.
STRAGGLER_FACTOR = 2.0


@cli.command()
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(file_okay=False),
    help="Folder for the traces and report.html (default: a new temporary folder).",
)
@click.option("--ranks", "n_ranks", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option(
    "--size-mb",
    type=click.FloatRange(0.1, 10_000),
    default=20,
    show_default=True,
    help="JSON per rank, MB.",
)
@click.option(
    "--base",
    type=click.Path(exists=True, dir_okay=False),
    help="Real trace to build from (default: the project's sample trace, else a small "
    "program shipped with hta_fast).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--straggler-factor",
    type=click.FloatRange(1.0, 10.0),
    default=STRAGGLER_FACTOR,
    show_default=True,
    help="How much longer the middle rank's GPU compute takes; the others wait for it in "
    "their collectives (1: no straggler). The sample program is launch-bound, so a GPU that "
    "is slower by less than about 1.6x catches up in its idle gaps and is not the top cause.",
)
@click.option("--cdn", is_flag=True, help="A small report that loads plotly.js from its CDN.")
@click.pass_obj
def demo(
    opts: Options,
    out: Optional[str],
    n_ranks: int,
    size_mb: float,
    base: Optional[str],
    seed: int,
    straggler_factor: float,
    cdn: bool,
) -> None:
    """Generate a multi-rank trace set, then report on it: the whole tool, no data needed.

    The middle rank is made a straggler (--straggler-factor) for the report to find."""
    base_path = base or default_base()
    out = out or tempfile.mkdtemp(prefix="hta_fast_demo_")
    straggler = n_ranks // 2
    stragglers = {straggler: straggler_factor} if n_ranks > 1 and straggler_factor != 1 else {}
    t0 = time.perf_counter()
    with bar(opts, total=n_ranks, desc="generating") as progress:
        files = synth.generate(
            out,
            size_mb,
            ranks=n_ranks,
            base=base_path,
            compress=True,
            gzip_level=1,  # fast; the files are a demo, not an archive
            seed=seed,
            stragglers=stragglers,
            log=lambda msg: progress.update(1) if msg.endswith("MB/s)") else None,
        )
    click.echo(
        f"{len(files)} rank(s) x {size_mb:g} MB of trace JSON written to {out} "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    if stragglers:
        click.echo(
            f"rank {straggler} is a straggler: its GPU compute takes {straggler_factor:g}x as "
            "long, and the other ranks wait for it in their collectives"
        )
    traces, load_s = load_files([str(f) for f in files], opts)
    report_path = os.path.join(out, "report.html")
    info = write(
        traces,
        report_path,
        opts,
        cdn=cdn,
        load_seconds=load_s,
        title=f"hta_fast demo: {n_ranks} synthetic ranks",
    )
    click.echo(f"report: {info['path']} ({info['bytes'] / 1e6:.1f} MB); open it in a browser")
    click.echo(f"next: hta-fast doctor {out}   hta-fast analyze {out}   hta-fast info {out}")


def default_base() -> str:
    """The project's sample trace where the source tree's ../shared holds it, else the small
    base shipped in the package."""
    if os.path.isfile(synth.DEFAULT_BASE):
        return str(synth.DEFAULT_BASE)
    click.echo(
        "the project's sample trace is not here: building from hta_fast's own small program "
        "(--base FILE builds from a trace of yours)"
    )
    return str(DEMO_BASE)
