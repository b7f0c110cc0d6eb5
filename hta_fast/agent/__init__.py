"""The answers for agents: `hta-fast mcp`, a Model Context Protocol server (stdio) whose
tools are the tool's answers (info, doctor, critical_path, whatif, ops, diff, slice, query).

workspace   where a tool may read (the roots) and write (the output folder), and the traces
            loaded so far, kept between calls
bounded     results cut to a size an agent can read, saying what was cut and how to get more
tools       each tool: arguments in, one JSON document out
server      the MCP server over them (the `mcp` SDK, an optional extra: hta_fast[mcp])
"""

from .server import make_server, serve
from .workspace import Workspace

__all__ = ["make_server", "serve", "Workspace"]
