"""Nothing heavy is imported by `import hta_fast` or by loading a trace and reading its
tables: pandas, plotly, numba and dask come in only when a caller asks for them."""

import subprocess
import sys

HEAVY = ("pandas", "plotly", "numba", "dask", "polars")


def modules_after(code: str) -> set[str]:
    script = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_import_is_light():
    loaded = modules_after("import hta_fast")
    assert not [m for m in HEAVY if m in loaded]


def test_loading_and_every_table_is_light(traces_dir):
    path = traces_dir / "hta" / "trace_filter" / "sampled_rank-0.json.gz"
    loaded = modules_after(
        "import hta_fast\n"
        f"t = hta_fast.load({str(path)!r})\n"
        "for name in ('events', 'kernel_args', 'op_args', 'comm_args', 'sync_args', 'flows',\n"
        "             'counters', 'instants', 'meta_events', 'strings'):\n"
        "    getattr(t, name)\n"
        "t.process_names, t.thread_names\n"
    )
    assert not [m for m in HEAVY if m in loaded]
