"""Fit a topology's link figures to measured collective times (numpy only).

Each figure the measurements exercise is multiplied by exp(theta); theta is found by
Levenberg-Marquardt on the log of predicted / measured time (relative error, symmetric in
over and under), with Huber weights so that one stray row (a warm-up, a straggler) does not
move the fit, and a weak pull of each theta toward 0 (the file's figure) so that a figure
the rows barely touch stays where the vendor put it (not the call overhead, which no vendor
states).

Which figures a set of measurements exercises, judged under the file's figures: a link's
bandwidth (intra-node, NVLS efficiency, network) where some row spends at least half its
predicted time moving bytes with that link as the bottleneck; the intra-node step latency
and the call overhead where some one-node row is mostly latency; the network latency where
some multi-node row is. The others keep the file's figures.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .collective_model import KINDS, predict_collectives
from .topology import Topology

MEASUREMENT_KEYS = ("kind", "size_bytes", "ranks", "nodes", "time_s")
HUBER = 0.1  # log-error beyond which a row's weight falls off (~10 %)
PRIOR = 0.05  # the pull of each log-multiplier toward the file's figure


@dataclasses.dataclass(frozen=True)
class _Param:
    name: str
    get: Callable[[Topology], float]
    put: Callable[[Topology, float], Topology]
    prior: float  # the pull toward the file's figure


def _field(
    name: str, floor: float = 0.0, cap: float = float("inf"), prior: float = PRIOR
) -> _Param:
    return _Param(
        name,
        lambda t: max(float(getattr(t, name)), floor),
        lambda t, v: dataclasses.replace(t, **{name: min(v, cap)}),  # type: ignore[arg-type]
        prior,
    )


def _check(measurements: Iterable[Mapping[str, Any]]) -> list[dict]:
    out = []
    for i, m in enumerate(measurements):
        missing = [k for k in MEASUREMENT_KEYS if k not in m]
        if missing:
            raise ValueError(
                f"measurement {i} lacks {missing}; each needs {list(MEASUREMENT_KEYS)}"
            )
        if m["kind"] not in KINDS:
            raise ValueError(f"measurement {i}: unknown kind {m['kind']!r}")
        if not (
            float(m["time_s"]) > 0
            and float(m["size_bytes"]) >= 0
            and int(m["ranks"]) >= int(m["nodes"]) >= 1
        ):
            raise ValueError(
                f"measurement {i}: time_s > 0, size_bytes >= 0, ranks >= nodes >= 1 needed"
            )
        out.append({k: m[k] for k in MEASUREMENT_KEYS})
    if not out:
        raise ValueError("calibrate needs at least one measurement")
    return out


def _groups(rows: list[dict]) -> dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]]:
    """(kind, ranks, nodes) -> (sizes, times in us)."""
    keys = sorted({(r["kind"], int(r["ranks"]), int(r["nodes"])) for r in rows})
    out = {}
    for key in keys:
        mine = [r for r in rows if (r["kind"], int(r["ranks"]), int(r["nodes"])) == key]
        out[key] = (
            np.array([float(r["size_bytes"]) for r in mine]),
            np.array([float(r["time_s"]) * 1e6 for r in mine]),
        )
    return out


def _shaped(topology: Topology, ranks: int, nodes: int) -> Topology:
    """The topology as one measurement ran: its ranks spread evenly over its nodes."""
    return dataclasses.replace(topology, gpus_per_node=math.ceil(ranks / nodes), nodes=nodes)


def _tells_latency(sizes: np.ndarray, times: np.ndarray) -> bool:
    """Whether rows of one shape tell latency from bandwidth: two sizes a factor of 4 or
    more apart whose times grow by less than their sizes (the smaller one's time is not
    all bytes moving)."""
    small, large = np.argmin(sizes), np.argmax(sizes)
    if not sizes[small] > 0 or sizes[large] < 4 * sizes[small]:
        return False
    return bool(times[large] / times[small] < 0.8 * sizes[large] / sizes[small])


def _exercised(topology: Topology, groups: Mapping) -> list[_Param]:
    """The figures some row spends at least half its predicted time on (under the file's
    figures): a link's bandwidth where it is the bottleneck, a latency where it dominates.
    A figure no row leans on is left as the file has it."""
    bw: set[str] = set()
    lat: set[str] = set()
    for (kind, ranks, nodes), (sizes, times) in groups.items():
        preds = predict_collectives(kind, sizes, _shaped(topology, ranks, nodes), ranks=ranks)
        for p in preds:
            if p.time_us <= 0:
                continue
            if p.latency_us >= 0.5 * p.time_us:
                lat.add("network" if nodes > 1 else "intra_node")
            elif p.bottleneck != "none":
                bw.add("nvls" if p.algorithm.startswith("nvls") else p.bottleneck)
        if _tells_latency(sizes, times):
            lat.add("network" if nodes > 1 else "intra_node")
    params = []
    if "intra_node" in bw:
        params.append(_field("intra_node_gbps"))
    if "nvls" in bw:
        params.append(_field("nvls_efficiency", cap=1.0))
    if "intra_node" in lat:
        params += [
            _field("intra_node_latency_us", floor=0.1),
            # no vendor states a framework's call overhead: nothing to pull it toward
            _field("call_overhead_us", floor=1.0, prior=0.0),
        ]
    if "network" in bw:
        params.append(_field("network_gbps_per_node"))
    if "network" in lat:
        params.append(_field("network_latency_us", floor=0.5))
    return params


def _apply(
    topology: Topology, params: list[_Param], start: np.ndarray, theta: np.ndarray
) -> Topology:
    t = topology
    for p, s, th in zip(params, start, theta):
        t = p.put(t, float(s * np.exp(th)))
    return t


def _residuals(topology: Topology, groups: Mapping) -> np.ndarray:
    out = []
    for (kind, ranks, nodes), (sizes, times) in groups.items():
        t = _shaped(topology, ranks, nodes)
        pred = np.array([p.time_us for p in predict_collectives(kind, sizes, t, ranks=ranks)])
        out.append(np.log(pred / times))
    return np.concatenate(out)


def calibrate(
    topology: Topology, measurements: Iterable[Mapping[str, Any]], *, iterations: int = 60
) -> Topology:
    """A new topology whose link figures fit the measurements (dicts with kind, size_bytes,
    ranks, nodes, time_s); its source says it was calibrated and on what. Each
    measurement's ranks are spread over its nodes evenly (ceil(ranks / nodes) per node);
    the result keeps the topology's gpus_per_node and nodes."""
    rows = _check(measurements)
    groups = _groups(rows)
    params = _exercised(topology, groups)
    if not params:
        raise ValueError("the measurements exercise no link (one rank each)")
    start = np.array([p.get(topology) for p in params])
    priors = np.array([p.prior for p in params])
    theta = np.zeros(len(params))

    def cost(th: np.ndarray) -> np.ndarray:
        r = _residuals(_apply(topology, params, start, th), groups)
        w = np.where(np.abs(r) <= HUBER, 1.0, np.sqrt(HUBER / np.maximum(np.abs(r), 1e-12)))
        return np.concatenate([r * w, priors * th])

    damping = 1e-2
    current = cost(theta)
    for _ in range(iterations):
        jac = np.empty((len(current), len(theta)))
        for j in range(len(theta)):
            step = np.zeros_like(theta)
            step[j] = 1e-4
            jac[:, j] = (cost(theta + step) - current) / 1e-4
        grad = jac.T @ current
        hess = jac.T @ jac
        moved = False
        while damping < 1e8:
            delta = np.linalg.solve(hess + damping * np.diag(np.diag(hess) + 1e-9), -grad)
            trial = cost(theta + delta)
            if trial @ trial < current @ current:
                theta, current = theta + delta, trial
                damping = max(damping / 3, 1e-6)
                moved = True
                break
            damping *= 4
        if not moved or np.max(np.abs(delta)) < 1e-6:
            break
    fitted = _apply(topology, params, start, theta)
    kinds = sorted({k for k, _, _ in groups})
    shapes = ", ".join(f"{k} {r} ranks/{n} nodes" for k, r, n in groups)
    rel = np.exp(np.abs(_residuals(fitted, groups))) - 1
    return dataclasses.replace(
        fitted,
        source=(
            f"calibrated on {len(rows)} measurements ({', '.join(kinds)}: {shapes}); "
            f"fitted {', '.join(p.name for p in params)}; median fit error "
            f"{100 * float(np.median(rel)):.1f} %; from: {topology.source}"
        ),
    )
