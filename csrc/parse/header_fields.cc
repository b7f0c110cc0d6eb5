#include "parse/header_fields.h"

#include <simdjson.h>

#include "io/format_error.h"
#include "parse/number_text.h"

namespace hta {

int64_t base_time_ns(const std::string& header_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(header_json).get(doc)) {
    if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE) {
      const bool base_key = header_json.find("\"baseTimeNanoseconds\"") != std::string::npos;
      throw FormatError(0, base_key ? "baseTimeNanoseconds (or another header number) is beyond int64"
                                    : "a number in the trace header is beyond 64 bits");
    }
    throw FormatError(0, std::string("the trace header is not valid JSON: ") + simdjson::error_message(err));
  }
  simdjson::dom::element base;
  if (doc["baseTimeNanoseconds"].get(base)) return 0;
  int64_t v = 0;
  if (base.is_int64()) return base.get_int64().value_unsafe();
  if (base.is_uint64()) throw FormatError(0, "baseTimeNanoseconds beyond int64");
  std::string_view text;
  if (base.is_string() && !base.get_string().get(text) && parse_int64(text, v) == NumberStatus::kOk) return v;
  double d = 0;
  if (!base.get_double().get(d) && d >= 0 && d < 9.2e18) return static_cast<int64_t>(d);
  throw FormatError(0, "baseTimeNanoseconds is not an integer");
}

}  // namespace hta
