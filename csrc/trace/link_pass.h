// The link pass: after parsing, give every event its kind and kernel class, link launches
// and GPU events (correlation first, ac2g flows as a fallback; a graph launch owns many
// GPU events), bind flow endpoints to events, nest CPU events per thread and assign
// profiler steps. Every step is a sort and a sweep: O(n log n).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_columns.h"

namespace hta {

struct LinkOptions {
  // (regex, KernelClass value) tried before the built-in kernel rules.
  std::vector<std::pair<std::string, int>> kernel_class_rules;
  // Added to every timestamp (baseTimeNanoseconds), so ranks share one clock.
  int64_t base_time_ns = 0;
  // Threads for the sorts (the loader passes its own thread count).
  int threads = 1;
};

void link_trace(TraceColumns& trace, const LinkOptions& options);

}  // namespace hta
