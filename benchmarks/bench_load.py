#!/usr/bin/env python3
"""hta_fast's loader against the reference tool's, on the same generated file, in one run.

    python benchmarks/bench_load.py [--size-mb 300] [--runs 3] [--skip-ref] [--out DIR]
    python benchmarks/bench_load.py --real DIR [DIR ...] [--largest 10] [--runs 3]

Generates (once, cached under --out) a trace of --size-mb MB with benchmarks/gen_trace.py,
plus its gzip copy, then times in fresh child processes: hta_fast with 1 and 2 threads on the
.json, hta_fast on the .json.gz, and the reference loader (.venv-ref) on the .json. Prints
medians of --runs runs: wall, CPU, MB of JSON per CPU-second, peak RSS, and the ratios.

--real takes recorded traces instead: the --largest files (by JSON size) found under the
folders, each timed as recorded (.json.gz, one thread, inflate included), as plain JSON (a
copy inflated once under --out, one thread and two; the three taken in turn, --runs times)
and by the reference's load of the recorded file, all in this run; it ends with the
geometric means.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
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
    return median_of([run_measured(cmd, timeout_s=timeout_s) for _ in range(runs)])


def median_runs_alternating(cmds: list[list[str]], runs: int, timeout_s: float) -> list[dict]:
    """median_run of each command, the commands run in turn (a, b, a, b, ...): the machine's
    pace drifts by tens of percent within minutes, and ratios between the commands should
    not take the drift for a difference."""
    results: list[list[dict]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, got in zip(cmds, results):
            got.append(run_measured(cmd, timeout_s=timeout_s))
    return [median_of(r) for r in results]


def median_of(results: list[dict]) -> dict:
    inner = [r["result"] for r in results]
    return {
        "wall_s": statistics.median(r["wall_s"] for r in inner),
        "cpu_s": statistics.median(r["cpu_s"] for r in inner),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in results),
        "events": inner[0]["events"],
        "extra": inner[0],
    }


def inflated_size(path: Path) -> int:
    """Bytes of JSON a (possibly gzip'd) file holds."""
    if path.suffix != ".gz":
        return path.stat().st_size
    with gzip.open(path, "rb") as f:
        # Small reads: the children's ru_maxrss starts from this process's size at fork.
        return sum(len(b) for b in iter(lambda: f.read(1 << 20), b""))


def largest_traces(folders: list[Path], count: int) -> list[tuple[Path, int]]:
    """The `count` largest trace files under the folders, by the JSON they hold."""
    found = [
        p
        for d in folders
        for p in sorted(d.rglob("*.json*"))
        if p.name.endswith((".json", ".json.gz")) and "memory_timeline" not in p.name
    ]
    sized = sorted(((p, inflated_size(p)) for p in found), key=lambda t: -t[1])
    return sized[:count]


def plain_copy(path: Path, out: Path) -> Path:
    """An inflated copy of a gzip'd trace, made once under `out`."""
    if path.suffix != ".gz":
        return path
    # A stable name: str hashes change from process to process, and the copy is made once.
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    dst = out / "real" / digest / path.with_suffix("").name
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "rb") as src, open(dst, "wb") as f:
            shutil.copyfileobj(src, f, 1 << 22)
    return dst


def rss_over_json(peak_rss_mib: float, json_mb: float) -> float:
    """Peak RSS (MiB, as the kernel counts it) over the JSON's size (MB): bytes over bytes."""
    return peak_rss_mib * 2**20 / 1e6 / json_mb


def geomean(xs: list[float]) -> float:
    return statistics.geometric_mean(xs) if xs else float("nan")


def bench_real(folders: list[Path], largest: int, runs: int, out: Path, skip_ref: bool) -> None:
    fast = [sys.executable, str(HERE / "bench_hta_fast_load.py")]
    print(
        f"{'trace':44s} {'JSON MB':>8s} {'gz 1t':>7s} {'json 1t':>8s} {'json 2t':>8s} "
        f"{'2t/1t wall':>10s} {'ref MB/cpu-s':>12s} {'CPU vs ref':>10s} {'RSS/JSON':>9s}"
    )
    cols: dict[str, list[float]] = {k: [] for k in ("gz1", "js1", "js2", "speedup", "ref", "vs")}
    for path, size in largest_traces(folders, largest):
        mb = size / 1e6
        plain = plain_copy(path, out)
        gz1, js1, js2 = median_runs_alternating(
            [
                fast + [str(path), "--threads", "1"],
                fast + [str(plain), "--threads", "1"],
                fast + [str(plain), "--threads", "2"],
            ],
            runs,
            600,
        )
        ref = None
        if not skip_ref:
            ref = median_run([str(REF_PYTHON), str(HERE / "bench_ref_load.py"), str(path)], 1, 3600)
        row = {
            "gz1": mb / gz1["cpu_s"],
            "js1": mb / js1["cpu_s"],
            "js2": mb / js2["cpu_s"],
            "speedup": js1["wall_s"] / js2["wall_s"],
        }
        if ref:
            row["ref"] = mb / ref["cpu_s"]
            row["vs"] = ref["cpu_s"] / gz1["cpu_s"]
        for k, v in row.items():
            cols[k].append(v)
        rss = gz1["extra"]["load_peak_mb"] / mb
        name = str(path.relative_to(path.parents[1]))[:44]
        print(
            f"{name:44s} {mb:8.1f} {row['gz1']:7.0f} {row['js1']:8.0f} {row['js2']:8.0f} "
            f"{row['speedup']:9.2f}x {row.get('ref', float('nan')):12.1f} "
            f"{row.get('vs', float('nan')):9.1f}x {rss:9.2f}"
        )
    g = {k: geomean(v) for k, v in cols.items()}
    print(
        f"{'geometric mean':44s} {'':8s} {g['gz1']:7.0f} {g['js1']:8.0f} {g['js2']:8.0f} "
        f"{g['speedup']:9.2f}x {g['ref']:12.1f} {g['vs']:9.1f}x"
    )
    print(
        "MB/cpu-s: MB of JSON per CPU-second of the load (inflate included for gz); "
        "CPU vs ref: the reference's CPU over hta_fast's on the recorded file, one thread; "
        "RSS/JSON: what the gz load added to the process's peak RSS, over the JSON's size"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=float, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ref-runs", type=int, default=1)
    ap.add_argument("--skip-ref", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/htafast-bench"))
    ap.add_argument("--real", type=Path, nargs="+", help="folders of recorded traces")
    ap.add_argument("--largest", type=int, default=10)
    args = ap.parse_args()
    if args.real:
        return bench_real(args.real, args.largest, args.runs, args.out, args.skip_ref)

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
        f"{'loader':22s} {'wall s':>8s} {'cpu s':>8s} {'MB/cpu-s':>9s} {'peak RSS MiB':>12s} {'RSS/JSON':>9s} {'events':>10s}"
    )
    for name, r in rows.items():
        print(
            f"{name:22s} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {json_mb / r['cpu_s']:9.0f} "
            f"{r['peak_rss_mb']:12.0f} {rss_over_json(r['peak_rss_mb'], json_mb):9.2f} "
            f"{r['events']:10d}"
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
