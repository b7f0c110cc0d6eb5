#include "parse/number_text.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>

#include "parse/quick_number.h"

namespace hta {
namespace {

// A decimal number as digits x 10^exponent, with up to 36 significant digits kept.
struct Decimal {
  bool negative = false;
  unsigned __int128 digits = 0;
  int exponent = 0;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JSON's number grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and nothing else:
// "01", "1.", ".5", "+1", "1e" and "nan" are not numbers. Digits past the 36th are dropped
// (their place kept in the exponent); exponents are clamped far past any int64 or double.
bool parse_decimal(std::string_view s, Decimal& d) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') {
    d.negative = true;
    ++i;
  }
  int kept = 0;
  auto take = [&](char c, bool fraction) {
    if (kept < 36) {
      if (kept > 0 || c != '0') ++kept;
      d.digits = d.digits * 10 + static_cast<unsigned>(c - '0');
      if (fraction) --d.exponent;
    } else if (!fraction) {
      ++d.exponent;  // dropped integer digit
    }
  };
  if (i == s.size() || !is_digit(s[i])) return false;
  if (s[i] == '0') {
    ++i;  // a leading zero stands alone
  } else {
    for (; i < s.size() && is_digit(s[i]); ++i) take(s[i], false);
  }
  if (i < s.size() && s[i] == '.') {
    if (++i == s.size() || !is_digit(s[i])) return false;
    for (; i < s.size() && is_digit(s[i]); ++i) take(s[i], true);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative_exp = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative_exp = s[i++] == '-';
    if (i == s.size() || !is_digit(s[i])) return false;
    int exp = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
    }
    d.exponent += negative_exp ? -exp : exp;
  }
  return i == s.size();
}

// digits x 10^shift rounded half away from zero, into int64.
NumberStatus scale_to_int64(const Decimal& d, int shift, int64_t& out) {
  unsigned __int128 v = d.digits;
  const unsigned __int128 limit =
      static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + (d.negative ? 1 : 0);
  if (v == 0) {
    out = 0;
    return NumberStatus::kOk;
  }
  if (shift >= 0) {
    for (int k = 0; k < shift; ++k) {
      if (v > limit / 10) return NumberStatus::kOutOfRange;
      v *= 10;
    }
  } else {
    if (shift < -38) {
      v = 0;
    } else {
      unsigned __int128 div = 1;
      for (int k = 0; k < -shift; ++k) div *= 10;
      const unsigned __int128 rem = v % div;
      v /= div;
      if (rem * 2 >= div) ++v;
    }
  }
  if (v > limit) return NumberStatus::kOutOfRange;
  out = d.negative ? static_cast<int64_t>(-static_cast<__int128>(v)) : static_cast<int64_t>(v);
  return NumberStatus::kOk;
}

}  // namespace

std::string_view trim_number_text(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    s = s.substr(1, s.size() - 2);
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  }
  return s;
}

namespace {

// The digits the 8 bytes of `w` start with (the first byte lowest): how many, 0 to 8. A byte
// is a digit when its high nibble is 3 and adding 6 to it does not carry out of the low
// nibble; a carry out of a byte of 0xFA or more spills only into the bytes after it, past
// the first that is not a digit, which alone is looked for.
[[gnu::always_inline]] inline unsigned leading_digits(uint64_t w) {
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL;
  const uint64_t off =
      ((w & kHigh) | (((w + 0x0606060606060606ULL) & kHigh) >> 4)) ^ 0x3333333333333333ULL;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  const uint64_t not_digit = (((off & kLow7) + kLow7) | off) & 0x8080808080808080ULL;
  return not_digit ? static_cast<unsigned>(__builtin_ctzll(not_digit)) / 8 : 8;
}

// Eight ASCII digits at p: their value, or false when any byte is not a digit.
[[gnu::always_inline]] inline bool eight_digits(const char* p, uint64_t& out) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if (leading_digits(w) != 8) return false;
  out = quick::digits_value(w, 8);
  return true;
}

// The digits from s[i] on, appended to v; returns where they end.
[[gnu::always_inline]] inline size_t take_digits(std::string_view s, size_t i, uint64_t& v) {
  const size_t size = s.size();
  uint64_t block;
  while (i + 8 <= size && eight_digits(s.data() + i, block)) {
    v = v * 100000000 + block;
    i += 8;
  }
  for (; i < size && is_digit(s[i]); ++i) v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  return i;
}

