"""What this installation's compiled core was built with: the gzip decoder, whether zstd is
in, and simdjson (its release and the kernel this CPU runs). The first thing to compare when
loads are slower on one machine than on another, or a .zst trace does not open."""

from __future__ import annotations

from typing import TypedDict, cast

from . import _core


class BuildInfo(TypedDict):
    version: str  # the core's version (hta_fast.__version__)
    gzip: str  # "isal" (ISA-L's igzip, several times faster) or "zlib"
    zstd: bool  # False: .zst traces cannot be read by this build
    simdjson_version: str
    simdjson_implementation: str  # e.g. "icelake", "haswell", "arm64", "fallback"


def build_info() -> BuildInfo:
    """What the compiled core was built with, as a dict:

    - version: the core's version
    - gzip: "isal" (ISA-L's igzip, several times faster) or "zlib"
    - zstd: whether .zst traces can be read
    - simdjson_version: the simdjson release the core was built with
    - simdjson_implementation: the simdjson kernel this CPU runs ("fallback": none of the
      vectorised ones suits this CPU, and loads take about twice as long; "unsupported":
      SIMDJSON_FORCE_IMPLEMENTATION names one this CPU cannot run, and loads fail)

    A source build takes ISA-L and zstd when the system has them (README, "Install")."""
    return cast(BuildInfo, dict(_core.build_info()))
