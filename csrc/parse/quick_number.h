// The writers' plain spellings of numbers, read from 8-byte words and one SSE2 mask, inline
// where a value is read: -?digits (up to 16) and, for microseconds, a fraction of 1 to 3
// digits. Anything else is number_text.cc's general path, which owns the grammar; this is
// only its fast path (a call and a status switch for each of a trace's ~3 numbers an event
// were ~4 % of a load).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hta::quick {

inline constexpr uint64_t kPow10[] = {1,      10,      100,      1000,     10000,
                                      100000, 1000000, 10000000, 100000000};

// The value of the first `n` (1 to 8) digits of `w`: the bytes after them shifted out, zeros
// (leading zero digits) shifted in, then combined pairwise (2, then 4, then 8 at a time)
// with multiplies. Subtracting '0' from a byte below it borrows only from the bytes after
// it, which are shifted out.
[[gnu::always_inline]] inline uint64_t digits_value(uint64_t w, unsigned n) {
  w = (w - 0x3030303030303030ULL) << (8 * (8 - n));
  w = w * 10 + (w >> 8);
  w = ((w & 0x000000FF000000FFULL) * 100 + ((w >> 16) & 0x000000FF000000FFULL));
  return (w & 0xFFFFFFFFULL) * 10000 + (w >> 32);
}

// Bit i set when byte i of the 32 at p is an ASCII digit: one pass over the bytes that
// finds where the integer digits and the fraction's end (counting them 8 bytes at a time,
// leading_digits, took three passes and a third of a timestamp's instructions).
[[gnu::always_inline]] inline uint32_t digit_bits(const char* p) {
#if defined(__SSE2__)
  const __m128i zero_char = _mm_set1_epi8('0');
  const __m128i nine = _mm_set1_epi8(9);
  const auto half = [&](const char* q) {
    // byte - '0' is 0..9 for a digit: it saturates to 0 when 9 is taken away.
    const __m128i d = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), zero_char);
    const __m128i is_digit = _mm_cmpeq_epi8(_mm_subs_epu8(d, nine), _mm_setzero_si128());
    return static_cast<uint32_t>(_mm_movemask_epi8(is_digit));
  };
  return half(p) | half(p + 16) << 16;
#else
  uint32_t bits = 0;
  for (unsigned i = 0; i < 32; ++i) bits |= static_cast<uint32_t>(p[i] >= '0' && p[i] <= '9') << i;
  return bits;
#endif
}

// The value of the `n` (1 to 16) digits at p.
[[gnu::always_inline]] inline uint64_t digits_at(const char* p, unsigned n) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if (n <= 8) return digits_value(w, n);
  uint64_t low;
  std::memcpy(&low, p + n - 8, 8);
  return digits_value(w, n - 8) * 100000000 + digits_value(low, 8);
}

inline bool only_space(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') return false;
  }
  return true;
}

// The writers' plain spellings, -?digits with up to 16 digits (and, as_micros, a fraction of
// 1 to 3 digits) and JSON whitespace after: the integer, or the microseconds as
// nanoseconds; false for anything else, the general path's to judge. Reads 32 bytes at the
// text's start.
[[gnu::always_inline]] inline bool quick_number(std::string_view text, bool as_micros,
                                                int64_t& out) {
  const char* p = text.data();
  const size_t size = text.size();
  if (size == 0) return false;
  const bool negative = p[0] == '-';
  const unsigned first = negative ? 1 : 0;
  const uint32_t digits = digit_bits(p) >> first;
  const auto whole = static_cast<unsigned>(__builtin_ctz(~digits | 0x80000000u));
  // No digits, more than 16 (17 and up are the general path's), or a leading zero before
  // another digit (not a JSON number).
  if (whole == 0 || whole > 16 || (p[first] == '0' && whole > 1)) return false;
  uint64_t v = digits_at(p + first, whole);
  size_t i = first + whole;
  if (as_micros) {
    uint64_t fraction = 0;
    if (i < size && p[i] == '.') {
      const auto places = static_cast<unsigned>(__builtin_ctz(~(digits >> (whole + 1))));
      if (places == 0 || places > 3 || places > size - i - 1) return false;
      uint64_t w;
      std::memcpy(&w, p + i + 1, 8);
      fraction = digits_value(w, places) * kPow10[3 - places];
      i += 1 + places;
    }
    v = v * 1000 + fraction;  // below 10^19: no wrap in 64 bits
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;  // -2^63 too: the general path
  if (i > size || !only_space(p + i, size - i)) return false;
  out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

}  // namespace hta::quick
