"""`hta-fast`: the command line. One module per command (or per family: commands/model.py
holds the graph model's) in commands/; app.py builds the group, whose COMMANDS table lists
every command, its module in commands/ (imported when the command runs) and its line in
`hta-fast --help`; the rest of this folder is what the commands share (loading, options,
output, progress, the terminal, errors).

Exit status: 0 success, 1 a doctor gate failed, 2 bad input or usage.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
