// The one place where number spellings become integers: integer microseconds, fractional
// microseconds with nanosecond digits, exponents and numeric strings all go through here,
// and none through a double, so 19-digit epoch timestamps stay exact.
#pragma once
#include <cstdint>
#include <string_view>

#include "parse/quick_number.h"

namespace hta {

enum class NumberStatus : uint8_t { kOk, kNotANumber, kOutOfRange };

// A decimal number of microseconds -> int64 nanoseconds, rounded half away from zero.
NumberStatus micros_to_ns(std::string_view text, int64_t& out);

// A decimal integer (an exact fraction such as "12.0" is accepted) -> int64.
NumberStatus parse_int64(std::string_view text, int64_t& out);

// The same two, for text whose first 32 bytes may be read (inside a parser's chunk, which
// simdjson's padding follows): the writers' plain spellings are read from 8-byte words
// (quick_number.h), the rest as above.
inline NumberStatus micros_to_ns_padded(std::string_view text, int64_t& out) {
  if (__builtin_expect(quick::quick_number(text, true, out), 1)) return NumberStatus::kOk;
  return micros_to_ns(text, out);
}
inline NumberStatus parse_int64_padded(std::string_view text, int64_t& out) {
  if (__builtin_expect(quick::quick_number(text, false, out), 1)) return NumberStatus::kOk;
  return parse_int64(text, out);
}

// Any decimal number -> double.
NumberStatus parse_double(std::string_view text, double& out);

// Strips surrounding JSON whitespace and, for numeric strings, the quotes.
std::string_view trim_number_text(std::string_view text);

}  // namespace hta
