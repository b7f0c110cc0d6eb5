"""`hta-fast mcp`: the answers as a Model Context Protocol server on stdin/stdout."""

from __future__ import annotations

from typing import Optional

import click

from ...agent import Workspace, serve
from ...agent.bounded import MAX_CHARS
from ..app import Options, cli


@cli.command("mcp")
@click.option(
    "--root",
    "roots",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="A folder (or file) the tools may read (repeatable); any other path is refused.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="The folder the slice tool writes into (none: it writes nothing).",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    default=MAX_CHARS,
    show_default=True,
    help="The most characters of one result; longer lists are cut, and the result says so.",
)
@click.pass_obj
def mcp_command(opts: Options, roots: tuple[str, ...], out: Optional[str], max_chars: int) -> None:
    """Serve the answers (info, doctor, critical_path, whatif, ops, diff, slice, query) to an
    agent over the Model Context Protocol (stdio). Needs the MCP SDK: pip install
    'hta_fast[mcp]'. Loaded traces stay loaded between calls.

    \b
    hta-fast mcp --root ~/traces --out ~/traces/slices
    """
    serve(Workspace(roots, out), max_chars)
