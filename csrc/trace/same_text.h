// Equality of two texts, without a call for short ones: most texts compared while loading
// (pid and tid tokens, argument shapes, short op names) are under 17 bytes, where memcmp's
// call and dispatch cost more than the comparison itself.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hta {

inline bool same_text(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  auto load8 = [](const char* s) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    return w;
  };
  auto load4 = [](const char* s) {
    uint32_t w;
    std::memcpy(&w, s, 4);
    return w;
  };
  if (n > 16) return std::memcmp(p, q, n) == 0;
  // Two loads from each end, overlapping when n < 16 (never past either text).
  if (n >= 8) return ((load8(p) ^ load8(q)) | (load8(p + n - 8) ^ load8(q + n - 8))) == 0;
  if (n >= 4) return ((load4(p) ^ load4(q)) | (load4(p + n - 4) ^ load4(q + n - 4))) == 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != q[i]) return false;
  }
  return true;
}

}  // namespace hta
