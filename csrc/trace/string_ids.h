// Where a trace's string pids/tids/flow ids ("Spans", "stream 7") go once it is one.
//
// Chunks parse with string pools of their own, so while parsing a name is stored at
// kStringIdBase - (pool id) and an integer id at or below kStringIdBase, which would meet
// that range, is interned as its decimal text. Once the chunks are merged (one pool),
// place_string_ids gives those integers their values back and, where one of them falls
// where the names sit, moves the names below it: numeric ids come out as written, over the
// whole int64 range, and never share a value with a name.
#pragma once
#include <cstdint>

#include "trace/trace_columns.h"

namespace hta {

// The names sit at base - (pool id), every one in [floor, base]; no integer id of the trace
// lies in that range. Without names, floor = base + 1 (an empty range).
struct StringIdRange {
  int64_t base = kStringIdBase;
  int64_t floor = kStringIdBase + 1;
};

StringIdRange place_string_ids(TraceColumns& trace);

}  // namespace hta
