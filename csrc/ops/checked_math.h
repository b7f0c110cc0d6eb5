// int64 arithmetic that refuses to wrap.
//
// Why: the kernels take any int64 nanosecond values, including ones near the ends of the
// range; a length or a sum that does not fit must be a clear error, never a wrapped number.
#pragma once
#include <cstdint>
#include <stdexcept>

namespace hta::ops {

// a - b; throws std::overflow_error when it does not fit in int64.
inline int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    throw std::overflow_error("time difference does not fit in int64");
  return r;
}

// acc += x; throws std::overflow_error when the sum does not fit in int64.
inline void checked_add_to(int64_t& acc, int64_t x) {
  if (__builtin_add_overflow(acc, x, &acc)) throw std::overflow_error("sum does not fit in int64");
}

}  // namespace hta::ops
