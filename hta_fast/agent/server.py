"""The MCP server: one tool per answer, over one Workspace, on stdio.

Tool descriptions are fixed text; what a trace holds (names, arguments) reaches the client
only as JSON values inside results. A tool's failure (a path outside the roots, a step the
trace lacks, bad SQL) is an error result with one line saying what was wrong."""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from ..errors import TraceFormatError
from . import tools
from .bounded import MAX_CHARS, ROWS, fit
from .workspace import Workspace

INSTRUCTIONS = (
    "Answers about PyTorch profiler (Kineto) traces: give a trace file or a folder with one "
    "file per rank, under the folders this server reads. Start with doctor (why the GPU is "
    "idle, causes ranked by what removing each saves), then critical_path, whatif (replay "
    "an edit), ops, diff (two runs), query (SQL; query_tables lists the tables) and slice "
    "(a step as a small trace file for Perfetto). Times are nanoseconds unless a table's "
    "units say otherwise. Loaded traces stay loaded between calls."
)
LIMIT_HELP = f"rows per table (default {ROWS})"
# What a tool may fail with that is the caller's to fix: said in one line.
_EXPECTED = (ValueError, KeyError, TypeError, FileNotFoundError, TraceFormatError)
# @tool(description): registers the function it decorates as a tool of the server.
_Tool = Callable[[str], Callable[[Callable[..., dict]], Callable[..., dict]]]


