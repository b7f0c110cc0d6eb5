"""The what-if edit "the job at another scale": N ranks of data parallelism (the same batch
per rank) and/or another machine (a topology file, hta_fast.model.comm.topology). Compute
is unchanged; each collective is re-costed by the machine-aware collective model
(hta_fast.model.comm.collective_model), anchored on its recorded time:

    predicted = recorded x model(N ranks, target) / model(recorded ranks, recorded machine)
                + the slowest-rank wait's change

recorded: the collective's time moving data (its shortest duration over the ranks,
hta_fast.analysis.collectives; on a one-rank trace its whole duration, waits included).
The ratio keeps the recorded time as the anchor: at the recorded scale and machine it is
1, so the replay is the recorded one; the model only says how the time moves.

The recorded machine (hta_fast.model.comm.recorded_topology): the shipped topology the
trace's GPU calls for, with the trace's GPUs per node and world size. Without a target
topology its figures are calibrated on the trace's own sized collectives
(hta_fast.model.comm.trace_machine), and the same calibrated machine is both
ends of the ratio: the fit says how this machine's time grows with ranks and nodes. Where
no recorded collective crossed nodes, the network keeps the file's figure times the share
of theirs the intra-node links reached (their fitted / file bandwidth): a node measured at
a tenth of its NVLink figure is not given its network at the vendor's. With a
target topology both ends are vendor figures (the recorded file uncalibrated, the target
as given), like against like: a calibration of one machine says nothing of another's
shortfall.

Sizes at N (nccl-tests' sizes, hta_fast.costs.collectives): an all-reduce's buffer stays
(data parallel, the same per-rank batch: the same gradients); an all-gather's gathered
output and a reduce-scatter's input stay, so each rank's shard shrinks by recorded / N
(FSDP / ZeRO: the parameters are sharded N ways); an all-to-all's per-rank buffer stays;
a broadcast's buffer stays. Collectives over the whole job scale to N ranks; those over a
smaller group (tensor or pipeline groups) and send/recv keep their group. A collective
without a recorded size gets the size at which the recorded machine's model takes its
recorded time.

The slowest-rank wait: a collective ends when its last rank arrives. Each collective's
arrival spread is measured as the standard deviation s of its ranks' start times; the
slowest of n ranks drawn from a normal spread arrives e(n) s after the mean (e: the
expected maximum of n standard normals, e(2) = 0.56, e(8) = 1.42, e(16) = 1.77), so at N
ranks each rank's end of it moves by s (e(N) - e(recorded)). With one rank recorded there
is no spread and nothing is added.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...._arrow import array_of, as_numpy
from ....frame.fields import NS
from ....trace import Trace
from ....traceset import TraceSet
from ...comm.collective_links import MatchedCollectives
from ...comm.collective_model import Prediction, predict_collectives
from ...comm.recorded_topology import recorded_machine
from ...comm.topology import Topology, load_topology
from ...comm.trace_machine import MODEL_KIND, calibrated_machine
from .declaration import EditDeclaration, Option

SHARDED = ("all_gather", "reduce_scatter")  # each rank holds 1/n of the size

SCHEMA = pa.schema(
    [
        pa.field("group", pa.string()),
        pa.field("index", pa.int64()),
        pa.field("collective", pa.string()),
        pa.field("bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("size_inferred", pa.bool_()),
        pa.field("rank_bytes_before", pa.float64(), metadata={"unit": "B"}),
        pa.field("rank_bytes_after", pa.float64(), metadata={"unit": "B"}),
        pa.field("ranks_before", pa.int64()),
        pa.field("ranks_after", pa.int64()),
        pa.field("nodes_before", pa.int64()),
        pa.field("nodes_after", pa.int64()),
        pa.field("algorithm_before", pa.string()),
        pa.field("algorithm_after", pa.string()),
        pa.field("model_before", pa.float64(), metadata=NS),
        pa.field("model_after", pa.float64(), metadata=NS),
        pa.field("ratio", pa.float64()),
        pa.field("recorded", pa.int64(), metadata=NS),
        pa.field("spread", pa.float64(), metadata=NS),
        pa.field("slowest_wait", pa.float64(), metadata=NS),
        pa.field("predicted", pa.float64(), metadata=NS),
    ]
)


@dataclasses.dataclass
class WorldSizeEdit:
    """factor: per matched collective, what its recorded time moving data is multiplied by
    (its wait's change included); table: the per-collective before / after (SCHEMA, the
    what-if's "world_size" table); notes; before / after: the two machines of the ratio."""

    factor: np.ndarray
    table: pa.Table
    notes: list[str]
    before: Topology
    after: Topology


@lru_cache(maxsize=None)
def expected_max(n: int) -> float:
    """E[max of n independent standard normal draws] (0 for n <= 1), by quadrature."""
    if n <= 1:
        return 0.0
    x = np.linspace(-12.0, 12.0, 48001)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    cdf = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    y = x * n * pdf * cdf ** (n - 1)
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)


