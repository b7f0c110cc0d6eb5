// Events grouped by (pid, tid) and ordered by start within each group, longer events first
// on ties. Flow binding and CPU nesting both sweep events in this order, so it is built
// once. Grouping is a counting sort (events of one thread are few in kind but many); only
// the per-thread runs are sorted by time, and those are usually sorted already in the file.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/tables.h"

namespace hta {

class ThreadOrder {
 public:
  // `threads`: worker threads for sorting the per-thread runs (1 = the caller's only).
  ThreadOrder(const EventTable& e, int threads);

  // Rows of all events: thread by thread, then by (ts, longer first, row). 32-bit, as this
  // scratch is the loader's peak memory; the constructor refuses 2^32 events or more.
  const std::vector<uint32_t>& rows() const { return rows_; }
  // The [begin, end) range of rows() holding (pid, tid)'s events; empty if none.
  std::pair<size_t, size_t> range(int64_t pid, int64_t tid) const;
  // The threads, in order of first appearance: thread g holds rows()[begin(g), begin(g + 1)).
  size_t threads() const { return begin_.size() - 1; }
  size_t begin(size_t g) const { return begin_[g]; }

 private:
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& k) const {
      return std::hash<int64_t>()(k.first * 0x9E3779B97F4A7C15LL ^ k.second);
    }
  };
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> group_of_;
  std::vector<size_t> begin_;  // group g holds rows_[begin_[g], begin_[g + 1])
  std::vector<uint32_t> rows_;
};

}  // namespace hta
