// All tables of one trace (or of one parsed chunk of it) plus the strings they point to.
#pragma once
#include <vector>

#include "trace/load_stats.h"
#include "trace/string_pool.h"
#include "trace/tables.h"

namespace hta {

struct TraceColumns {
  EventTable events;
  KernelArgTable kernel_args;
  OpArgTable op_args;
  CommArgTable comm_args;
  SyncArgTable sync_args;
  FlowTable flows;
  CounterTable counters;
  InstantTable instants;
  MetaTable meta;
  StepTable steps;
  StringPool strings;
  LoadStats stats;
  // Where the string ids sit once the trace is one (trace/string_ids.h: [floor, base]).
  int64_t string_id_base = kStringIdBase, string_id_floor = kStringIdBase + 1;

  template <class F>
  void for_each_table(F&& f) {
    f("events", events);
    f("kernel_args", kernel_args);
    f("op_args", op_args);
    f("comm_args", comm_args);
    f("sync_args", sync_args);
    f("flows", flows);
    f("counters", counters);
    f("instants", instants);
    f("meta", meta);
    f("steps", steps);
  }

  // Empties every table, keeping capacity, so a chunk's columns can be reused.
  void clear() {
    for_each_table([](const char*, auto& table) {
      table.for_each_column([](const char*, auto& col) { col.clear(); });
    });
    strings.clear();
    stats = LoadStats{};
  }

  // Reserves room for about `events` more events in every table, scaled by each table's
  // share in `sample` (a chunk already read).
  void reserve_like(const TraceColumns& sample, double scale);
};

// One column of one table as the schema sees it (tables.h declares them all).
struct ColumnDecl {
  const char* table;
  const char* name;
  const char* type;  // Arrow name of the value type
  ColumnSpec spec;
  bool floating;         // a float column: its sentinel is NaN
  int64_t int_sentinel;  // else missing<T>() of its type (-1; 255 for uint8)
};

// Every column of every table, in table and column order.
const std::vector<ColumnDecl>& column_decls();

// Merging a chunk parsed with its own StringPool into the whole trace. First rebase_chunk
// (on the chunk's worker thread): interns the chunk's strings into `pool` (the trace's),
// rewrites its string ids (and string pids/tids) to the pool's, and shifts the event rows
// that its columns point at (ColumnRole::kRow) by `row_base`, the number of events before
// the chunk; kTooLarge when the rows would pass 32 bits (trace/row_limit.h).
void rebase_chunk(TraceColumns& chunk, StringPool& pool, int64_t row_base);

// Then the append, split for threads: chunks take turns to claim their place at the end of
// every column (extend_columns: in file order, one at a time), then copy into it at once
// (copy_columns: any number in parallel). Extending never reallocates: `fits` says whether
// the capacity suffices, and reserving more must wait until no copy is in flight.
bool fits(const TraceColumns& into, const TraceColumns& chunk);
void reserve_for(TraceColumns& into, const TraceColumns& chunk, double growth);
// Sizes `into` once, from a first chunk: room for `expected_bytes` of input at the rows per
// byte of `sample` (which holds the rows of `sample_bytes`), twice over, so that the columns
// are not regrown (and copied) as the input goes on. Room never written is never resident
// (the pages are not touched), while a regrowth holds the old block and the new at once and
// faults the new one in: with 30 % to spare, flux_aiter's peak was 0.80 of its JSON, 0.61
// with twice the room. Nothing when either is 0.
void reserve_for_input(TraceColumns& into, const TraceColumns& sample, size_t sample_bytes,
                       uint64_t expected_bytes);
// The rows of each table, in for_each_table order.
std::vector<size_t> table_rows(const TraceColumns& columns);
// Gives each table about to outgrow its columns room for `final_rows` of it (its entry in
// for_each_table order; at least 1.5 times what it holds), in one step: tables that grow
// faster than the bytes read (GPU kernels and metadata, written after the CPU side) otherwise
// grow by doubling, each time copying what they hold and keeping the old block resident
// until the heap is trimmed.
void grow_ahead(TraceColumns& into, const std::vector<size_t>& final_rows);
// Appends every column of `part` (rebased) to `into`'s, freeing each of `part`'s columns once
// copied, so that the two together never hold much more than the rows once. `into`'s columns
// that are short of room grow to `growth` times what they then need.
void append_columns(TraceColumns& into, TraceColumns& part, double growth);
std::vector<void*> extend_columns(TraceColumns& into, const TraceColumns& chunk);
void copy_columns(const std::vector<void*>& places, const TraceColumns& chunk);

}  // namespace hta
