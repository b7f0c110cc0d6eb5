// All tables of one trace (or of one parsed chunk of it) plus the strings they point to.
#pragma once
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
  StringPool strings;
  LoadStats stats;

  template <class F> void for_each_table(F&& f) {
    f("events", events);
    f("kernel_args", kernel_args);
    f("op_args", op_args);
    f("comm_args", comm_args);
    f("sync_args", sync_args);
    f("flows", flows);
    f("counters", counters);
    f("instants", instants);
    f("meta", meta);
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

// Appends `chunk` to `into` (leaving `chunk` to be cleared), re-interning its strings; rows in argument tables are shifted
// to the merged event numbering.
void append_chunk(TraceColumns& into, TraceColumns& chunk);

}  // namespace hta
