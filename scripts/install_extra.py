"""Installs the requirements of one of pyproject.toml's extras into the running Python, without
the project itself (installing the project would rebuild it).

    python scripts/install_extra.py wheel
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11: scikit-build-core, a build requirement, brings tomli
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def extra_requirements(extra: str) -> list[str]:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    if extra not in extras:
        raise SystemExit(
            f"pyproject.toml has no extra {extra!r}; its extras are: {', '.join(sorted(extras))}"
        )
    return list(extras[extra])


def main() -> int:
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} EXTRA")
    requirements = extra_requirements(sys.argv[1])
    return subprocess.call([sys.executable, "-m", "pip", "install", "-q", *requirements])


if __name__ == "__main__":
    sys.exit(main())
