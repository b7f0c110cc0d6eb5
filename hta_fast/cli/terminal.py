"""Writing text that may hold trace text to the terminal (hta_fast.guards.untrusted_text says what is
escaped and why)."""

from __future__ import annotations

from typing import Optional

import click

from ..guards.untrusted_text import safe_cell, safe_lines

__all__ = ["echo", "safe_cell", "safe_lines"]


def echo(text: Optional[str] = None, err: bool = False) -> None:
    """click.echo of text that may hold trace text."""
    click.echo(None if text is None else safe_lines(text), err=err)
