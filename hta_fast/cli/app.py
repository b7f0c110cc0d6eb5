"""The click group, the global options and the one place where errors become one line."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import sys
from typing import IO, Any, Optional, Sequence

import click

from .errors import describe
from .terminal import safe_lines

log = logging.getLogger("hta_fast")


@dataclasses.dataclass
class Options:
    quiet: bool = False
    debug: bool = False

    @property
    def progress(self) -> bool:
        """Progress bars only for a person watching: not with --quiet, not into a pipe."""
        return not self.quiet and sys.stdout.isatty()


class BadInput(click.ClickException):
    """Bad input: one line on stderr and exit status 2."""

    exit_code = 2

    def show(self, file: Optional[IO[Any]] = None) -> None:
        click.echo(f"hta-fast: error: {safe_lines(self.format_message())}", err=True)


# Each command: the module that defines it (imported when the command runs, so that
# `hta-fast --help` and a small command import only what they use) and its line in the
# command list. tests/project/test_startup.py holds this table and the modules' commands equal.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("info", "What the traces hold: ranks, devices, span, steps, events, kernels."),
    "analyze": ("analyze", "Run analyses; print their tables or write them to a folder."),
    "report": ("report", "One self-contained HTML report."),
    "doctor": ("doctor", "Why the GPU is idle: causes ranked by what removing each saves."),
    "diff": ("diff", "What changed between two runs, per step."),
    "ops": ("ops", "Operators by shape: GPU time, FLOPs, bytes, the roofline."),
    "predict": ("ops", "Each operator family's GPU time on another GPU."),
    "comm-model": ("ops", "A collective's time on a machine: algorithm, protocol, bandwidth."),
    "shard": ("ops", "Embedding sharding plans ranked by predicted step time."),
    "critical-path": ("model", "What bounds each step: the critical path of its graph."),
    "owners": ("model", "Who owns each nanosecond of each step on the GPU."),
    "replay": ("model", "Replay each step's dependency graph with the measured durations."),
    "whatif": ("model", "Edit the dependency graph and replay it: the predicted step time."),
    "convert": ("convert", "The traces' tables as a Parquet dataset partitioned by rank."),
    "slice": ("slice", "Some steps or a window as a trace small enough for Perfetto."),
    "query": ("query", "One SQL statement over the traces' tables and any result by name."),
    "mcp": ("mcp", "The answers as an MCP server for agents (stdio)."),
    "demo": ("demo", "A synthetic multi-rank trace set and its report: no data needed."),
}


class Group(click.Group):
    """Turns any exception from a command into one readable line (exit 2), unless --debug;
    usage errors too (click would print three lines). Commands load on first use
    (COMMANDS)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(f"{__package__}.commands.{COMMANDS[name][0]}")  # registers it
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])

    def main(
        self,
        args: Optional[Sequence[str]] = None,
        prog_name: Optional[str] = None,
        complete_var: Optional[str] = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else "hta-fast"
            message = safe_lines(e.format_message())
            click.echo(f"hta-fast: error: {message} (see {where} --help)", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("hta-fast: aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # The reader left (`hta-fast analyze ... | head`): stop quietly, no message.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except Exception as e:  # noqa: BLE001 - the whole point: no traceback for users
            if ctx.params.get("debug"):
                raise
            raise BadInput(describe(e)) from None


class _CliHandler(logging.StreamHandler):
    """The command line's own handler, so that repeated calls in one process add it once;
    messages (warnings about a trace's events) have their control characters escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return safe_lines(super().format(record))


def _setup_logging(quiet: bool, debug: bool) -> None:
    # Only the hta_fast logger is configured: embedding applications keep theirs.
    level = logging.DEBUG if debug else (logging.ERROR if quiet else logging.WARNING)
    log.setLevel(level)
    if not any(isinstance(h, _CliHandler) for h in log.handlers):
        handler = _CliHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("hta-fast: %(levelname)s: %(message)s"))
        log.addHandler(handler)
    log.propagate = False


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no warnings.")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logging.")
@click.version_option(package_name="hta_fast", prog_name="hta-fast")
@click.pass_context
def cli(ctx: click.Context, quiet: bool, debug: bool) -> None:
    """Fast analysis of PyTorch profiler (Kineto) traces.

    PATH is a trace file (.json, .json.gz, .json.zst) or a folder with one file per rank.
    """
    _setup_logging(quiet, debug)
    ctx.obj = Options(quiet=quiet, debug=debug)


def main(argv: Optional[Sequence[str]] = None) -> None:
    cli.main(args=argv, prog_name="hta-fast")
