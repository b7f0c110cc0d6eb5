// How many items are inside each group after every entry and exit, row by row.
//
// Why: the CUDA launch queue as a table of change points. Each launch enters its stream's
// queue when the call starts and leaves it when its GPU work starts; the reference's queue
// series lists every entry and exit with the queue length after it. step_counter merges the
// changes of one timestamp into one row; this keeps one row per change, in the order the
// series is read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// One row per entry and per exit, sorted by (group, ts, tier, row), where rows 0..n-1 are the
// entries of items 0..n-1 and rows n..2n-1 their exits. Tiers at one timestamp: exits (0),
// entries (1), exits of items that entered at that same time (2), so an item leaving as
// another enters never shows as a peak and no level is below zero.
struct Occupancy {
  std::vector<int64_t> item;      // the item of each row
  std::vector<uint8_t> entering;  // 1 for its entry, 0 for its exit
  std::vector<int64_t> group;
  std::vector<int64_t> ts;
  std::vector<int64_t> level;  // items in the row's group after it (groups start empty)
};

// Item i enters group[i] at enter[i] and leaves it at leave[i].
Occupancy occupancy(const int64_t* group, const int64_t* enter, const int64_t* leave, size_t n);

}  // namespace hta::ops
