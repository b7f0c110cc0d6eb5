"""Why a row runs faster than its roofline allows, where it does: `uncertain` and its reason.

A cost model's FLOPs and bytes are the least the call must do; a call measured faster than
the device's peaks allow for them is either a model that overcounts (an assumption where
the trace records too little: the model said so, OpCall.assume) or data that never reached
device memory: the last-level cache in front of it (Device.cache_mb: 40 MB of L2 on an A100,
256 MB of Infinity Cache on an MI300X) serves repeated reads and absorbs writes, so a
memory-bound call's memory traffic can be its bytes less the cache's size. A row above its
roofline that neither explains is marked too, saying so: it is not hidden and not trusted.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .devices import Device

__all__ = ["uncertain_rows"]

_MB = 1e6


def uncertain_rows(
    pct_of_roofline: np.ndarray,
    bound: Sequence[Optional[str]],
    bytes_per_call: np.ndarray,
    time_per_call_ns: np.ndarray,
    assumed: Sequence[Optional[str]],
    device: Optional[Device],
) -> tuple[np.ndarray, list[Optional[str]]]:
    """Per row: (uncertain, why). A row is uncertain when its model assumed something
    (`assumed`: the model's sentences) and, whatever its model, when it runs above 100 % of
    its roofline: the reason then says whether the device's cache can explain it."""
    n = len(pct_of_roofline)
    uncertain = np.zeros(n, bool)
    why: list[Optional[str]] = [None] * n
    cache = (device.cache_mb or 0.0) * _MB if device is not None else 0.0
    bw = device.memory_bytes_per_s if device is not None else np.nan
    for i in range(n):
        said = assumed[i]
        parts = [said] if said else []
        pct = pct_of_roofline[i]
        if pct == pct and pct > 100.0:
            parts.append(_above(pct, bound[i], bytes_per_call[i], time_per_call_ns[i], cache, bw))
        if parts:
            uncertain[i] = True
            why[i] = "; ".join(parts)
    return uncertain, why


def _above(
    pct: float, bound: Optional[str], nbytes: float, ns: float, cache: float, bw: float
) -> str:
    head = f"runs at {pct:.0f} % of its roofline"
    if bound == "memory" and cache > 0 and ns > 0:
        least = max(nbytes - cache, 0.0) / bw * 1e9
        if least <= ns:
            return (
                f"{head}: {nbytes / _MB:,.1f} MB a call, of which the device's "
                f"{cache / _MB:g} MB last-level cache can hold {min(cache, nbytes) / _MB:,.1f} MB "
                "that then moves no memory traffic"
            )
    return (
        f"{head}, more than the device's peaks allow for the work its model counts: the model "
        "overcounts this call, or the device's figures are too low"
    )