def check_world(world_size: Optional[int], topology: Union[str, Topology, None]) -> None:
    """world_size: a whole number >= 1; topology: a Topology or a file / shipped name."""
    if world_size is not None and (
        isinstance(world_size, (bool, np.bool_))
        or not isinstance(world_size, (int, np.integer))
        or world_size < 1
    ):
        raise ValueError(f"world size must be a whole number >= 1, got {world_size!r}")
    if topology is not None and not isinstance(topology, (str, Topology)):
        raise ValueError(f"a topology file, a shipped name or a Topology, got {topology!r}")


def as_topology(topology: Union[str, Topology]) -> Topology:
    """A Topology, loading a file or shipped name (ValueError when there is none)."""
    if isinstance(topology, Topology):
        return topology
    try:
        return load_topology(topology)
    except FileNotFoundError as e:
        raise ValueError(str(e)) from None


def _spread(matched: MatchedCollectives, n: int) -> np.ndarray:
    """Per matched collective, the standard deviation (ns, ddof 1) of its ranks' start
    times; 0 where fewer than two ranks ran it."""
    per = matched.result["per_rank"]
    gpu = np.asarray(per["side"].to_pylist(), object) == "gpu"
    match = as_numpy(per["match"])[gpu].astype(np.int64)
    ts = as_numpy(per["ts"])[gpu].astype(np.int64)
    if not len(match):
        return np.zeros(n)
    count = np.bincount(match, minlength=n).astype(np.float64)
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, match, ts)
    off = (ts - first[match]).astype(np.float64)  # epoch ns are not exact as floats
    mean = np.bincount(match, off, minlength=n) / np.maximum(count, 1)
    sq = np.bincount(match, (off - mean[match]) ** 2, minlength=n)
    return np.where(count > 1, np.sqrt(sq / np.maximum(count - 1, 1)), 0.0)


def _infer_sizes(kind: str, times_us: np.ndarray, topology: Topology, ranks: int) -> np.ndarray:
    """The sizes at which the model takes these times (bisection on log size; 0 where the
    time is under the model's latency)."""
    lo, hi = np.zeros(len(times_us)), np.full(len(times_us), 40.0)  # log2 bytes
    for _ in range(50):
        mid = (lo + hi) / 2
        at = (2**mid).tolist()
        t = np.array([p.time_us for p in predict_collectives(kind, at, topology, ranks=ranks)])
        lo, hi = np.where(t < times_us, mid, lo), np.where(t < times_us, hi, mid)
    at0 = predict_collectives(kind, [0.0], topology, ranks=ranks)[0].time_us
    return np.where(times_us <= at0, 0.0, 2 ** ((lo + hi) / 2))


def _predict(
    kinds: np.ndarray, sizes: np.ndarray, ranks: np.ndarray, topology: Topology, rows: np.ndarray
) -> list[Optional[Prediction]]:
    """The model's prediction of each row in `rows` (grouped by kind and ranks)."""
    out: list[Optional[Prediction]] = [None] * len(kinds)
    keys = {(kinds[i], int(ranks[i])) for i in rows}
    for kind, n in sorted(keys):
        mine = rows[(kinds[rows] == kind) & (ranks[rows] == n)]
        at = sizes[mine].tolist()
        for i, p in zip(mine.tolist(), predict_collectives(kind, at, topology, ranks=n)):
            out[i] = p
    return out


