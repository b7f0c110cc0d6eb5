"""The release wheel works on its own: `make wheel` builds it and repairs it into a manylinux
wheel, which installs into a fresh virtual environment outside the source tree, links no native
library but its own copies and the few manylinux takes from the system, and runs the command
line tool there (the HTML report with the `plot` extra, which brings plotly).

One wheel and one environment serve every test here (module-scoped fixtures). The wheel's
build folder (build/wheel-<wheel tag>) persists, so after the first build only what changed
is recompiled. Installing the wheel fetches its Python dependencies with pip (its cache makes
later runs quick)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # builds a wheel and installs it with its dependencies

ROOT = REPO
TRACE = "hta/trace_diff/control/control.json.gz"

# The libraries a manylinux wheel may take from the system (PEP 600 and auditwheel's policies:
# glibc's own, the C++ runtime, and the dynamic loader); anything else must come with the wheel.
SYSTEM_LIBS = {
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libutil.so.1",
    "libresolv.so.2",
    "libnsl.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "linux-vdso.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}


def why_no_build() -> str | None:
    """Why this machine cannot build the wheel at all, or None."""
    if not sys.platform.startswith("linux"):
        return "manylinux wheels are built on Linux (elsewhere: cibuildwheel)"
    if not shutil.which("make"):
        return "make is not installed"
    compiler = os.environ.get("CXX") or "c++"
    if not (shutil.which(compiler) or shutil.which("g++") or shutil.which("clang++")):
        return f"no C++ compiler ({compiler}, g++ or clang++) to build the core with"
    if not shutil.which("ldd"):
        return "ldd is not installed"
    return None


def tool(name: str) -> str:
    """A console script of the environment that runs the tests (`make wheel` installs the
    wheel extra's tools there)."""
    path = Path(sys.executable).parent / name
    assert path.exists(), f"{path} missing: `make wheel` installs pyproject.toml's wheel extra"
    return str(path)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    reason = why_no_build()
    if reason:
        pytest.skip(f"cannot build the wheel here: {reason}")
    out = tmp_path_factory.mktemp("dist")
    # --no-print-directory: under `make test` this make is a sub-make, which would otherwise
    # print "make[1]: Leaving directory ..." after the wheel's path
    built = subprocess.run(
        ["make", "--no-print-directory", "wheel", f"WHEEL_DIR={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"make wheel failed:\n{built.stdout}\n{built.stderr}"
    path = Path(next(x for x in reversed(built.stdout.split()) if x.endswith(".whl")))
    assert path.parent == out.resolve() and path.suffix == ".whl", built.stdout
    return path


@pytest.fixture(scope="module")
def env(wheel, tmp_path_factory) -> dict[str, Path]:
    """A fresh virtual environment, outside the source tree, with the wheel installed."""
    home = tmp_path_factory.mktemp("installed")
    assert ROOT not in home.parents, "the environment must not sit in the source tree"
    venv.create(home / "venv", with_pip=True)
    python = home / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-compile", "--no-input", str(wheel)]
    installed = subprocess.run(pip, cwd=home, env=clean_env(), capture_output=True, text=True)
    assert installed.returncode == 0, f"pip install of {wheel.name}:\n{installed.stderr}"
    return {"home": home, "python": python, "bin": python.parent}


def clean_env() -> dict[str, str]:
    """The environment variables of a user's shell: nothing that points Python at this tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run_in(env: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    """Runs a program of the installed environment, from its folder (not the source tree)."""
    cmd = [str(env["bin"] / args[0]), *args[1:]]
    return subprocess.run(cmd, cwd=env["home"], env=clean_env(), capture_output=True, text=True)


def test_wheel_is_manylinux(wheel):
    shown = subprocess.run([tool("auditwheel"), "show", str(wheel)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    found = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
    assert found, text
    tag = found.group(1)
    assert tag.startswith("manylinux_"), text
    assert wheel.name.endswith(f"-{tag}.whl"), (wheel.name, tag)


def test_core_links_only_its_own_copies_and_system_libraries(env):
    site = Path(
        run_in(
            env, "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        ).stdout.strip()
    )
    cores = list((site / "hta_fast").glob("_core*.so"))
    assert len(cores) == 1, cores
    ldd = subprocess.run(["ldd", str(cores[0])], capture_output=True, text=True)
    assert ldd.returncode == 0, ldd.stderr
    bundled = (site / "hta_fast.libs").resolve()
    foreign = []
    for line in ldd.stdout.splitlines():
        name, _, where = line.strip().partition(" => ")
        name = name.split()[0]
        assert "not found" not in where, f"{name} does not resolve:\n{ldd.stdout}"
        path = Path(where.split(" (")[0]) if where.startswith("/") else None
        if name in SYSTEM_LIBS or Path(name).name in SYSTEM_LIBS:
            continue
        if path is None or bundled not in path.resolve().parents:
            foreign.append(line.strip())
    assert not foreign, "libraries from outside the wheel:\n" + "\n".join(foreign)


def test_cli_runs_from_the_installed_wheel(env, traces_dir):
    trace = str(traces_dir / TRACE)
    info = run_in(env, "hta-fast", "info", trace)
    assert info.returncode == 0, info.stderr
    assert "1 rank(s)" in info.stdout, info.stdout
    doctor = run_in(env, "hta-fast", "doctor", trace)
    # 0: healthy, 1: a finding above its threshold; both mean the diagnosis ran
    assert doctor.returncode in (0, 1), doctor.stdout + doctor.stderr
    assert doctor.stdout.strip(), doctor.stderr


def test_report_runs_with_the_plot_extra(env, wheel, traces_dir):
    # The report embeds plotly's JavaScript, which the `plot` extra brings.
    with_plot = run_in(
        env, "python", "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[plot]"
    )
    assert with_plot.returncode == 0, with_plot.stderr
    report = env["home"] / "r.html"
    made = run_in(env, "hta-fast", "report", str(traces_dir / TRACE), "-o", str(report))
    assert made.returncode == 0, made.stderr
    assert report.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_demo_runs_from_the_installed_wheel(env):
    # No ../shared beside an installed package: the demo builds from the base it ships.
    out = env["home"] / "demo"
    made = run_in(env, "hta-fast", "-q", "demo", "-o", str(out), "--size-mb", "1", "--cdn")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "control.json.gz is not here" not in made.stdout + made.stderr
    assert any(p.suffix == ".html" for p in out.rglob("*")), list(out.rglob("*"))


def test_package_imports_from_the_environment_not_the_source_tree(env, wheel):
    probe = (
        "import json, sys, hta_fast; "
        "print(json.dumps({'file': hta_fast.__file__, 'path': sys.path, "
        "'build': hta_fast.build_info()}))"
    )
    out = run_in(env, "python", "-c", probe)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    where = Path(seen["file"]).resolve()
    assert env["home"].resolve() in where.parents, where
    assert not any(Path(p).resolve() == ROOT for p in seen["path"] if p), seen["path"]
    version = wheel.name.split("-")[1]
    assert seen["build"]["version"] == version, seen["build"]
