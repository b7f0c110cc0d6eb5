// Values read from their text, shared by both event readers (parse/raw_event.h).
#include <algorithm>
#include <climits>

#include "parse/number_text.h"
#include "parse/raw_event.h"
#include "trace/string_pool.h"
#include "trace/tables.h"

namespace hta {
namespace {

bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool is_null(std::string_view tok) { return tok.substr(0, 4) == "null"; }

}  // namespace

void bad_value(std::string_view tok, const char* what) {
  const bool broken = tok.empty() || not_a_value(tok[0]);
  throw FieldError{broken ? "broken JSON: a value is missing" : what, broken};
}

std::string_view snippet(const char* start, const char* end, size_t max) {
  const size_t avail = end > start ? static_cast<size_t>(end - start) : 0;
  size_t n = std::min(avail, max);
  if (n < avail) {
    while (n > 0 && (static_cast<unsigned char>(start[n]) & 0xC0) == 0x80) --n;
  }
  while (n > 0 && is_json_space(start[n - 1])) --n;
  return {start, n};
}

int64_t int_value_failed(std::string_view tok, NumberStatus status) {
  switch (status) {
    case NumberStatus::kOutOfRange:
      throw FieldError{"integer beyond int64", false};
    default:
      if (is_null(tok)) return -1;
      bad_value(tok, "expected an integer");
  }
}

int32_t int32_value(std::string_view tok) {
  const int64_t x = int_value(tok);
  if (x < INT32_MIN || x > INT32_MAX) throw FieldError{"integer beyond int32", false};
  return static_cast<int32_t>(x);
}

int64_t time_value_failed(std::string_view tok, NumberStatus status) {
  switch (status) {
    case NumberStatus::kOutOfRange:
      throw FieldError{"timestamp beyond int64 nanoseconds", false};
    default:
      bad_value(tok, "expected a number of microseconds");
  }
}

double double_value(std::string_view tok) {
  double x = 0;
  if (parse_double(tok, x) == NumberStatus::kOk) return x;
  if (is_null(tok)) return NAN;
  bad_value(tok, "expected a number");
}

// Streams are integers; AMD runtime events write "0x0" and some tools write names.
int32_t stream_value(std::string_view tok) {
  int64_t x = 0;
  if (parse_int64_padded(tok, x) == NumberStatus::kOk) {
    // CUPTI writes "no stream" as 2^32 - 1; anything else outside int32 is no stream either.
    return x >= INT32_MIN && x <= INT32_MAX ? static_cast<int32_t>(x) : -1;
  }
  if (!tok.empty() && tok[0] == '"') return -1;
  bad_value(tok, "expected a stream number");
}

// Names are stored at kStringIdBase - (pool id); an integer at or below kStringIdBase would
// read as such a name, so it is kept as its decimal text, as the string "-1099511627776" is.
bool integer_id(std::string_view tok, StringPool& strings, int64_t& id) {
  int64_t x = 0;
  switch (parse_int64_padded(tok, x)) {
    case NumberStatus::kOk:
      if (x > kStringIdBase) {
        id = x;
      } else {
        id = kStringIdBase - strings.intern(std::to_string(x));
      }
      return true;
    case NumberStatus::kOutOfRange:
      throw FieldError{"id beyond int64", false};
    default:
      return false;
  }
}

}  // namespace hta
