#!/usr/bin/env python3
"""`hta-fast report` end to end (interpreter start, load, analyses, HTML written), against
the reference tool's own load plus the same analyses.

    python benchmarks/bench_report.py [--size-mb 1000] [--runs 5] [--skip-ref]
                                      [--ref-timeout 1800] [--out /tmp/htafast-bench]

Cases: the real 8-rank set in ../shared/traces/param_dlrm_8rank and one generated
single-rank trace of --size-mb MB (made once under --out/g<size>, reused after). Each
hta_fast run is a fresh `python -m hta_fast -q report` child (medians of --runs); the
reference runs once per case through tests/reference/run_reference.py with the analyses the
report shows (its wall time includes its load).
"""

from __future__ import annotations

import argparse
import json
import statistics
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
DLRM = ROOT.parent / "shared" / "traces" / "param_dlrm_8rank"
# The reference's calls for what the report shows (see run_reference.py --list).
REF_ANALYSES = [
    "temporal_breakdown",
    "idle_time_breakdown",
    "kernel_breakdown",
    "comm_comp_overlap",
    "queue_length_summary",
    "time_blocked_on_full_queue",
    "memory_bw_time_series",
    "memory_bw_summary",
    "cuda_kernel_launch_stats",
    "profiler_steps",
    "potential_stragglers",
]


def ours(path: Path, runs: int) -> dict:
    walls, rss, size = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        for _ in range(runs):
            m = run_measured(
                [sys.executable, "-m", "hta_fast", "-q", "report", str(path), "-o", str(out)],
                timeout_s=600,
            )
            walls.append(m["wall_s"])
            rss.append(m["peak_rss_mb"])
            size = out.stat().st_size
    return {
        "wall_s": statistics.median(walls),
        "min_s": min(walls),
        "max_s": max(walls),
        "peak_rss_mb": max(rss),
        "html_mb": size / 1e6,
    }


def reference(path: Path, timeout_s: float) -> dict:
    with tempfile.TemporaryDirectory() as out:
        m = run_measured(
            [
                str(REF_PYTHON),
                str(REF_SCRIPT),
                "--out",
                out,
                "--analyses",
                *REF_ANALYSES,
                "--",
                str(path),
            ],
            timeout_s=timeout_s,
            check=False,
        )
        if m["timed_out"]:
            return {"wall_s": None, "note": f"did not finish in {timeout_s:.0f} s"}
        index_path = Path(out) / "index.json"
        index = json.loads(index_path.read_text()) if index_path.exists() else {}
    failed = sorted(
        n
        for n, e in index.get("analyses", index).items()
        if isinstance(e, dict) and e.get("status") not in (None, "ok")
    )
    return {
        "wall_s": m["wall_s"],
        "peak_rss_mb": m["peak_rss_mb"],
        "note": f"failed: {', '.join(failed)}" if failed else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-ref", action="store_true")
    ap.add_argument("--ref-timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "htafast-bench")
    args = ap.parse_args()

    big = args.out / f"g{args.size_mb:g}"
    if not (big / "rank0.json").exists():
        generate(big, args.size_mb, ranks=1)
    cases = [
        ("param_dlrm_8rank (8 ranks, real)", DLRM),
        (f"generated {args.size_mb:g} MB, 1 rank", big / "rank0.json"),
    ]
    print(
        "| trace | hta-fast report s (median, min-max) | peak RSS MB | HTML MB "
        "| reference load + analyses s | reference peak RSS MB | speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    for title, path in cases:
        mine = ours(path, args.runs)
        ref = (
            {"wall_s": None, "note": "skipped"}
            if args.skip_ref or not REF_PYTHON.exists()
            else reference(path, args.ref_timeout)
        )
        ref_s = f"{ref['wall_s']:.1f}" if ref["wall_s"] else ref.get("note", "")
        if ref["wall_s"] and ref.get("note"):
            ref_s += f" ({ref['note']})"
        speed = f"{ref['wall_s'] / mine['wall_s']:.0f}x" if ref["wall_s"] else ""
        print(
            f"| {title} | {mine['wall_s']:.2f} ({mine['min_s']:.2f}-{mine['max_s']:.2f}) | "
            f"{mine['peak_rss_mb']:.0f} | {mine['html_mb']:.1f} | {ref_s} | "
            f"{ref.get('peak_rss_mb') or ''} | {speed} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
