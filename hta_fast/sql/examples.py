"""Worked queries: the questions people ask of a trace, in SQL. docs/query.md shows them
(docs/gen_query.py) and tests/analysis/test_query.py runs every one on real traces."""

from __future__ import annotations

from typing import NamedTuple


class Example(NamedTuple):
    title: str
    sql: str


EXAMPLES: tuple[Example, ...] = (
    Example(
        "GPU kernel time per rank (ms)",
        "SELECT rank, count(*) AS kernels, sum(dur) / 1e6 AS kernel_ms\n"
        "FROM kernels GROUP BY rank ORDER BY rank",
    ),
    Example(
        "The three longest kernels of each step, by total time",
        "SELECT * FROM (\n"
        "  SELECT step, name, count(*) AS calls, sum(dur) AS total_ns,\n"
        "         row_number() OVER (PARTITION BY step ORDER BY sum(dur) DESC) AS place\n"
        "  FROM kernels WHERE step IS NOT NULL GROUP BY step, name)\n"
        "WHERE place <= 3 ORDER BY step, place",
    ),
    Example(
        "Idle gaps over 1 ms on each GPU stream",
        "SELECT rank, device, stream, prev_end AS idle_from, ts AS idle_to,\n"
        "       ts - prev_end AS idle_ns, name AS next_kernel\n"
        "FROM (SELECT *, max(ts + dur) OVER (PARTITION BY rank, device, stream ORDER BY ts\n"
        "        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end\n"
        "      FROM events WHERE kind IN ('kernel', 'memcpy', 'memset'))\n"
        "WHERE ts - prev_end > 1000000 ORDER BY idle_ns DESC",
    ),
    Example(
        "The host ops a stream waited behind: the operator that launched the kernel ending "
        "each gap over 100 µs",
        "WITH gpu AS (\n"
        "  SELECT *, max(ts + dur) OVER (PARTITION BY rank, device, stream ORDER BY ts\n"
        "      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end\n"
        "  FROM events WHERE kind IN ('kernel', 'memcpy', 'memset'))\n"
        "SELECT op.name AS launched_from, count(*) AS gaps, sum(gpu.ts - gpu.prev_end) AS idle_ns\n"
        "FROM gpu\n"
        "JOIN events launch ON launch.rank = gpu.rank AND launch.row = gpu.partner\n"
        "JOIN events op ON op.rank = launch.rank AND op.row = launch.parent\n"
        "WHERE gpu.ts - gpu.prev_end > 100000\n"
        "GROUP BY op.name ORDER BY idle_ns DESC LIMIT 10",
    ),
    Example(
        "Collectives by kind and message size (the host op that called each, and the kernel "
        "where the trace gives it the collective's arguments)",
        "SELECT c.collective_name, c.in_msg_nelems, c.dtype, e.kind, count(*) AS calls,\n"
        "       sum(e.dur) / 1e3 AS total_us\n"
        "FROM comm_args c JOIN events e ON e.rank = c.rank AND e.row = c.row\n"
        "GROUP BY ALL ORDER BY total_us DESC",
    ),
    Example(
        "Step times of each rank, and how far each rank is from the step's slowest",
        "SELECT step, rank, dur / 1e6 AS step_ms,\n"
        "       (max(dur) OVER (PARTITION BY step) - dur) / 1e6 AS behind_slowest_ms\n"
        "FROM steps ORDER BY step, rank",
    ),
    Example(
        "Launch delay: from each launch call to its kernel's start (µs), per kernel name",
        "SELECT k.name, count(*) AS kernels, median(k.ts - l.ts) / 1e3 AS median_delay_us,\n"
        "       max(k.ts - l.ts) / 1e3 AS max_delay_us\n"
        "FROM kernels k JOIN events l ON l.rank = k.rank AND l.row = k.partner\n"
        "GROUP BY k.name ORDER BY median_delay_us DESC LIMIT 10",
    ),
    Example(
        "Operators by total host time",
        "SELECT name, count(*) AS calls, sum(dur) / 1e6 AS total_ms\n"
        "FROM events WHERE kind = 'cpu_op' GROUP BY name ORDER BY total_ms DESC LIMIT 10",
    ),
    Example(
        "Memory copies: bytes and achieved bandwidth",
        "SELECT name, count(*) AS copies, sum(bytes) AS bytes,\n"
        "       sum(bytes) / sum(dur) AS gb_per_s\n"
        "FROM events e JOIN kernel_args a ON a.rank = e.rank AND a.row = e.row\n"
        "WHERE e.kind = 'memcpy' GROUP BY name ORDER BY bytes DESC",
    ),
    Example(
        "What bounds each step (the critical path's shares, %)",
        "SELECT rank, step, round(cpu_bound, 1) AS cpu, round(gpu_compute_bound, 1) AS compute,\n"
        "       round(gpu_communication_bound, 1) AS comm\n"
        "FROM critical_path ORDER BY rank, step",
    ),
    Example(
        "Who owns each step's GPU time, summed over ranks (ms)",
        "SELECT step, sum(gpu_compute_bound) / 1e6 AS compute_ms,\n"
        "       sum(cross_rank) / 1e6 AS waiting_for_a_rank_ms, sum(cpu_bound) / 1e6 AS host_ms\n"
        "FROM owners GROUP BY step ORDER BY step",
    ),
    Example(
        "The doctor's causes above threshold, by what removing each saves",
        "SELECT cause, cost_ns_per_step / 1e6 AS cost_ms, saving_ns_per_step / 1e6 AS saves_ms\n"
        "FROM doctor WHERE above_threshold ORDER BY saves_ms DESC NULLS LAST",
    ),
    Example(
        "Idle time by category on each stream (an analysis' side table by NAME.SIDE)",
        "SELECT rank, stream, idle_category, count, p50 FROM idle_time.interval_stats\n"
        "ORDER BY rank, stream, idle_category",
    ),
)
