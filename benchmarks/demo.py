#!/usr/bin/env python3
"""`make demo`: generate a realistic 4-rank trace set and load it with hta_fast.

Shows what a new user gets with no data of their own: ranks, events per kind, kernel
classes, links, steps, and load speed. The middle rank is a straggler (its GPU compute takes
`hta-fast demo`'s factor longer, and the others wait for it in their collectives).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from gen_trace import generate

import hta_fast
from hta_fast.cli.commands.demo import STRAGGLER_FACTOR


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--size-mb", type=float, default=25)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    out = args.out or Path(tempfile.mkdtemp(prefix="hta_fast_demo_"))
    print(f"generating {args.ranks} ranks x {args.size_mb:g} MB (gzip) into {out} ...")
    straggler = {args.ranks // 2: STRAGGLER_FACTOR} if args.ranks > 1 else {}
    files = generate(out, args.size_mb, ranks=args.ranks, compress=True, stragglers=straggler)
    for rank, factor in straggler.items():
        print(f"rank {rank} is a straggler: its GPU compute takes {factor:g}x as long")

    t0 = time.perf_counter()
    ranks = hta_fast.load_dir(files)
    dt = time.perf_counter() - t0
    json_mb = sum(t.meta.json_bytes for t in ranks.values()) / 1e6
    print(
        f"loaded {len(ranks)} ranks, {json_mb:.0f} MB of JSON in {dt:.2f} s "
        f"({json_mb / dt:.0f} MB/s)\n"
    )

    for rank, trace in ranks.items():
        ev = trace.events
        kinds = pc.value_counts(ev["kind"].combine_chunks().dictionary_decode()).to_pylist()
        gpu = pc.is_in(
            ev["kind"].combine_chunks().dictionary_decode(),
            value_set=pa.array(["kernel", "memcpy", "memset"]),
        )
        classes = pc.value_counts(
            pc.filter(ev["kernel_class"].combine_chunks().dictionary_decode(), gpu)
        ).to_pylist()
        linked = pc.sum(pc.and_(gpu, pc.is_valid(ev["partner"]))).as_py() or 0
        steps = pc.unique(pc.drop_null(ev["step"])).to_pylist()
        span_ms = (pc.max(ev["ts"]).as_py() - pc.min(ev["ts"]).as_py()) / 1e6
        print(
            f"rank {rank}: {ev.num_rows:,} events over {span_ms:.1f} ms, steps {min(steps)}..{max(steps)}"
        )
        print("   kinds:   " + ", ".join(f"{k['values']}={k['counts']:,}" for k in kinds))
        print(
            "   GPU:     "
            + ", ".join(f"{k['values']}={k['counts']:,}" for k in classes)
            + f"; {linked:,} linked to their launch"
        )
    print(f"\nthe traces are in {out}; load them with hta_fast.load_dir({str(out)!r})")


if __name__ == "__main__":
    main()