def make_server(ws: Workspace, max_chars: int = MAX_CHARS) -> Any:
    """An MCPServer (the `mcp` SDK) whose tools answer on the workspace's traces."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise ImportError(
            "hta-fast mcp needs the MCP SDK: pip install 'mcp>=2.3,<3' (or hta_fast[mcp])"
        ) from None
    server = MCPServer("hta-fast", instructions=INSTRUCTIONS)
    tool = _registrar(server, ToolError, max_chars)
    _add_analysis_tools(tool, ws)
    _add_query_tools(tool, ws)
    return server


def _registrar(server: Any, tool_error: type[Exception], max_chars: int) -> _Tool:
    """A decorator maker: @tool(description) registers a function as one of the server's
    tools, its result cut to max_chars and the failures the caller can fix (_EXPECTED)
    turned into one-line tool errors."""

    def tool(description: str) -> Callable[[Callable[..., dict]], Callable[..., dict]]:
        def register(fn: Callable[..., dict]) -> Callable[..., dict]:
            @functools.wraps(fn)
            def bounded(*args: Any, **kwargs: Any) -> dict[str, Any]:
                try:
                    return fit(fn(*args, **kwargs), max_chars)
                except _EXPECTED as e:
                    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
                    raise tool_error(text) from None

            server.tool(description=description)(bounded)
            return bounded

        return register

    return tool


def _add_analysis_tools(tool: _Tool, ws: Workspace) -> None:
    """The tools that answer about the traces: info, doctor, critical_path, whatif, ops,
    diff."""

    @tool("What the traces hold: per rank its file, devices, span, steps, events, kernels.")
    def info(path: str) -> dict[str, Any]:
        return tools.info(ws, path)

    @tool(
        "Why the GPU is idle: every cause (input pipeline, launch overhead, syncs, exposed "
        "communication, rank imbalance, ...) with its cost per step in ns, the model's "
        "predicted saving, evidence and advice, ranked by saving; utilization. steps: "
        "profiler step numbers (default all); ranks: rank numbers (default all)."
    )
    def doctor(
        path: str, steps: Optional[list[int]] = None, ranks: Optional[list[int]] = None
    ) -> dict[str, Any]:
        return tools.doctor(ws, path, steps, ranks)

    @tool(
        "What bounds each step: the critical path's shares (percent) by category per rank "
        "and step, and the time each event name holds on the path (table on_path, ns). "
        + LIMIT_HELP
    )
    def critical_path(
        path: str,
        steps: Optional[list[int]] = None,
        ranks: Optional[list[int]] = None,
        limit: int = ROWS,
        offset: int = 0,
    ) -> dict[str, Any]:
        return tools.critical_path(ws, path, steps, ranks, limit, offset)

    @tool(
        "Replay the steps with an edit and predict the step time: scale_class scales GPU "
        "time of a kernel class ({'COMM': 0.5}: communication twice as fast; COMP, MEM); "
        "scale_name and scale_op scale GPU events / CPU ops whose name matches a regex "
        "({'DataLoader': 0}); scale_category scales a trace category; cpu scales all host "
        "time; zero_launch_overhead, drop_comm_waits, drop_sync_waits; device: another GPU. "
        "An edit that matches nothing is an error. " + LIMIT_HELP
    )
    def whatif(
        path: str,
        scale_class: Optional[dict[str, float]] = None,
        scale_name: Optional[dict[str, float]] = None,
        scale_op: Optional[dict[str, float]] = None,
        scale_category: Optional[dict[str, float]] = None,
        cpu: float = 1.0,
        zero_launch_overhead: bool = False,
        drop_comm_waits: bool = False,
        drop_sync_waits: bool = False,
        device: Optional[str] = None,
        steps: Optional[list[int]] = None,
        ranks: Optional[list[int]] = None,
        limit: int = ROWS,
        offset: int = 0,
    ) -> dict[str, Any]:
        return tools.whatif(
            ws,
            path,
            scale_class,
            scale_name,
            scale_op,
            scale_category,
            cpu,
            zero_launch_overhead,
            drop_comm_waits,
            drop_sync_waits,
            device,
            steps,
            ranks,
            limit,
            offset,
        )

    @tool(
        "Operators by shape: calls, host and GPU time, FLOPs and bytes where a cost model "
        "knows the operator, achieved throughput. " + LIMIT_HELP
    )
    def ops(
        path: str,
        steps: Optional[list[int]] = None,
        ranks: Optional[list[int]] = None,
        limit: int = ROWS,
        offset: int = 0,
    ) -> dict[str, Any]:
        return tools.ops(ws, path, steps, ranks, limit, offset)

    @tool(
        "What changed between two runs (control, test), per step: each name's count and "
        "time per step on each side and the difference, the step time's change and the "
        "top contributors. " + LIMIT_HELP
    )
    def diff(control: str, test: str, limit: int = ROWS, offset: int = 0) -> dict[str, Any]:
        return tools.diff(ws, control, test, limit, offset)


def _add_query_tools(tool: _Tool, ws: Workspace) -> None:
    """The tools that hand out the traces' data: slice, query, query_tables."""

    @tool(
        "Write the events of some profiler steps of one rank (default: the first) as a "
        "Chrome trace small enough for Perfetto, under the server's output folder; name: "
        "a plain file name ending in .json or .json.gz. Returns the file's path."
    )
    def slice(path: str, steps: list[int], name: str, rank: Optional[int] = None) -> dict[str, Any]:
        return tools.slice_steps(ws, path, steps, name, rank)

    @tool(
        "One SQL statement (DuckDB) over the traces' tables (events, kernels, steps, "
        "counters, comm_args, ...) and any analysis, critical_path, owners or doctor by "
        "name; reads nothing else. steps/ranks choose what computed results cover. " + LIMIT_HELP
    )
    def query(
        path: str,
        sql: str,
        steps: Optional[list[int]] = None,
        ranks: Optional[list[int]] = None,
        limit: int = ROWS,
        offset: int = 0,
    ) -> dict[str, Any]:
        return tools.query(ws, path, sql, steps, ranks, limit, offset)

    @tool("The tables query can name, each with its kind and what it holds.")
    def query_tables() -> dict[str, Any]:
        return tools.query_tables()


def serve(ws: Workspace, max_chars: int = MAX_CHARS) -> None:
    """Runs the server on stdin/stdout until the client closes them."""
    make_server(ws, max_chars).run(transport="stdio")