def _calibrated(
    machine: Topology, matched: MatchedCollectives, group: np.ndarray, known: np.ndarray
) -> tuple[Topology, str]:
    """The recorded machine fitted to the trace's sized collectives (group: each one's
    group, the job's size where none was recorded), and a note."""
    table = matched.result.table
    sized = known & ~np.isnan(as_numpy(table["bytes"]).astype(np.float64)) & (group > 1)
    observed = pa.table(
        {
            "collective": array_of([MODEL_KIND[k] for k in _kinds(matched)[sized]], pa.string()),
            "group_size": array_of(group[sized], pa.int64()),
            "bytes": table["bytes"].filter(array_of(sized)),
            "data_time": table["data_time"].filter(array_of(sized)),
        }
    )
    return calibrated_machine(machine, observed)


def _kinds(matched: MatchedCollectives) -> np.ndarray:
    table = matched.result.table
    if not table.num_rows:
        return np.zeros(0, object)
    return np.asarray(table["collective"].to_pylist(), object)


def world_size_factors(
    traces: Union[Trace, TraceSet],
    matched: MatchedCollectives,
    *,
    world_size: Optional[int] = None,
    topology: Union[str, Topology, None] = None,
    recorded_topology: Union[str, Topology, None] = None,
) -> WorldSizeEdit:
    """Per matched collective, the factor on its recorded time moving data at `world_size`
    ranks (default: the recorded world size) on `topology` (default: the recorded machine,
    calibrated), with the before / after table and notes (the module doc).
    recorded_topology: the recorded machine's links, instead of the one its GPU calls for."""
    check_world(world_size, topology)
    table = matched.result.table
    m = table.num_rows
    kinds = _kinds(matched)
    recorded_group = as_numpy(table["group_size"]).astype(np.int64) if m else np.zeros(0, int)
    rec = recorded_machine(
        traces,
        recorded_group.tolist(),
        None if recorded_topology is None else as_topology(recorded_topology),
    )
    w0 = rec.world_size
    n_new = w0 if world_size is None else int(world_size)
    model_kind = np.array([MODEL_KIND.get(k, "") for k in kinds], object)
    known = model_kind != ""
    # a group size of one where the job has more ranks: the size was not recorded (no
    # collective arguments); the collective is taken to span the job
    group = np.where(recorded_group > 1, recorded_group, w0)
    scaled = known & (group == w0) & (model_kind != "send_recv")
    group_after = np.where(scaled, n_new, group)
    notes = [rec.how]
    before, after = _machines(rec.topology, topology, matched, group, known, n_new, notes)
    data = matched.data_time.astype(np.float64)
    sizes, inferred = _sizes(table, model_kind, known, group, data, before)
    rows = np.flatnonzero(known)
    p0 = _predict(model_kind, sizes, group, before, rows)
    p1 = _predict(model_kind, sizes, group_after, after, rows)
    t0 = np.array([p.time_us * 1e3 if p else np.nan for p in p0])
    t1 = np.array([p.time_us * 1e3 if p else np.nan for p in p1])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(known & (t0 > 0), t1 / t0, 1.0)
    ratio = np.where(np.isfinite(ratio), ratio, 1.0)
    spread = _spread(matched, m)
    e0 = np.array([expected_max(int(g)) for g in group]) if m else np.zeros(0)
    e1 = np.array([expected_max(int(g)) for g in group_after]) if m else np.zeros(0)
    wait = np.where(scaled, spread * (e1 - e0), 0.0)
    predicted = np.maximum(data * ratio + wait, 0.0)
    factor = np.divide(predicted, data, out=np.ones(m), where=data > 0)
    shard = np.array([k in SHARDED for k in model_kind], bool)
    out = pa.table(
        {
            "group": table["group"] if m else array_of([], pa.string()),
            "index": table["index"] if m else array_of([], pa.int64()),
            "collective": table["collective"] if m else array_of([], pa.string()),
            "bytes": array_of(sizes, pa.float64(), mask=~known | np.isnan(sizes)),
            "size_inferred": array_of(inferred, pa.bool_()),
            "rank_bytes_before": array_of(
                np.where(shard, sizes / np.maximum(group, 1), sizes), pa.float64(), mask=~known
            ),
            "rank_bytes_after": array_of(
                np.where(shard, sizes / np.maximum(group_after, 1), sizes),
                pa.float64(),
                mask=~known,
            ),
            "ranks_before": array_of(group, pa.int64()),
            "ranks_after": array_of(group_after, pa.int64()),
            "nodes_before": array_of([p.nodes if p else None for p in p0], pa.int64()),
            "nodes_after": array_of([p.nodes if p else None for p in p1], pa.int64()),
            "algorithm_before": array_of(
                [f"{p.algorithm}/{p.protocol}" if p else None for p in p0], pa.string()
            ),
            "algorithm_after": array_of(
                [f"{p.algorithm}/{p.protocol}" if p else None for p in p1], pa.string()
            ),
            "model_before": array_of(t0, pa.float64(), mask=~known),
            "model_after": array_of(t1, pa.float64(), mask=~known),
            "ratio": array_of(ratio, pa.float64()),
            "recorded": array_of(matched.data_time, pa.int64()),
            "spread": array_of(spread, pa.float64()),
            "slowest_wait": array_of(wait, pa.float64()),
            "predicted": array_of(predicted, pa.float64()),
        }
    )
    out = out.cast(SCHEMA)
    notes += _notes(
        kinds, known, scaled, inferred, spread, group, group_after, w0, n_new, matched, data,
        predicted, wait,
    )  # fmt: skip
    return WorldSizeEdit(factor, out, notes, before, after)


