#!/usr/bin/env python3
"""Every analysis, hta_fast against the reference tool, after loading, in one run.

    python benchmarks/bench_analyses.py [--size-mb 1000] [--ranks 8 --rank-size-mb 30]
                                        [--runs 3] [--skip-ref] [--out DIR]
                                        [--sets one|multi|both] [--analyses NAME ...]

Generates (once, cached under --out) one large single-rank trace and one multi-rank set with
benchmarks/gen_trace.py. For each, a child process loads the folder with hta_fast and times
every analysis (native function and compat method, medians of --runs); another child runs
the reference's methods on the same folder (tests/reference/run_reference.py, which records
each call's wall time). Prints per-analysis seconds and ratios, and the sum over analyses.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _measure import run_measured  # noqa: E402
from gen_trace import generate  # noqa: E402

REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"
REF_SCRIPT = ROOT / "tests" / "reference" / "run_reference.py"


def ensure(folder: Path, size_mb: float, ranks: int) -> Path:
    if not all((folder / f"rank{r}.json").exists() for r in range(ranks)):
        generate(folder, size_mb, ranks=ranks)
    return folder


def reference_seconds(folder: Path, timeout_s: float, analyses: list[str] | None = None) -> dict:
    with tempfile.TemporaryDirectory() as out:
        only = ["--analyses", *analyses] if analyses else []
        cmd = [str(REF_PYTHON), str(REF_SCRIPT), "--out", out, *only, "--", str(folder)]
        measured = run_measured(cmd, timeout_s=timeout_s)
        index = json.loads((Path(out) / "index.json").read_text())
    secs = {}
    for name, entry in index.get("analyses", index).items():
        if isinstance(entry, dict) and entry.get("status") == "ok" and "seconds" in entry:
            secs[name] = entry["seconds"]
    load = index.get("load", {}).get("seconds")
    return {"seconds": secs, "load_s": load, "peak_rss_mb": measured.get("peak_rss_mb")}


def report(title: str, ours: dict, ref: dict | None) -> None:
    print(f"\n## {title}\n")
    ref_load = f", reference load: {ref['load_s']:.1f} s" if ref and ref.get("load_s") else ""
    print(f"hta_fast load: {ours['load_s']:.2f} s{ref_load}")
    print(
        "\n| analysis | hta_fast native s | hta_fast compat s | compat first call s "
        "| reference s | compat speed-up | first call speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    names = sorted(set(ours["native"]) | set(ours["compat"]))
    tot_native = tot_compat = tot_ref = 0.0
    for name in names:
        n, c = ours["native"].get(name), ours["compat"].get(name)
        r = ref["seconds"].get(name) if ref else None
        tot_native += n or 0
        tot_compat += c or 0
        if r is not None and c is not None:
            tot_ref += r
        first = ours.get("compat_first", {}).get(name)
        fmt = lambda v: "" if v is None else f"{v:.3f}"
        ratio = f"{r / c:.0f}x" if (r and c) else ""
        first_ratio = f"{r / first:.0f}x" if (r and first) else ""
        print(
            f"| {name} | {fmt(n)} | {fmt(c)} | {fmt(first)} | {fmt(r)} | {ratio} | {first_ratio} |"
        )
    print(
        f"| **all** | {tot_native:.3f} | {tot_compat:.3f} | | {tot_ref:.3f} | "
        f"{(tot_ref / tot_compat if tot_compat and tot_ref else 0):.0f}x | |"
    )
    for k, v in ours["errors"].items():
        print(f"- hta_fast error {k}: {v}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--rank-size-mb", type=float, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-ref", action="store_true")
    ap.add_argument("--out", default="/tmp/htafast-bench")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument(
        "--ref-max-mb",
        type=float,
        default=float("inf"),
        help="run the reference only on sets of at most this many MB in all",
    )
    ap.add_argument(
        "--analyses",
        nargs="+",
        help="run only these of the reference's analyses (its names; default: all)",
    )
    ap.add_argument(
        "--sets",
        choices=["one", "multi", "both"],
        default="both",
        help="the single large rank, the multi-rank set, or both",
    )
    args = ap.parse_args()
    out = Path(args.out)
    sets = [
        (
            f"one rank, {args.size_mb:g} MB",
            ensure(out / f"an{args.size_mb:g}", args.size_mb, 1),
            args.size_mb,
        ),
        (
            f"{args.ranks} ranks x {args.rank_size_mb:g} MB",
            ensure(out / f"an{args.ranks}x{args.rank_size_mb:g}", args.rank_size_mb, args.ranks),
            args.ranks * args.rank_size_mb,
        ),
    ]
    sets = {"one": sets[:1], "multi": sets[1:], "both": sets}[args.sets]
    for title, folder, total_mb in sets:
        cmd = [
            sys.executable,
            str(HERE / "bench_hta_fast_analyses.py"),
            str(folder),
            "--runs",
            str(args.runs),
        ]
        ours = run_measured(cmd, timeout_s=args.timeout)["result"]
        skip = args.skip_ref or not REF_PYTHON.exists() or total_mb > args.ref_max_mb
        ref = None if skip else reference_seconds(folder, args.timeout, args.analyses)
        report(title, ours, ref)


if __name__ == "__main__":
    main()
