"""The kernel model's error measured on real pairs: the one place that holds it, read by
predict (each prediction's band, and the note where no change did better on the pairs of
its direction), the what-if on another GPU (its steps' band) and docs/ops.md ("Kernel time
per step, against one ratio", whose table tests/model/test_whatif_pairs_fixes.py checks against
this one).

Per measured direction (a trace of one workload predicted onto the GPU of a trace of the same
workload recorded there: pairs/gpu_swap), per family and in all ("(all)"), GPU kernel time per
step in ns: measured on B, predicted by the default model (the kernel model, the one-ratio
baseline for RATIO_FAMILIES), no change (A's), and the one-ratio baseline. Written by
`benchmarks/eval_predict.py A B --errors` (hta_fast.model.predict_check.kernel_time_errors);
tests/model/test_whatif_pairs_fixes.py recomputes them from the traces.

The band of a prediction p of a family is where the measured time fell around the model's
prediction on the pairs: [p x min(1, m / p), p x max(1, m / p)] over every measured direction
of that family (all directions pooled: two GPUs and four directions are too few to trust one
direction alone), "(all)"'s for a family no pair holds. Communication kernels and host
transfers keep their measured time and carry no band.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["MEASURED", "PairErrors", "ALL", "family_band", "no_change_closer"]

ALL = "(all)"
KEPT = frozenset({"(communication)", "(host transfer)"})


class PairErrors(NamedTuple):
    """One measured direction: per family (measured on B, default model, no change, the
    one-ratio baseline), GPU kernel time per step in ns."""

    pair: str
    source: str  # device table keys
    target: str
    families: dict[str, tuple[int, int, int, int]]


MEASURED: tuple[PairErrors, ...] = (
    PairErrors(
        "gpu_swap/Qwen_Qwen1.5-0.5B-Chat.h100 -> mi300x",
        "H100-SXM",
        "MI300X",
        {
            "(unmodelled compute)": (3044, 4950, 1504, 951),
            "attention": (3908798, 1816929, 2722705, 1720955),
            "copy": (4567774, 6194468, 7171491, 4532924),
            "elementwise": (8997222, 10788639, 12258676, 7748408),
            "matmul": (11645722, 8594027, 9001274, 6811448),
            "reduction": (621378, 877588, 747455, 472448),
            "(all)": (29743938, 28276601, 31903105, 21287133),
        },
    ),
    PairErrors(
        "gpu_swap/Qwen_Qwen1.5-0.5B-Chat.mi300x -> h100",
        "MI300X",
        "H100-SXM",
        {
            "(unmodelled compute)": (1504, 3044, 3044, 4816),
            "attention": (2722705, 6120798, 3908798, 6184068),
            "copy": (7171491, 6607346, 4567774, 7226628),
            "elementwise": (12258676, 12158796, 8997222, 14234411),
            "matmul": (9001274, 15136120, 11645722, 15395865),
            "reduction": (747455, 852545, 621378, 983076),
            "(all)": (31903105, 40878649, 29743938, 44028864),
        },
    ),
    PairErrors(
        "gpu_swap/Falconsai_nsfw_image_detection.h100 -> mi300x",
        "H100-SXM",
        "MI300X",
        {
            "attention": (374687, 114722, 122848, 77649),
            "conv": (46342, 82974, 125632, 82974),
            "copy": (6774, 7681, 7264, 4591),
            "elementwise": (206478, 167889, 123328, 77953),
            "matmul": (942325, 834501, 735037, 517452),
            "norm": (139695, 147522, 111201, 70287),
            "(all)": (1716301, 1355288, 1225310, 830906),
        },
    ),
    PairErrors(
        "gpu_swap/Falconsai_nsfw_image_detection.mi300x -> h100",
        "MI300X",
        "H100-SXM",
        {
            "attention": (122848, 567111, 374687, 592788),
            "conv": (125632, 70152, 46342, 70152),
            "copy": (7264, 8577, 6774, 10717),
            "elementwise": (123328, 219314, 206478, 326667),
            "matmul": (735037, 1201247, 942325, 1324834),
            "norm": (111201, 167516, 139695, 221010),
            "(all)": (1225310, 2233917, 1716301, 2546168),
        },
    ),
)


def _ratios(family: str) -> list[float]:
    """measured / predicted of `family` on each measured direction that holds it."""
    return [
        p.families[family][0] / p.families[family][1]
        for p in MEASURED
        if family in p.families and p.families[family][1] > 0
    ]


def family_band(family: str) -> tuple[float, float]:
    """The factors (low, high) on a prediction of `family` that give its band (the module
    doc); (1, 1) for what predict keeps as measured."""
    if family in KEPT:
        return 1.0, 1.0
    r = _ratios(family) or _ratios(ALL)
    return min([1.0, *r]), max([1.0, *r])


def no_change_closer(source: str, target: str) -> list[tuple[str, float, float]]:
    """The measured directions source -> target (device table keys) where no change was
    closer to B's kernel time per step than the model, in all: (pair, the model's |error|,
    no change's), errors as fractions of B's."""
    out = []
    for p in MEASURED:
        m, model, no_change, _ = p.families[ALL]
        if (p.source, p.target) == (source, target) and abs(no_change - m) < abs(model - m):
            out.append((p.pair, abs(model - m) / m, abs(no_change - m) / m))
    return out