def _machines(
    recorded: Topology,
    topology: Union[str, Topology, None],
    matched: MatchedCollectives,
    group: np.ndarray,
    known: np.ndarray,
    n_new: int,
    notes: list[str],
) -> tuple[Topology, Topology]:
    """The machines at both ends of the ratio, with a note saying which: the recorded one
    calibrated on the matched collectives, twice (topology None); else the recorded one
    uncalibrated and the target at n_new ranks."""
    if topology is None:
        before, how = _calibrated(recorded, matched, group, known)
        notes.append(f"the recorded machine's figures {how}; the same machine at {n_new} ranks")
        return before, before
    target = as_topology(topology)
    after = dataclasses.replace(target, nodes=math.ceil(n_new / target.gpus_per_node))
    notes.append(
        f"target: {after.name}, {n_new} ranks on {after.nodes} node(s) of "
        f"{after.gpus_per_node} GPUs; both ends of the ratio from vendor figures "
        f"(the recorded file uncalibrated, the target as given)"
    )
    return recorded, after


def _sizes(
    table: pa.Table,
    model_kind: np.ndarray,
    known: np.ndarray,
    group: np.ndarray,
    data: np.ndarray,
    before: Topology,
) -> tuple[np.ndarray, np.ndarray]:
    """Per matched collective, its size in bytes (NaN: not modelled) and whether it was
    inferred from its recorded time on the `before` machine (no size recorded)."""
    sizes = as_numpy(table["bytes"]).astype(np.float64) if table.num_rows else np.zeros(0)
    inferred = known & np.isnan(sizes)
    for kind, n in {(model_kind[i], int(group[i])) for i in np.flatnonzero(inferred)}:
        rows = inferred & (model_kind == kind) & (group == n)
        sizes[rows] = _infer_sizes(kind, data[rows] / 1e3, before, n)
    return sizes, inferred


