#!/usr/bin/env python3
"""hta_fast's loader against the reference tool's, on the same generated file, in one run.

    python benchmarks/bench_load.py [--size-mb 300] [--runs 3] [--skip-ref] [--out DIR]

Generates (once, cached under --out) a trace of --size-mb MB with benchmarks/gen_trace.py,
plus its gzip copy, then times in fresh child processes: hta_fast with 1 and 2 threads on the
.json, hta_fast on the .json.gz, and the reference loader (.venv-ref) on the .json. Prints
medians of --runs runs: wall, CPU, MB of JSON per CPU-second, peak RSS, and the ratios.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _measure import run_measured  # noqa: E402
from gen_trace import generate  # noqa: E402

REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"


def ensure_trace(out: Path, size_mb: float) -> tuple[Path, Path]:
    plain = out / f"{size_mb:g}mb" / "rank0.json"
    if not plain.exists():
        generate(plain.parent, size_mb, ranks=1)
    gz = plain.with_suffix(".json.gz")
    if not gz.exists():
        with open(plain, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    return plain, gz


def median_run(cmd: list[str], runs: int, timeout_s: float) -> dict:
    results = [run_measured(cmd, timeout_s=timeout_s) for _ in range(runs)]
    inner = [r["result"] for r in results]
    return {
        "wall_s": statistics.median(r["wall_s"] for r in inner),
        "cpu_s": statistics.median(r["cpu_s"] for r in inner),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in results),
        "events": inner[0]["events"],
        "extra": inner[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=float, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ref-runs", type=int, default=1)
    ap.add_argument("--skip-ref", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/htafast-bench"))
    args = ap.parse_args()

    plain, gz = ensure_trace(args.out, args.size_mb)
    json_mb = plain.stat().st_size / 1e6
    # Read once so every run sees the file in the page cache.
    with open(plain, "rb") as f:
        while f.read(1 << 24):
            pass
    py = sys.executable
    fast = [py, str(HERE / "bench_hta_fast_load.py")]
    rows = {
        "hta_fast 1 thread": median_run(fast + [str(plain), "--threads", "1"], args.runs, 600),
        "hta_fast 2 threads": median_run(fast + [str(plain), "--threads", "2"], args.runs, 600),
        "hta_fast .json.gz": median_run(fast + [str(gz), "--threads", "2"], args.runs, 600),
    }
    if not args.skip_ref:
        if not REF_PYTHON.exists():
            sys.exit(
                "no reference environment: python3 -m venv .venv-ref && "
                ".venv-ref/bin/pip install -r benchmarks/requirements-ref.txt"
            )
        rows["reference (hta)"] = median_run(
            [str(REF_PYTHON), str(HERE / "bench_ref_load.py"), str(plain)], args.ref_runs, 3600
        )

    print(f"\nfile: {plain} ({json_mb:.0f} MB of JSON; gzip {gz.stat().st_size / 1e6:.0f} MB)")
    print(
        f"{'loader':22s} {'wall s':>8s} {'cpu s':>8s} {'MB/cpu-s':>9s} {'peak RSS MB':>12s} {'RSS/JSON':>9s} {'events':>10s}"
    )
    for name, r in rows.items():
        print(
            f"{name:22s} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {json_mb / r['cpu_s']:9.0f} "
            f"{r['peak_rss_mb']:12.0f} {r['peak_rss_mb'] / json_mb:9.2f} {r['events']:10d}"
        )
    one, two, gzr = rows["hta_fast 1 thread"], rows["hta_fast 2 threads"], rows["hta_fast .json.gz"]
    print(f"\n2 threads vs 1 (wall): {one['wall_s'] / two['wall_s']:.2f}x")
    print(f".json.gz vs .json (wall, 2 threads): {gzr['wall_s'] / two['wall_s']:.2f}x")
    print(
        f"columns: {one['extra']['columns_mb']:.0f} MB = {one['extra']['columns_mb'] / json_mb:.2f}x the JSON"
    )
    ref = rows.get("reference (hta)")
    if ref:
        print(
            f"vs reference: {ref['wall_s'] / two['wall_s']:.0f}x less wall time, "
            f"{ref['peak_rss_mb'] / two['peak_rss_mb']:.1f}x less peak memory "
            f"(reference keeps {ref['events']} rows, hta_fast {two['events']} complete events)"
        )


if __name__ == "__main__":
    main()
