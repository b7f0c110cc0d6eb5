"""The what-if's time per step: one figure, computed here once, that the CLI prints (table
"per_step"), the doctor and the evaluators (benchmarks/eval_common.step_time) read.

    steps, replayed, predicted
        chained (the default): per rank its steps from the first one's start to the last
        one's end (the "totals" table), summed over the ranks, over the steps' count; where
        an edit lets the host run ahead the steps' spans overlap, and this, not their mean,
        is the time a step takes. Window by window: each window's time, summed, over the
        windows' count. No step: None.
    predicted_low, predicted_high
        the band of `predicted`. With a device edit, the replay with every event at the low
        and at the high end of its prediction's band (the family's error measured on real
        pairs, hta_fast.model.predict_errors), measured the same way; else the spread of the
        trace's own steps: predicted x p10 / median and x p90 / median of the measured
        steps after warm-up (None with fewer than two of them).
    warmup_steps, predicted_median, predicted_p10, predicted_p90
        the steps left out as warm-up (hta_fast.steps.warmup.warmup_steps on the
        measured step times, each step's longest rank: the first step, and any over twice
        the median), and the median and p10-p90 (linear percentiles) of the predicted steps
        left, each rank's step counted once: what warm-up and outlier steps do not move.

The per-step rows get their band the same way (step_bands).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...frame.fields import NS, PCT
from ...steps.warmup import warmup_steps

# what the band is (the module doc)
BAND_DEVICE = "kernels' errors on real pairs"
BAND_STEPS = "the trace's steps, p10-p90"

SCHEMA = pa.schema(
    [
        pa.field("steps", pa.int64()),
        pa.field("replayed", pa.float64(), metadata=NS),
        pa.field("predicted", pa.float64(), metadata=NS),
        pa.field("change_pct", pa.float64(), metadata=PCT),
        pa.field("predicted_low", pa.float64(), metadata=NS),
        pa.field("predicted_high", pa.float64(), metadata=NS),
        pa.field("band", pa.string()),
        pa.field("warmup_steps", pa.string()),
        pa.field("predicted_median", pa.float64(), metadata=NS),
        pa.field("predicted_p10", pa.float64(), metadata=NS),
        pa.field("predicted_p90", pa.float64(), metadata=NS),
    ]
)

Rows = Sequence[dict[str, Any]]
Band = tuple[Rows, Optional[Rows]]  # a band replay's rows (rank, step, predicted), totals


def time_per_step(rows: Rows, totals: Optional[Rows], column: str) -> tuple[int, Optional[float]]:
    """(steps, ns per step of `column`) as the module doc defines it: from the chained
    totals where given, else from the rows (one per window)."""
    source = rows if totals is None else totals
    n = len(source) if totals is None else sum(int(t["steps"]) for t in totals)
    if n == 0:
        return 0, None
    return n, float(sum(int(r[column]) for r in source)) / n


def after_warmup(rows: Rows) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The rows of the steps that do not look like warm-up, and those that do -> why."""
    times: dict[int, int] = {}
    for r in rows:
        if r["step"] is not None:
            times[r["step"]] = max(times.get(r["step"], 0), int(r["measured"]))
    flagged = warmup_steps(times)
    return [r for r in rows if r["step"] not in flagged], flagged


def spread(rows: Rows) -> Optional[tuple[float, float]]:
    """(p10 / median, p90 / median) of the measured steps after warm-up; None with fewer
    than two."""
    kept, _ = after_warmup(rows)
    measured = np.array([r["measured"] for r in kept], np.float64)
    if len(measured) < 2 or np.median(measured) <= 0:
        return None
    p10, median, p90 = np.percentile(measured, [10, 50, 90])
    return float(p10 / median), float(p90 / median)


def step_bands(rows: list[dict[str, Any]], bands: Optional[Mapping[str, Band]] = None) -> None:
    """Each row's predicted_low / predicted_high: the band replays' spans of its (rank,
    step) where given (a device edit), else the spread of the trace's steps."""
    ratios = None if bands else spread(rows)
    spans = {
        b: {(r["rank"], r["step"]): r["predicted"] for r in band_rows}
        for b, (band_rows, _) in (bands or {}).items()
    }
    for r in rows:
        p, key = int(r["predicted"]), (r["rank"], r["step"])
        if spans:
            low, high = spans["low"].get(key), spans["high"].get(key)
            r["predicted_low"] = None if low is None else min(p, int(low))
            r["predicted_high"] = None if high is None else max(p, int(high))
        elif ratios is not None:
            r["predicted_low"] = int(round(p * ratios[0]))
            r["predicted_high"] = int(round(p * ratios[1]))
        else:
            r["predicted_low"] = r["predicted_high"] = None


def per_step_table(
    rows: Rows, totals: Optional[Rows], bands: Optional[Mapping[str, Band]] = None
) -> pa.Table:
    """The one-row table SCHEMA of a what-if's rows, its chained totals (None window by
    window) and, with a device edit, each band replay's rows and totals (as those)."""
    n, replayed = time_per_step(rows, totals, "replayed")
    _, predicted = time_per_step(rows, totals, "predicted")
    low = high = None
    if predicted is not None and bands:
        low, high = (time_per_step(*bands[b], "predicted")[1] for b in ("low", "high"))
        low = None if low is None else min(low, predicted)
        high = None if high is None else max(high, predicted)
    elif predicted is not None:
        ratios = spread(rows)
        if ratios is not None:
            low, high = predicted * ratios[0], predicted * ratios[1]
    kept, flagged = after_warmup(rows)
    pred = np.array([r["predicted"] for r in kept], np.float64)
    p10, median, p90 = np.percentile(pred, [10, 50, 90]).tolist() if len(pred) else [None] * 3
    change = (
        100.0 * (predicted - replayed) / replayed if predicted is not None and replayed else None
    )
    row = {
        "steps": n,
        "replayed": replayed,
        "predicted": predicted,
        "change_pct": change,
        "predicted_low": low,
        "predicted_high": high,
        "band": None if low is None else (BAND_DEVICE if bands else BAND_STEPS),
        "warmup_steps": ", ".join(f"{s} ({why})" for s, why in flagged.items()) or None,
        "predicted_median": median,
        "predicted_p10": p10,
        "predicted_p90": p90,
    }
    return pa.table({f.name: array_of([row[f.name]], f.type) for f in SCHEMA}, schema=SCHEMA)


def _ms(ns: Optional[float]) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:,.2f} ms"


def per_step_note(row: dict[str, Any], chained: bool) -> list[str]:
    """The per_step row in words: the time per step, its band, and the steps after
    warm-up."""
    if not row["steps"]:
        return []
    how = (
        "each rank's steps from the first one's start to the last one's end"
        if chained
        else "each window's time"
    )
    band = (
        f" (band {_ms(row['predicted_low'])} to {_ms(row['predicted_high'])}: {row['band']})"
        if row["band"]
        else ""
    )
    after = (
        f"; after warm-up (left out: step {row['warmup_steps']}) the predicted steps' "
        if row["warmup_steps"]
        else "; the predicted steps' "
    )
    return [
        f"time per step ({how}, over {row['steps']} steps: the totals the doctor and the "
        f"evaluators read): replayed {_ms(row['replayed'])}, predicted "
        f"{_ms(row['predicted'])}{band}{after}median {_ms(row['predicted_median'])}, "
        f"p10-p90 {_ms(row['predicted_p10'])} to {_ms(row['predicted_p90'])}: table per_step"
    ]