def _notes(
    kinds: np.ndarray,
    known: np.ndarray,
    scaled: np.ndarray,
    inferred: np.ndarray,
    spread: np.ndarray,
    group: np.ndarray,
    group_after: np.ndarray,
    w0: int,
    n_new: int,
    matched: MatchedCollectives,
    data: np.ndarray,
    predicted: np.ndarray,
    wait: np.ndarray,
) -> list[str]:
    m = len(kinds)
    if not m:
        return ["no communication kernels: the world-size edit changes nothing"]
    notes = [
        f"{int(known.sum())} of {m} collectives re-costed for {n_new} ranks (recorded "
        f"{w0}): recorded time x model(after) / model(before), table world_size; "
        f"{int(data.sum()) / 1e6:.3f} ms of time moving data -> "
        f"{float(predicted.sum()) / 1e6:.3f} ms",
        "sizes at N (data parallel, the same batch per rank): all-reduce and broadcast "
        "buffers and each rank's all-to-all buffer stay; all-gather / reduce-scatter "
        "(FSDP / ZeRO) keep the full tensor, each rank's shard shrinking by recorded / N "
        "(rank_bytes_before / after); compute is unchanged",
    ]
    if (~known).any():
        other = sorted({str(k) for k in kinds[~known]})
        notes.append(
            f"{int((~known).sum())} collective(s) the model does not know "
            f"({', '.join(other)}) keep their time"
        )
    kept = known & ~scaled
    if kept.any() and n_new != w0:
        notes.append(
            f"{int(kept.sum())} collective(s) over a smaller group than the job (or "
            "send/recv) keep their group's size"
        )
    if inferred.any():
        notes.append(
            f"{int(inferred.sum())} collective(s) record no size: each takes the size at "
            "which the recorded machine's model takes its recorded time"
        )
    one_rank = matched.ranks <= 1
    if one_rank.all():
        notes.append(
            "one rank recorded: no arrival spread can be measured, so no slowest-rank wait "
            "is added; each collective's recorded time is its whole duration on this rank, "
            "its wait for the other ranks included, and scales with the model"
        )
    else:
        used = scaled & ~one_rank
        s = spread[used]
        e0 = expected_max(int(np.max(group[used]))) if used.any() else 0.0
        e1 = expected_max(int(np.max(group_after[used]))) if used.any() else 0.0
        if len(s):
            notes.append(
                f"slowest-rank wait: the arrival spread (std of each collective's ranks' "
                f"starts) median {np.median(s) / 1e3:.1f} us, p90 "
                f"{np.percentile(s, 90) / 1e3:.1f} us over {len(s)} collective(s); the "
                f"expected slowest of n normal draws e(n) x spread: e({w0}) = {e0:.3f}, "
                f"e({n_new}) = {e1:.3f} (factor {e1 / e0 if e0 else float('nan'):.3f}): "
                f"{float(wait.sum()) / 1e6:+.3f} ms over all collectives (column slowest_wait)"
            )
    return notes


EDIT = EditDeclaration(
    key="world_size",
    options=(
        Option(
            "--world-size",
            "world_size",
            "The job at N ranks of data parallelism (the same batch per rank): each "
            "collective re-costed by the collective model for N ranks, its slowest-rank wait "
            "grown; compute unchanged (table world_size).",
            type="count",
        ),
        Option(
            "--topology",
            "topology",
            "Run on another machine: a topology JSON file or a shipped name (hgx_h100, "
            "dgx_a100, ...; see `hta-fast comm-model`); default: the recorded machine.",
            metavar="FILE|NAME",
        ),
        Option(
            "--recorded-topology",
            "recorded_topology",
            "With --world-size / --topology: the recorded machine's topology, where the "
            "trace's GPU does not call for the right one.",
            metavar="FILE|NAME",
        ),
    ),
    keywords=("world_size", "topology", "recorded_topology"),
    build=lambda v: {k: v[k] for k in ("world_size", "topology", "recorded_topology")},
    doc="The job at another scale: N ranks of data parallelism on the recorded machine or "
    "another `topology`; each collective re-costed by the collective model for its new "
    "ranks, anchored on its recorded time, its slowest-rank wait grown; compute unchanged "
    "(table `world_size`).",
)
