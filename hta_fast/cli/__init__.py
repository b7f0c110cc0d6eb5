"""`hta-fast`: the command line. One module per command (or per family: model.py holds the
graph model's); app.py builds the group, whose COMMANDS table lists every command, its
module (imported when the command runs) and its line in `hta-fast --help`.

Exit status: 0 success, 1 a doctor gate failed, 2 bad input or usage.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
