// Number spellings into integers (parse/number_text.h) and the fast path that reads the
// writers' plain spellings from 8-byte words (parse/quick_number.h): every answer below is
// known by construction, and the fast path must agree with the general one wherever it
// answers at all.
#include "parse/quick_number.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include "parse/number_text.h"

namespace hta {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// `text` at the start of a buffer with 32 bytes of `fill` after it, as in a parser's chunk
// (the fast path reads 32 bytes whatever the text's length): the view holds the text alone.
class Padded {
 public:
  explicit Padded(std::string_view text, char fill = ' ')
      : buf_(std::string(text) + std::string(32, fill)), size_(text.size()) {}
  std::string_view view() const { return {buf_.data(), size_}; }

 private:
  std::string buf_;
  size_t size_;
};

// The fast path alone: true and its value, or false when it leaves the text to the general
// path.
bool quick(std::string_view text, bool as_micros, int64_t& out, char fill = ' ') {
  const Padded p(text, fill);
  return quick::quick_number(p.view(), as_micros, out);
}

// The value read, for texts that are numbers in range (a failed check otherwise).
int64_t micros(std::string_view text) {
  int64_t out = 0;
  CHECK_MESSAGE(micros_to_ns(text, out) == NumberStatus::kOk, text);
  return out;
}

int64_t integer(std::string_view text) {
  int64_t out = 0;
  CHECK_MESSAGE(parse_int64(text, out) == NumberStatus::kOk, text);
  return out;
}

NumberStatus micros_status(std::string_view text) {
  int64_t out = 0;
  return micros_to_ns(text, out);
}

NumberStatus int_status(std::string_view text) {
  int64_t out = 0;
  return parse_int64(text, out);
}

// Both paths' answer for text read from a padded chunk, checked against each other.
NumberStatus padded_micros(std::string_view text, int64_t& out, char fill = ' ') {
  const Padded p(text, fill);
  const NumberStatus s = micros_to_ns_padded(p.view(), out);
  int64_t general = 0;
  CHECK(micros_to_ns(text, general) == s);
  if (s == NumberStatus::kOk) CHECK(general == out);
  return s;
}

NumberStatus padded_int(std::string_view text, int64_t& out, char fill = ' ') {
  const Padded p(text, fill);
  const NumberStatus s = parse_int64_padded(p.view(), out);
  int64_t general = 0;
  CHECK(parse_int64(text, general) == s);
  if (s == NumberStatus::kOk) CHECK(general == out);
  return s;
}

TEST_CASE("digits_value and digits_at read 1 to 16 ASCII digits") {
  const std::string digits = "1234567890123456" + std::string(16, 'x');
  uint64_t expected = 0;
  for (unsigned n = 1; n <= 16; ++n) {
    expected = expected * 10 + static_cast<uint64_t>(digits[n - 1] - '0');
    CHECK(quick::digits_at(digits.data(), n) == expected);
  }
  const std::string zeros = "00000007" + std::string(24, 'x');
  CHECK(quick::digits_at(zeros.data(), 8) == 7);
  CHECK(quick::digits_at(zeros.data(), 1) == 0);
}

TEST_CASE("digit_bits marks the ASCII digits among 32 bytes") {
  std::string s(32, 'a');
  s[0] = '0';
  s[5] = '9';
  s[16] = '5';
  s[31] = '1';
  s[7] = '/';  // the bytes either side of '0'..'9'
  s[8] = ':';
  CHECK(quick::digit_bits(s.data()) == ((1u << 0) | (1u << 5) | (1u << 16) | (1u << 31)));
}

TEST_CASE("the fast path reads integers") {
  int64_t v = -1;
  CHECK(quick("0", false, v));
  CHECK(v == 0);
  CHECK(quick("-0", false, v));
  CHECK(v == 0);
  CHECK(quick("7", false, v));
  CHECK(v == 7);
  CHECK(quick("-42", false, v));
  CHECK(v == -42);
  CHECK(quick("1234567890123456", false, v));  // 16 digits, the most it reads
  CHECK(v == 1234567890123456);
  CHECK(quick("-9999999999999999", false, v));
  CHECK(v == -9999999999999999);
  CHECK(quick("12 \t\r\n", false, v));  // JSON whitespace after the digits
  CHECK(v == 12);
}

TEST_CASE("the fast path reads microseconds with 0 to 3 decimals as nanoseconds") {
  int64_t v = -1;
  CHECK(quick("5", true, v));
  CHECK(v == 5000);
  CHECK(quick("1.5", true, v));
  CHECK(v == 1500);
  CHECK(quick("1.05", true, v));
  CHECK(v == 1050);
  CHECK(quick("1.005", true, v));
  CHECK(v == 1005);
  CHECK(quick("-2.25", true, v));
  CHECK(v == -2250);
  CHECK(quick("0.001", true, v));
  CHECK(v == 1);
  CHECK(quick("1700000000000000.123", true, v));  // an epoch in µs: 19 digits, exact
  CHECK(v == 1700000000000000123);
  CHECK(quick("9223372036854775.807", true, v));
  CHECK(v == kMax);
}

TEST_CASE("the fast path leaves every other spelling to the general path") {
  int64_t v = 0;
  for (const char* text :
       {"", "-", "+1", " 1", "01", "-01", "1.", ".5", "1e3", "1E3", "12345678901234567", "1.2345",
        "\"1\"", "1x", "1 2", "nan", "inf", "9223372036854775.808", "-9223372036854775.808"}) {
    CAPTURE(text);
    CHECK_FALSE(quick(text, true, v));
  }
  // An integer read for an integer field: any fraction is the general path's.
  CHECK_FALSE(quick("1.5", false, v));
  CHECK_FALSE(quick("12.0", false, v));
}

TEST_CASE("the fast path never reads past the text into the chunk after it") {
  int64_t v = 0;
  // Digits, a point or a fraction right after the text belong to the next token.
  for (char fill : {'7', '0', '.', '\0', ' ', '-'}) {
    CAPTURE(fill);
    int64_t out = 0;
    if (quick("12", false, v, fill)) CHECK(v == 12);
    CHECK(padded_int("12", out, fill) == NumberStatus::kOk);
    CHECK(out == 12);
    CHECK(padded_micros("12", out, fill) == NumberStatus::kOk);
    CHECK(out == 12000);
    CHECK(padded_micros("1.5", out, fill) == NumberStatus::kOk);
    CHECK(out == 1500);
    CHECK(padded_micros("1234567890123456", out, fill) == NumberStatus::kOk);
    CHECK(out == 1234567890123456000);
    CHECK(padded_micros("1.", out, fill) == NumberStatus::kNotANumber);
    CHECK(padded_micros("-", out, fill) == NumberStatus::kNotANumber);
    CHECK(padded_int("", out, fill) == NumberStatus::kNotANumber);
  }
}

TEST_CASE("integers over the whole int64 range, and past it") {
  CHECK(integer("0") == 0);
  CHECK(integer("-0") == 0);
  CHECK(integer("9223372036854775807") == kMax);
  CHECK(integer("-9223372036854775808") == kMin);
  CHECK(int_status("9223372036854775808") == NumberStatus::kOutOfRange);
  CHECK(int_status("-9223372036854775809") == NumberStatus::kOutOfRange);
  CHECK(int_status("18446744073709551616") == NumberStatus::kOutOfRange);  // 2^64: no wrap
  CHECK(int_status("99999999999999999999") == NumberStatus::kOutOfRange);
  CHECK(int_status(std::string(400, '9')) == NumberStatus::kOutOfRange);
  int64_t out = 0;
  CHECK(padded_int("9223372036854775807", out) == NumberStatus::kOk);
  CHECK(out == kMax);
  CHECK(padded_int("-9223372036854775808", out) == NumberStatus::kOk);
  CHECK(out == kMin);
}

TEST_CASE("an integer field takes exact fractions and exponents, nothing inexact") {
  CHECK(integer("12.0") == 12);
  CHECK(integer("-12.000") == -12);
  CHECK(integer("1e3") == 1000);
  CHECK(integer("1.5e1") == 15);
  CHECK(integer("1500e-2") == 15);
  CHECK(integer("0.0") == 0);
  CHECK(integer("0e-5") == 0);
  CHECK(integer("9.223372036854775807e18") == kMax);
  CHECK(int_status("12.5") == NumberStatus::kNotANumber);
  CHECK(int_status("1e-1") == NumberStatus::kNotANumber);
  CHECK(int_status("1e19") == NumberStatus::kOutOfRange);
  CHECK(int_status("1e400") == NumberStatus::kOutOfRange);
  CHECK(int_status("1e-400") == NumberStatus::kNotANumber);
}

TEST_CASE("zero is an integer however many places its fraction has") {
  CHECK(integer("0." + std::string(40, '0')) == 0);
  CHECK(integer("0e-39") == 0);
  CHECK(integer("-0e-400") == 0);
}

TEST_CASE("microseconds become nanoseconds, rounded half away from zero") {
  CHECK(micros("0") == 0);
  CHECK(micros("1") == 1000);
  CHECK(micros("-1") == -1000);
  CHECK(micros("1.0005") == 1001);
  CHECK(micros("1.00049") == 1000);
  CHECK(micros("-1.0005") == -1001);
  CHECK(micros("-1.00049") == -1000);
  CHECK(micros("0.0005") == 1);
  CHECK(micros("-0.0005") == -1);
  CHECK(micros("0.0004999") == 0);
  // 20 significant digits: past the 64-bit fast paths, still exact.
  CHECK(micros("1700000000000000.1234") == 1700000000000000123);
  CHECK(micros("1700000000000000.1235") == 1700000000000000124);
  CHECK(micros("1700000000000000123.4e-3") == 1700000000000000123);
  // 36 significant digits are kept; what follows is too small to round across a half.
  CHECK(micros("0.000499999999999999999999999999999999999999999") == 0);
  CHECK(micros("0.000500000000000000000000000000000000000000001") == 1);
}

TEST_CASE("microseconds with exponents") {
  CHECK(micros("1e3") == 1000000);
  CHECK(micros("1E+3") == 1000000);
  CHECK(micros("1.5e-3") == 2);  // 1.5 ns, half away from zero
  CHECK(micros("-2.5e-3") == -3);
  CHECK(micros("1e-4") == 0);
  CHECK(micros("1e-400") == 0);
  CHECK(micros("1.7e15") == 1700000000000000000);
  CHECK(micros_status("1e16") == NumberStatus::kOutOfRange);  // 10^19 ns
  CHECK(micros_status("1e400") == NumberStatus::kOutOfRange);
  CHECK(micros_status("-1e400") == NumberStatus::kOutOfRange);
}

TEST_CASE("microseconds at the edges of int64 nanoseconds") {
  CHECK(micros("9223372036854775.807") == kMax);
  CHECK(micros("-9223372036854775.808") == kMin);
  CHECK(micros_status("9223372036854775.808") == NumberStatus::kOutOfRange);
  CHECK(micros_status("-9223372036854775.809") == NumberStatus::kOutOfRange);
  CHECK(micros_status("9999999999999999") == NumberStatus::kOutOfRange);  // 16 digits of µs
  CHECK(micros("9223372036854775.8074") == kMax);                         // rounds down
  CHECK(micros_status("9223372036854775.8075") == NumberStatus::kOutOfRange);
  int64_t out = 0;
  CHECK(padded_micros("9999999999999999", out) == NumberStatus::kOutOfRange);
  CHECK(padded_micros("-9223372036854775.808", out) == NumberStatus::kOk);
  CHECK(out == kMin);
}

TEST_CASE("what JSON does not call a number is not one") {
  for (const char* text :
       {"",         " ",   "-",   "+1",    "01",   "-01",  "00",   "1.",  ".5",   "-.5",
        "1e",       "1e+", "1e-", "e3",    "1.e3", "0x10", "nan",  "NaN", "inf",  "-inf",
        "Infinity", "1,5", "1 2", "1_000", "--1",  "12a",  "\"\"", "\"1", "true", "null"}) {
    CAPTURE(text);
    CHECK(micros_status(text) == NumberStatus::kNotANumber);
    CHECK(int_status(text) == NumberStatus::kNotANumber);
    double d = 0;
    CHECK(parse_double(text, d) == NumberStatus::kNotANumber);
  }
}

TEST_CASE("surrounding whitespace and the quotes of a numeric string are dropped") {
  CHECK(trim_number_text("  12 \n") == "12");
  CHECK(trim_number_text("\"12\"") == "12");
  CHECK(trim_number_text(" \" 12\t\" ") == "12");
  CHECK(trim_number_text("\"") == "\"");
  CHECK(trim_number_text("") == "");
  CHECK(micros("\"1.5\"") == 1500);
  CHECK(integer(" \"-7\"\n") == -7);
  CHECK(micros("\t3\r\n") == 3000);
}

TEST_CASE("doubles: the exact fast path and from_chars agree on the correctly rounded value") {
  const auto value = [](std::string_view text) {
    double d = -1;
    CHECK_MESSAGE(parse_double(text, d) == NumberStatus::kOk, text);
    return d;
  };
  CHECK(value("0") == 0.0);
  CHECK(value("1.5") == 1.5);
  CHECK(value("-0.1") == -0.1);
  CHECK(value("0.1") == 0.1);
  CHECK(value("123456789.123456") == 123456789.123456);
  CHECK(value("0.30000000000000004") == 0.30000000000000004);
  CHECK(value("9007199254740993") == 9007199254740992.0);  // 2^53 + 1: to even
  CHECK(value("1e308") == 1e308);
  CHECK(value("2.5E-3") == 2.5e-3);
  CHECK(value("\" 4.25 \"") == 4.25);
  CHECK(std::signbit(value("-0")));
  double d = 0;
  CHECK(parse_double("1e309", d) == NumberStatus::kOutOfRange);
  CHECK(parse_double("-1e309", d) == NumberStatus::kOutOfRange);
}

TEST_CASE("random integers and microseconds read back as written, by both paths") {
  std::mt19937_64 rng(20260);
  // What follows a number in a chunk: a separator, or digits of whatever the buffer held.
  const std::string_view after = " ,}]\n0123456789";
  const auto fill = [&] { return after[rng() % after.size()]; };
  for (int k = 0; k < 20000; ++k) {
    // Values of every magnitude: a random int64 shifted right by 0 to 63 places.
    const auto bits = static_cast<int64_t>(rng());
    const int64_t v = bits >> (rng() % 64);
    const std::string text = std::to_string(v);
    CAPTURE(text);
    int64_t out = 0;
    REQUIRE(padded_int(text, out, fill()) == NumberStatus::kOk);
    REQUIRE(out == v);
    // v ns written as µs with 3 decimals, as the writers do.
    const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string frac = std::to_string(mag % 1000);
    frac.insert(0, 3 - frac.size(), '0');
    const std::string us = (v < 0 ? "-" : "") + std::to_string(mag / 1000) + "." + frac;
    CAPTURE(us);
    REQUIRE(padded_micros(us, out, fill()) == NumberStatus::kOk);
    REQUIRE(out == v);
  }
}

}  // namespace
}  // namespace hta
