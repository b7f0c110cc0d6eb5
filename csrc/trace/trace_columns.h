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
};

// Appends `chunk` to `into`, re-interning its strings; rows in argument tables are shifted
// to the merged event numbering.
void append_chunk(TraceColumns& into, TraceColumns& chunk);

}  // namespace hta
