"""plotly.js for the report: the bundle shipped inside the plotly Python package, read as
text (plotly itself is not imported), or a CDN script tag for a small file."""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache

CDN = "https://cdn.plot.ly/plotly-{version}.min.js"


@lru_cache(maxsize=1)
def bundle_path() -> str:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the HTML report needs plotly's JavaScript bundle: "
            "pip install 'hta_fast[plot]' (or plotly)"
        )
    path = os.path.join(list(spec.submodule_search_locations)[0], "package_data", "plotly.min.js")
    if not os.path.isfile(path):
        raise RuntimeError(f"plotly is installed but {path} is missing; reinstall plotly")
    return path


def bundle() -> str:
    with open(bundle_path(), encoding="utf-8") as fh:
        text = fh.read()
    # The bundle is inlined in a <script>: a literal "</script" inside would end it early.
    return text.replace("</script", "<\\/script")


def version() -> str:
    with open(bundle_path(), encoding="utf-8") as fh:
        m = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", fh.read(400))
    if not m:
        raise RuntimeError(f"cannot read the plotly.js version from {bundle_path()}")
    return m.group(1)


def cdn_url() -> str:
    return CDN.format(version=version())
