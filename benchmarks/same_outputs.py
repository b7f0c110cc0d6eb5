#!/usr/bin/env python3
"""Two builds of hta_fast answering the same questions on the same traces: are the answers
byte-equal? What a change that should move no figure (a refactor) is checked with.

    python benchmarks/same_outputs.py BASE_PYTHON NEW_PYTHON [--traces PATH ...] [--keep DIR]

Each python is an environment with one build installed (a worktree of the commit before
the change, say). For each trace set (default: every folder of ../shared/traces/modern,
trace_diff/control and param_dlrm_8rank), both builds run `doctor --json`,
`critical-path --format json`, `whatif --scale COMM=0.5 --format json` and `report --cdn`;
stdout and the exit status must be equal, and the report pages equal once their creation
time and load and write seconds are blanked. Prints one line per trace and command, and the
differing ones; exits 1 when any differs. --keep DIR leaves the outputs there.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
DEFAULT = [
    *sorted(p for p in (SHARED / "modern").iterdir() if p.is_dir()),
    SHARED / "hta" / "trace_diff" / "control" / "control.json.gz",
    SHARED / "param_dlrm_8rank",
]
COMMANDS = {
    "doctor": ["doctor", "--json"],
    "critical-path": ["critical-path", "--format", "json"],
    "whatif": ["whatif", "--scale", "COMM=0.5", "--format", "json"],
}
# What a report page holds that changes from run to run.
VOLATILE = re.compile(
    rb"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?[^\"<]*|(loaded|written) in [0-9.]+ s"
)


def run(python: str, args: list[str]) -> tuple[int, bytes]:
    p = subprocess.run([python, "-m", "hta_fast", *args], capture_output=True)
    return p.returncode, p.stdout


def outputs(python: str, trace: Path, out: Path) -> dict[str, bytes]:
    got = {}
    for name, args in COMMANDS.items():
        rc, stdout = run(python, [*args, str(trace)])
        got[name] = stdout + f"\nexit {rc}\n".encode()
    page = out / f"{trace.name}.html"
    rc, _ = run(python, ["report", str(trace), "--cdn", "-o", str(page)])
    body = page.read_bytes() if page.exists() else b""
    got["report"] = VOLATILE.sub(b"", body) + f"\nexit {rc}\n".encode()
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", help="python of the base build")
    ap.add_argument("new", help="python of the new build")
    ap.add_argument("--traces", type=Path, nargs="+", default=DEFAULT)
    ap.add_argument("--keep", type=Path, help="leave the outputs in this folder")
    a = ap.parse_args()
    root = a.keep or Path(tempfile.mkdtemp(prefix="same-outputs-"))
    differ = []
    for trace in a.traces:
        sides = {}
        for side, python in (("base", a.base), ("new", a.new)):
            out = root / side
            out.mkdir(parents=True, exist_ok=True)
            sides[side] = outputs(python, trace, out)
        for name in sides["base"]:
            same = sides["base"][name] == sides["new"][name]
            print(f"{trace.name:28} {name:14} {'same' if same else 'DIFFERS'}")
            if not same:
                differ.append(f"{trace.name} {name}")
            if a.keep:
                for side in sides:
                    (root / side / f"{trace.name}.{name}.out").write_bytes(sides[side][name])
    print(f"{len(differ)} differ" + (": " + ", ".join(differ) if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
