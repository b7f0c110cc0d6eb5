// Small traces built row by row for the C++ tests: each helper appends one row with every
// column set as the parser leaves it (missing values -1, kind and class 0, no links yet).
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "trace/trace_columns.h"

namespace hta::test {

// The stored form of a string pid, tid or flow id while parsing: kStringIdBase - (pool id).
inline int64_t text_id(TraceColumns& t, std::string_view text) {
  return kStringIdBase - t.strings.intern(text);
}

template <class Table>
void append_missing_row(Table& table) {
  table.for_each_column([](const char*, auto& col) {
    col.push_back(missing<typename std::decay_t<decltype(col)>::value_type>());
  });
}

// A complete (ph X) event; returns its row.
inline EventRow add_event(TraceColumns& t, std::string_view cat, std::string_view name, int64_t pid,
                          int64_t tid, int64_t ts, int64_t dur, int64_t correlation = -1,
                          int64_t external_id = -1) {
  auto& e = t.events;
  const auto row = static_cast<EventRow>(e.size());
  append_missing_row(e);
  e.ts.back() = ts;
  e.dur.back() = dur;
  e.name.back() = t.strings.intern(name);
  e.cat.back() = t.strings.intern(cat);
  e.pid.back() = pid;
  e.tid.back() = tid;
  e.kind.back() = 0;
  e.kernel_class.back() = 0;
  e.correlation.back() = correlation;
  e.external_id.back() = external_id;
  return row;
}

// A flow endpoint (ph s, f or t); returns its row in the flows table.
inline size_t add_flow(TraceColumns& t, char phase, std::string_view cat, int64_t id, int64_t pid,
                       int64_t tid, int64_t ts) {
  auto& f = t.flows;
  append_missing_row(f);
  f.ts.back() = ts;
  f.pid.back() = pid;
  f.tid.back() = tid;
  f.id.back() = id;
  f.phase.back() = static_cast<uint8_t>(phase);
  f.binds_enclosing.back() = 0;
  f.cat.back() = t.strings.intern(cat);
  f.name.back() = t.strings.intern("launch");
  return f.size() - 1;
}

}  // namespace hta::test
