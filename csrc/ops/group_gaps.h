// Gaps between consecutive events of each group, and the event that ends each gap.
//
// Why: GPU idle time analysis. On each stream (or device) the gaps between kernels are idle
// time; the kernel right after a gap, through its launch, tells why the GPU waited (a slow
// launch, a host-side sync, a data loader stall). Knowing that row lets an analysis classify
// every gap without a loop over kernels x gaps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// Gap k is [start[k], end[k]) in group[k]; next_index[k] is the input row of the event that
// ends it. Rows sorted by (group, start).
struct Gaps {
  std::vector<int64_t> group;
  std::vector<int64_t> start;
  std::vector<int64_t> end;
  std::vector<int64_t> next_index;
};

// Per group, the events are taken in order of (start, end, row). A gap lies before an event
// whose start exceeds the running maximum end of the events before it in that group; it runs
// from that maximum to the event's start. Zero-length events take part (they end a gap); an
// event with end < start counts as zero-length at its start. No gap is reported before a
// group's first event or after its last.
//
// touching: also report the gaps of length zero, before an event that starts exactly where
// the events before it end. Ends are open (an event [a, b) leaves b free), while a zero-length
// event covers its own instant: an event starting there ends no gap, as on a GPU stream where
// a marker and the kernel after it run back to back.
Gaps group_gaps(const int64_t* group, const int64_t* start, const int64_t* end, size_t n,
                bool touching = false);

}  // namespace hta::ops
