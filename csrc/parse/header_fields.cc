#include "parse/header_fields.h"

#include <new>

#include "io/format_error.h"
#include "parse/number_text.h"

namespace hta {
namespace {

// Offsets inside the header text are not file offsets (the header is the text before and
// after the events array, joined), so header errors carry none.
[[noreturn]] void header_error(ErrorCode code, const std::string& message) {
  throw FormatError(code, std::nullopt, message);
}

[[noreturn]] void parse_failed(simdjson::error_code err, const std::string& json) {
  if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE) {
    const bool base_key = json.find("\"baseTimeNanoseconds\"") != std::string::npos;
    header_error(ErrorCode::kBadField,
                 base_key ? "baseTimeNanoseconds (or another header number) is beyond int64"
                          : "a number in the trace header is beyond 64 bits");
  }
  if (err == simdjson::DEPTH_ERROR) {
    header_error(ErrorCode::kTooDeep, "the trace header nests deeper than " +
                                          std::to_string(kMaxHeaderDepth) + " levels");
  }
  header_error(ErrorCode::kBadJson,
               std::string("the trace header is not valid JSON: ") + simdjson::error_message(err));
}

int64_t read_base_time(simdjson::dom::element base) {
  if (base.is_int64()) return base.get_int64().value_unsafe();
  if (base.is_uint64()) header_error(ErrorCode::kBadField, "baseTimeNanoseconds beyond int64");
  std::string_view text;
  int64_t v = 0;
  if (base.is_string() && !base.get_string().get(text) &&
      parse_int64(text, v) == NumberStatus::kOk) {
    return v;
  }
  double d = 0;
  if (!base.get_double().get(d) && d >= 0 && d < 9.2e18) return static_cast<int64_t>(d);
  header_error(ErrorCode::kBadField, "baseTimeNanoseconds is not an integer");
}

}  // namespace

TraceHeader::TraceHeader(const std::string& json) {
  if (parser_.allocate(json.size(), kMaxHeaderDepth)) throw std::bad_alloc();
  if (auto err = parser_.parse(json).get(root_)) parse_failed(err, json);
  simdjson::dom::object fields;
  if (root_.get_object().get(fields)) {
    header_error(ErrorCode::kBadJson, "the trace header is not an object");
  }
  // Each occurrence of a duplicated key is checked; the last one wins, as in the dict that
  // the binding builds from the same object.
  for (simdjson::dom::key_value_pair field : fields) {
    if (field.key == "baseTimeNanoseconds") base_time_ns_ = read_base_time(field.value);
  }
}

}  // namespace hta