// Fast path for the common spellings: an optional '-', up to 19 digits with at most one
// '.', no exponent. Accumulates in 64 bits; false sends the text to the general path, which
// also rejects what JSON does not call a number ("01", "1.", ".5"). Inlined into its two
// callers: as a call (which GCC chooses once the grammar checks are in), it cost ~5% of a
// whole parse.
[[gnu::always_inline]] inline bool parse_simple(std::string_view s, bool& negative,
                                                uint64_t& digits, int& exponent) {
  const size_t size = s.size();
  negative = size > 0 && s[0] == '-';
  const size_t first = negative ? 1 : 0;
  // Integer digits, then (once) a '.' and the fraction's. Past 19 digits v has wrapped, and
  // the count sends the text to the general path.
  uint64_t v = 0;
  size_t i = take_digits(s, first, v);
  const size_t int_digits = i - first;
  size_t frac = 0;
  if (i < size && s[i] == '.') {
    const size_t dot = ++i;
    i = take_digits(s, dot, v);
    frac = i - dot;
    if (frac == 0) return false;  // "1." is not a number
  }
  if (i != size) return false;
  // JSON's grammar: digits before the '.', and no leading zero before another digit.
  if (int_digits == 0 || int_digits + frac > 19 || (s[first] == '0' && int_digits > 1)) {
    return false;
  }
  digits = v;
  exponent = -static_cast<int>(frac);
  return true;
}

NumberStatus scale_simple(bool negative, uint64_t digits, int shift, int64_t& out) {
  Decimal d;
  d.negative = negative;
  d.digits = digits;
  return scale_to_int64(d, shift, out);
}

// The powers of ten a double holds exactly.
constexpr double kExactPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

}  // namespace

NumberStatus micros_to_ns(std::string_view text, int64_t& out) {
  text = trim_number_text(text);
  bool negative;
  uint64_t digits;
  int exponent;
  if (parse_simple(text, negative, digits, exponent)) {
    const int shift = exponent + 3;
    if (shift >= 0 && digits <= 9223372036854775ULL) {  // no overflow for shift <= 3
      int64_t v = static_cast<int64_t>(digits);
      for (int k = 0; k < shift; ++k) v *= 10;
      out = negative ? -v : v;
      return NumberStatus::kOk;
    }
    return scale_simple(negative, digits, shift, out);
  }
  Decimal d;
  if (!parse_decimal(text, d)) return NumberStatus::kNotANumber;
  return scale_to_int64(d, d.exponent + 3, out);
}

NumberStatus parse_int64(std::string_view text, int64_t& out) {
  text = trim_number_text(text);
  bool negative;
  uint64_t digits;
  int exponent;
  if (parse_simple(text, negative, digits, exponent) && exponent == 0) {
    if (digits <= static_cast<uint64_t>(INT64_MAX)) {
      out = negative ? -static_cast<int64_t>(digits) : static_cast<int64_t>(digits);
      return NumberStatus::kOk;
    }
    if (negative && digits == static_cast<uint64_t>(INT64_MAX) + 1) {
      out = INT64_MIN;
      return NumberStatus::kOk;
    }
    return NumberStatus::kOutOfRange;
  }
  Decimal d;
  if (!parse_decimal(text, d)) return NumberStatus::kNotANumber;
  if (d.exponent < 0 && d.digits != 0) {
    // Accept "12.0" but not "12.5": an integer field with a fraction is not an integer.
    // Zero is one at any exponent ("0e-40").
    unsigned __int128 div = 1;
    for (int k = 0; k < -d.exponent && k < 38; ++k) div *= 10;
    if (d.exponent < -38 || d.digits % div != 0) return NumberStatus::kNotANumber;
  }
  return scale_to_int64(d, d.exponent, out);
}

NumberStatus parse_double(std::string_view text, double& out) {
  std::string_view s = trim_number_text(text);
  // The writers' spellings (up to 15 or so digits, a fraction, no exponent): the digits and
  // 10^digits-after-the-point are both exact doubles, so their quotient, one IEEE
  // division, is the correctly rounded value from_chars gives (Clinger's fast path).
  bool negative;
  uint64_t digits;
  int exponent;
  if (parse_simple(s, negative, digits, exponent) && digits <= (uint64_t{1} << 53) &&
      exponent >= -22) {
    const double v = static_cast<double>(digits) / kExactPow10[-exponent];
    out = negative ? -v : v;
    return NumberStatus::kOk;
  }
  // from_chars alone would take "inf", "nan", "01" and ".5".
  Decimal grammar;
  if (!parse_decimal(s, grammar)) return NumberStatus::kNotANumber;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return NumberStatus::kNotANumber;
  return NumberStatus::kOk;
}

}  // namespace hta
