"""Run a command as a child process and measure its wall time, CPU time and peak memory.

Why os.wait4 rather than resource.getrusage(RUSAGE_CHILDREN): RUSAGE_CHILDREN accumulates over
every child this process has ever waited for, and its ru_maxrss is the maximum over all of them,
so a second, smaller measurement in the same process would report the first one's peak. wait4
returns the rusage of exactly the child it reaps (including that child's own waited-for
descendants: their CPU time adds up, and ru_maxrss is the largest single process among them, not
the sum; a loader that forks a pool shows its biggest worker). /usr/bin/time -v would report the
same numbers but is not installed everywhere.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any


def _last_json_line(text: str) -> dict[str, Any] | None:
    """The last line of the child's stdout that parses as a JSON object."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _tail(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def run_measured(
    cmd: Sequence[str],
    *,
    timeout_s: float | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """Run `cmd` (a list, no shell) and return

    {"wall_s", "cpu_s", "user_s", "sys_s", "peak_rss_mb", "returncode", "timed_out",
     "result": <last JSON object the command printed, or None>, "stdout", "stderr"}

    wall_s covers the whole process (interpreter start and imports included); commands that
    time a phase themselves should report it in their JSON line. With check=True a non-zero exit
    or a timeout raises RuntimeError carrying the tail of stderr.
    """
    cmd = [str(c) for c in cmd]
    # Output goes to files, not pipes, so a chatty child can never block on a full pipe while we
    # sit in wait4.
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        t0 = time.perf_counter()
        # Own session: on timeout the whole process group (pool workers too) can be killed.
        proc = subprocess.Popen(
            cmd, stdout=out_f, stderr=err_f, env=env, cwd=cwd, start_new_session=True
        )
        timed_out = threading.Event()
        timer = None
        if timeout_s is not None:

            def kill() -> None:
                timed_out.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(timeout_s, kill)
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen.wait
        out_f.seek(0)
        err_f.seek(0)
        stdout = out_f.read().decode("utf-8", "replace")
        stderr = err_f.read().decode("utf-8", "replace")

    measured = {
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "user_s": round(usage.ru_utime, 3),
        "sys_s": round(usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        "returncode": proc.returncode,
        "timed_out": timed_out.is_set(),
        "result": _last_json_line(stdout),
        "stdout": _tail(stdout),
        "stderr": _tail(stderr),
    }
    if check and (measured["timed_out"] or proc.returncode != 0):
        why = (
            f"timed out after {timeout_s} s"
            if measured["timed_out"]
            else f"exit code {proc.returncode}"
        )
        raise RuntimeError(f"{' '.join(cmd)}: {why}\n{measured['stderr']}")
    return measured


if __name__ == "__main__":
    import sys

    print(json.dumps(run_measured(sys.argv[1:], check=False)))


def timed(fn: Any, runs: int) -> float:
    """Median wall seconds of `runs` calls of fn()."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
