"""Records the small CPU traces of tests/data/torch_2_14/ with torch.profiler: real output of
the PyTorch release named there, kept so that the loader is tested on what that release
writes.

torch is not a dependency of this project; run the script with an environment of its own:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.14.1
    /tmp/torchenv/bin/python scripts/record_torch_traces.py [--out tests/data/torch_2_14]

Three recordings, each written gzip-compressed by the profiler's own exporter
(`export_chrome_trace` to a `.json.gz` path). torch 2.14's default exporter is Kineto's
native writer (`kineto_results.save`, then gzip); `use_python_export=True` picks the Python
streaming exporter (torch/profiler/_chrome_trace_export.py), one compact event per line,
which writes the inference recording a second time:

    mlp_train.json.gz         a small MLP trained for a few steps under
                              schedule(wait=1, warmup=1, active=3): ProfilerStep#N annotations,
                              record_shapes and profile_memory on, no stacks
    mlp_train_stack.json.gz   the same with with_stack and with_flops on
    mlp_infer.json.gz         inference under torch.no_grad with a record_function("my_region")
                              user annotation around each forward
    mlp_infer_python_export.json.gz   the same recording by the Python exporter

Prints each file's size and the header fields it holds (the top-level keys other than
traceEvents), which the README there lists.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

ROOT = Path(__file__).resolve().parents[1]
WAIT, WARMUP, ACTIVE = 1, 1, 3
STEPS = WAIT + WARMUP + ACTIVE


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def train(path: Path, with_stack: bool, with_flops: bool) -> None:
    """STEPS optimizer steps of the MLP, prof.step() after each."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        record_shapes=True,
        profile_memory=True,
        with_stack=with_stack,
        with_flops=with_flops,
    ) as prof:
        for _ in range(STEPS):
            opt.zero_grad()
            loss = nn.functional.mse_loss(net(x), y)
            loss.backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(str(path))


def infer(path: Path) -> None:
    """A few forwards under no_grad, each inside a my_region user annotation, written by
    both exporters (the Python one's file beside `path`)."""
    net = model().eval()
    x = torch.randn(8, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with torch.no_grad():
            for _ in range(3):
                with record_function("my_region"):
                    net(x)
    prof.export_chrome_trace(str(path))
    prof.export_chrome_trace(str(python_export_path(path)), use_python_export=True)


def python_export_path(path: Path) -> Path:
    return path.with_name(path.name.replace(".json.gz", "_python_export.json.gz"))


def header_fields(path: Path) -> list[str]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return [k for k in doc if k != "traceEvents"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "torch_2_14")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}")
    for name, record in (
        ("mlp_train.json.gz", lambda p: train(p, with_stack=False, with_flops=False)),
        ("mlp_train_stack.json.gz", lambda p: train(p, with_stack=True, with_flops=True)),
        ("mlp_infer.json.gz", infer),
    ):
        path = out / name
        record(path)
        written = [path, python_export_path(path)] if record is infer else [path]
        for p in written:
            print(f"{p.name}: {p.stat().st_size} bytes; header: {', '.join(header_fields(p))}")


if __name__ == "__main__":
    main()
