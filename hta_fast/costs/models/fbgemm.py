"""FBGEMM's table-batched embedding (TBE) lookups and their backward.

A TBE lookup (`fbgemm::split_embedding_codegen_lookup_<optimizer>_function`,
`fbgemm::dense_embedding_codegen_lookup_function`) pools rows of T tables in one call. Its
recorded tensors give the work but one number: `indices` (every table's looked-up rows, one
list: rows = its elements), `offsets` (bag boundaries: bags = its length - 1 = T x B),
`D_offsets` (T + 1 entries), the weights (all tables flattened into one tensor, on the
device or in UVM; UVM rows are counted as device memory traffic). The output,
B x total_D (one pooled row of every table per sample), has the width total_D, a scalar
argument: profilers record it only in Concrete Inputs. Where it is missing it is taken from
the lookup's autograd node, `torch::autograd::CppNode<SplitLookupFunction_<optimizer>_Op>`,
which the backward pass records with the output's gradient, [B, total_D], as its input
(tbe_widths pairs the two, see there). With neither, the lookup has no model and says why.

Costs (the least traffic, as for aten's embedding_bag):
* lookup: indices, offsets (and per-sample weights) read, rows x D weights read (no more
  than the tables hold: a row looked up again is read from cache), B x total_D written,
  where D = total_D / T: exact when the tables share one width, their mean otherwise (the
  rows each table contributes are not recorded: the row is then `uncertain`). FLOPs: rows x D adds (2x
  with per-sample weights).
* backward (the autograd node, whose kernels compute the gradient and apply the optimizer
  in place): the gradient, indices and offsets read, each looked-up row of the table read
  and written, and the optimizer's state read and written (rowwise Adagrad: one value per
  row; Adagrad: D values; SGD and the dense table's backward: none). rows is the mean of
  the paired lookups' (calls of one node group differ in their indices; the node does not
  record them); repeated rows are counted each time (upper bound: unique rows are not
  recorded). FLOPs: rows x D.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import Any, Iterable, Optional, Union

from .. import dtypes
from ..cost import Cost, pattern_model, rank_extras
from ..op_call import NoModel, OpCall

LOOKUP = re.compile(
    r"^fbgemm::(?:split_embedding_codegen_lookup_(\w+?)"
    r"|(dense)_embedding_codegen_lookup)_function$"
)
BACKWARD = re.compile(r"^torch::autograd::CppNode<SplitLookupFunction_(\w+)_Op>$")
# optimizer state values read and written per looked-up row, in units of D ("D") or 1
STATE_PER_ROW: dict[str, Union[int, str]] = {
    "sgd": 0,
    "dense": 0,
    "rowwise_adagrad": 1,
    "rowwise_adagrad_with_counter": 1,
    "adagrad": "D",
}


def optimizer_of(name: str) -> Optional[str]:
    """The optimizer a TBE lookup or its autograd node is named for ("dense" for the
    dense-table lookup), or None for other operators."""
    m = LOOKUP.match(name)
    if m:
        return (m.group(1) or m.group(2)).lower()
    m = BACKWARD.match(name)
    return m.group(1).lower() if m else None


@dataclasses.dataclass(frozen=True)
class Lookup:
    """The recorded arguments of one TBE lookup call."""

    optimizer: str
    tables: int  # T
    bags: int  # T x B
    rows: int  # looked-up rows, all tables
    weights: int  # elements of the flattened tables (device + UVM)
    weight_size: int  # bytes per weight element
    precision: str
    read_bytes: int  # indices + offsets (+ per-sample weights)
    weighted: bool
    total_d: Optional[int]  # from Concrete Inputs, when recorded
    pooled: bool  # False when Concrete Inputs say pooling mode NONE

    @property
    def batch(self) -> int:
        return self.bags // self.tables


def parse_lookup(call: OpCall) -> Lookup:
    """Argument layouts: dense (dev_weights, weights_offsets, D_offsets, total_D, max_D,
    hash_size_cumsum, total_hash_size_bits, indices, offsets, pooling_mode,
    indice_weights, ...); split ([placeholder_autograd_tensor,] dev_weights, uvm_weights,
    lxu_cache_weights, weights_placements, weights_offsets, D_offsets, total_D, max_D,
    hash_size_cumsum, total_hash_size_bits, indices, offsets, pooling_mode, indice_weights,
    ...), found by D_offsets: the int tensor followed by the two scalars total_D, max_D."""
    opt = optimizer_of(call.name)
    if opt is None:
        raise NoModel("not a TBE lookup")
    if opt == "dense":
        d, weight_inputs = 2, [0]
    else:
        d = next(
            (
                k
                for k in (6, 5)
                if call.dtype(k) == "int"
                and call.dtype(k + 1) == "Scalar"
                and call.dtype(k + 2) == "Scalar"
            ),
            -1,
        )
        if d < 0:
            raise NoModel("TBE arguments in an unknown layout (no D_offsets before total_D, max_D)")
        weight_inputs = [d - 5, d - 4]
    t = call.numel(d) - 1
    if t < 1:
        raise NoModel(f"D_offsets of shape {call.shape(d)}: no tables")
    idx, off = d + 5, d + 6
    bags = call.numel(off) - 1
    if bags < 0 or bags % t:
        raise NoModel(f"offsets of {bags + 1} entries do not split into {t} tables")
    weights = sum(call.numel(i) for i in weight_inputs)
    main = next((i for i in weight_inputs if call.numel(i) > 0), weight_inputs[0])
    weighted = call.has_tensor(d + 8) and call.numel(d + 8) > 0
    read = call.nbytes(idx) + call.nbytes(off) + (call.nbytes(d + 8) if weighted else 0)
    total_d = call.value(d + 1)
    pooling = call.value(d + 7)
    return Lookup(
        opt,
        t,
        bags,
        call.numel(idx),
        weights,
        call.itemsize(main),
        dtypes.precision(call.dtype(main)) or "fp32",
        read,
        weighted,
        total_d if isinstance(total_d, int) and not isinstance(total_d, bool) else None,
        pooling != 2,
    )


def _width(call: OpCall, lk: Lookup) -> tuple[int, int]:
    """(total_D, output bytes per element): Concrete Inputs, else the paired autograd node."""
    extra = call.extra or {}
    if lk.total_d is not None:
        return lk.total_d, dtypes.itemsize(extra.get("output_type")) or 4
    if "total_d" in extra:
        return int(extra["total_d"]), dtypes.itemsize(extra.get("output_type")) or 4
    raise NoModel(
        extra.get(
            "reason",
            "output width total_D not recorded (no Concrete Inputs) "
            "and no autograd node of this lookup to read it from",
        )
    )


def tbe_lookup(call: OpCall) -> Cost:
    lk = parse_lookup(call)
    if not lk.pooled:
        raise NoModel("pooling mode NONE (sequence embeddings) not modelled")
    total_d, out_size = _width(call, lk)
    d = total_d / lk.tables
    if total_d % lk.tables:
        call.assume(
            f"the {lk.tables} tables' widths differ (total_D {total_d}): their mean is "
            "taken for every looked-up row"
        )
    # no more distinct weights are read than the tables hold; repeated rows come from cache
    rows_read = min(lk.rows * d, float(lk.weights)) if lk.weights else lk.rows * d
    nbytes = lk.read_bytes + rows_read * lk.weight_size + lk.batch * total_d * out_size
    return Cost("embedding", lk.rows * d * (2 if lk.weighted else 1), float(nbytes), lk.precision)


def tbe_backward(call: OpCall) -> Cost:
    """CppNode<SplitLookupFunction_<optimizer>_Op>([B, total_D] gradient); the rest comes
    from the paired lookups (call.extra: rows, tables, weight size, read bytes)."""
    opt = optimizer_of(call.name) or ""
    g = call.shape(0)
    if len(g) != 2:
        raise NoModel(f"TBE gradient of shape {g}")
    extra = call.extra or {}
    if "rows" not in extra:
        raise NoModel(
            extra.get(
                "reason",
                "no lookup of this autograd node recorded (its rows looked up are unknown)",
            )
        )
    state = STATE_PER_ROW.get(opt)
    if state is None:
        raise NoModel(f"optimizer {opt!r}: its state per row is not modelled")
    d = g[1] / extra["tables"]
    rows = float(extra["rows"])
    per_row = d if state == "D" else float(state)
    nbytes = (
        call.nbytes(0)
        + extra["read_bytes"]
        + 2 * rows * d * extra["weight_size"]
        + 2 * rows * per_row * 4
    )
    return Cost("embedding", rows * d, float(nbytes), extra.get("precision", "fp32"))


# split lookups and their nodes are named per optimizer: registered by name pattern
pattern_model(LOOKUP, tbe_lookup)
pattern_model(BACKWARD, tbe_backward)


# --- pairing lookups with their autograd nodes ----------------------------------------
Key = tuple[Any, ...]


@rank_extras
def tbe_widths(
    groups: Iterable[tuple[Key, str, Optional[str], Optional[str], Optional[str]]],
) -> dict[Key, dict]:
    """For one rank's operator groups (key, name, Input Dims, Input type, Concrete Inputs),
    the `extra` each TBE lookup and autograd node group needs: {"total_d", "output_type"}
    for a lookup, {"rows", "tables", "weight_size", "read_bytes", "precision"} for a node,
    or {"reason"} when the pairing fails.

    A lookup and a node pair when they share the optimizer and the batch (B = bags / T of
    the lookup, the gradient's rows). Lookups with the same tables (T and weights) are one
    configuration; each configuration takes the node widths total_D that fit it: at least
    T (a table is at least one wide), and with one table a divisor of the table's size. A
    width that fits one configuration only is its; where as many configurations as widths
    share a batch, a width taken is struck from the others' (each configuration then has
    its own) until every one is settled. Anything left ambiguous gets a reason."""
    lookups: dict[Key, Lookup] = {}
    nodes: dict[Key, tuple[str, int, int, str]] = {}
    out: dict[Key, dict] = {}
    for key, name, dims, types, concrete in groups:
        opt = optimizer_of(name)
        if opt is None:
            continue
        try:
            call = OpCall.parse(name, dims, types, concrete)
            if LOOKUP.match(name):
                lookups[key] = parse_lookup(call)
            else:
                g = call.shape(0)
                if len(g) == 2:
                    nodes[key] = (opt, g[0], g[1], call.dtype(0))
        except NoModel:
            continue
    # (optimizer, B) -> widths seen on nodes, with their gradient dtype
    widths: dict[tuple[str, int], dict[int, str]] = defaultdict(dict)
    for opt, b, w, dtype in nodes.values():
        widths[(opt, b)][w] = dtype
    configs: dict[tuple[str, int], dict[tuple[int, int], list[Key]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for key, lk in lookups.items():
        if lk.total_d is None:
            configs[(lk.optimizer, lk.batch)][(lk.tables, lk.weights)].append(key)
    chosen: dict[tuple[str, int, int], list[Lookup]] = defaultdict(list)
    for cls, by_config in configs.items():
        seen = widths.get(cls, {})
        assigned = _assign(by_config.keys(), seen)
        for config, keys in by_config.items():
            width = assigned.get(config)
            if width is None:
                reason = (
                    f"output width total_D not recorded and no autograd node with a "
                    f"[{cls[1]}, total_D] gradient for this lookup among the selected "
                    "operators"
                    if not seen
                    else f"output width total_D not recorded; autograd node widths "
                    f"{sorted(seen)} for batch {cls[1]} fit more than one lookup"
                )
                for k in keys:
                    out[k] = {"reason": reason}
                continue
            for k in keys:
                out[k] = {"total_d": width, "output_type": seen[width]}
                chosen[(cls[0], cls[1], width)].append(lookups[k])
    for lk in lookups.values():
        if lk.total_d is not None:
            chosen[(lk.optimizer, lk.batch, lk.total_d)].append(lk)
    for key, (opt, b, w, _) in nodes.items():
        paired = chosen.get((opt, b, w))
        if not paired:
            out[key] = {
                "reason": f"no lookup of this autograd node ({opt}, [{b}, {w}]) recorded "
                "with shapes: rows looked up unknown"
            }
            continue
        first = paired[0]
        out[key] = {
            "rows": sum(p.rows for p in paired) / len(paired),
            "tables": first.tables,
            "weight_size": first.weight_size,
            "precision": first.precision,
            "read_bytes": sum(p.read_bytes for p in paired) / len(paired),
        }
    return out


def _assign(configs: Iterable[tuple[int, int]], seen: dict[int, str]) -> dict[tuple[int, int], int]:
    cand = {
        c: {w for w in seen if w >= c[0] and (c[0] > 1 or (c[1] > 0 and c[1] % w == 0))}
        for c in configs
    }
    one_each = len(cand) == len(seen)
    done: dict[tuple[int, int], int] = {}
    changed = True
    while changed:
        changed = False
        for c, ws in cand.items():
            if c not in done and len(ws) == 1:
                done[c] = next(iter(ws))
                changed = True
                if one_each:
                    for other, ows in cand.items():
                        if other != c:
                            ows.discard(done[c])
    return done


__all__ = ["Lookup", "parse_lookup", "tbe_widths", "optimizer_of", "tbe_lookup", "tbe_backward"]
