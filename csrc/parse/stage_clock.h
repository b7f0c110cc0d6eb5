// Nanoseconds on a steady clock, for the loader's per-stage timings (parse_s, merge_s).
#pragma once
#include <chrono>
#include <cstdint>

namespace hta {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace hta
