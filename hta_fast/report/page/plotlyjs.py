"""plotly.js for the report: the bundle shipped inside the plotly Python package, read as
text (plotly itself is not imported), or a CDN script tag for a small file, which needs no
plotly installed."""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from typing import Optional

CDN = "https://cdn.plot.ly/plotly-{version}.min.js"
# The plotly.js release a CDN report loads where plotly is not installed: the one the report
# was last tested with (the bundle of plotly 7.1.0). Where plotly is installed its bundle's
# own version is used, so a CDN report draws as the inlined one would. (Not the Python
# package's version from importlib.metadata: plotly 7.1.0 ships plotly.js 4.1.1, and the CDN
# names files by the latter.)
PLOTLY_JS_VERSION = "4.1.1"


@lru_cache(maxsize=1)
def installed_bundle() -> Optional[str]:
    """The path of the installed plotly package's plotly.min.js, or None without plotly (its
    package is found, never imported)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "package_data", "plotly.min.js")


def bundle_path() -> str:
    path = installed_bundle()
    if path is None:
        raise RuntimeError(
            "the HTML report needs plotly's JavaScript bundle: "
            "pip install 'hta_fast[plot]' (or plotly), or write it with --cdn (cdn=True)"
        )
    if not os.path.isfile(path):
        raise RuntimeError(f"plotly is installed but {path} is missing; reinstall plotly")
    return path


def bundle() -> str:
    with open(bundle_path(), encoding="utf-8") as fh:
        text = fh.read()
    # The bundle is inlined in a <script>: a literal "</script" inside would end it early.
    return text.replace("</script", "<\\/script")


def version() -> str:
    """The plotly.js version of the installed bundle; PLOTLY_JS_VERSION without plotly."""
    if installed_bundle() is None:
        return PLOTLY_JS_VERSION
    with open(bundle_path(), encoding="utf-8") as fh:
        m = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", fh.read(400))
    if not m:
        raise RuntimeError(f"cannot read the plotly.js version from {bundle_path()}")
    return m.group(1)


def cdn_url() -> str:
    return CDN.format(version=version())
