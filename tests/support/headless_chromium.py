"""Opening an HTML file in headless Chromium: what the page's scripts wrote into the DOM,
what went to the console, and a screenshot. Uses only Chromium's command-line flags."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

BINARIES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--enable-logging=stderr",
    "--v=0",
    # Virtual time runs the page's timers and promises to completion, then exits.
    "--virtual-time-budget=30000",
]
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]\s*(.*)")


def binary() -> Optional[str]:
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(
    args: list[str], page: Path, width: int, height: int, fragment: str = ""
) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="hta_fast_chromium_") as profile:
        return subprocess.run(
            [
                binary(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                *args,
                page.resolve().as_uri() + fragment,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )


def console_messages(stderr: str) -> list[str]:
    return [m.group(1) for line in stderr.splitlines() if (m := CONSOLE.search(line))]


def dump_dom(
    page: Path, width: int = 1400, height: int = 1000, fragment: str = ""
) -> tuple[str, list[str]]:
    """(the DOM after the scripts ran, console messages); `fragment` ("#selftest") is added
    to the page's address."""
    res = _run(["--dump-dom"], page, width, height, fragment)
    return res.stdout, console_messages(res.stderr)


def element_data(dom: str, element_id: str) -> dict[str, str]:
    """The data-* attributes of the element with this id, unescaped."""
    m = re.search(rf'<[a-z]+ id="{re.escape(element_id)}"([^>]*)>', dom)
    if not m:
        return {}
    return {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1))}


def screenshot(page: Path, out: Path, width: int, height: int) -> list[str]:
    """Writes a PNG of the page's top width x height pixels; returns console messages."""
    res = _run([f"--screenshot={out}"], page, width, height)
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot: {res.stderr[-2000:]}")
    return console_messages(res.stderr)


def status(page: Path) -> tuple[dict, list[str]]:
    """The report's #report-status data (figures, rendered, errors, rects, height)."""
    dom, console = dump_dom(page)
    data = element_data(dom, "report-status")
    for key in ("errors", "rects"):
        if key in data:
            data[key] = json.loads(data[key])
    return data, console
