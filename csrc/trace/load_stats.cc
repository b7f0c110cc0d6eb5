#include "trace/load_stats.h"

namespace hta {

const StatInfo& stat_info(Stat s) {
  static const StatInfo kInfo[] = {
#define HTA_STAT_INFO(name, sev, desc) {#name, sev, desc},
      HTA_STATS(HTA_STAT_INFO)
#undef HTA_STAT_INFO
  };
  return kInfo[static_cast<size_t>(s)];
}

void LoadStats::add(Stat s, uint64_t offset, std::string_view snippet) {
  const size_t i = static_cast<size_t>(s);
  counts_[i] += 1;
  if (examples_[i].size() < kMaxExamples) {
    examples_[i].push_back({offset, std::string(snippet.substr(0, 120))});
  }
}

void LoadStats::merge(const LoadStats& other) {
  for (size_t i = 0; i < kNumStats; ++i) {
    counts_[i] += other.counts_[i];
    for (const auto& ex : other.examples_[i]) {
      if (examples_[i].size() < kMaxExamples) examples_[i].push_back(ex);
    }
  }
}

}  // namespace hta
