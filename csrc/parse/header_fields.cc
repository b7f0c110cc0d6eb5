#include "parse/header_fields.h"

#include <new>
#include <string_view>

#include "io/format_error.h"
#include "parse/number_text.h"
#include "parse/utf8_text.h"

namespace hta {
namespace {

// Offsets inside the header text are not file offsets (the header is the text before and
// after the events array, joined), so header errors carry none.
[[noreturn]] void header_error(ErrorCode code, const std::string& message,
                               const std::string& key = {}, bool recoverable = false) {
  throw FormatError(code, std::nullopt, message, key, recoverable);
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The raw key of the first top-level member of `json` (an object) whose value alone fails
// to parse, or "" when none does. Only for naming the key after the whole text failed, so
// it delimits members with a plain scan (strings, escapes, brackets) and parses each value
// separately.
std::string member_at_fault(std::string_view json) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < json.size() && is_space(json[i])) ++i;
  };
  auto skip_string = [&] {  // json[i] is the opening quote
    for (++i; i < json.size(); ++i) {
      if (json[i] == '\\') {
        ++i;
      } else if (json[i] == '"') {
        ++i;
        return true;
      }
    }
    return false;
  };
  skip_space();
  if (i == json.size() || json[i++] != '{') return {};
  simdjson::dom::parser parser;
  for (;;) {
    skip_space();
    if (i == json.size() || json[i] != '"') return {};
    const size_t key_start = i + 1;
    if (!skip_string()) return {};
    const std::string_view key = json.substr(key_start, i - 1 - key_start);
    skip_space();
    if (i == json.size() || json[i++] != ':') return {};
    skip_space();
    const size_t value_start = i;
    int depth = 0;
    for (; i < json.size(); ++i) {
      const char c = json[i];
      if (c == '"') {
        if (!skip_string()) return std::string(key);
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    const std::string value(json.substr(value_start, i - value_start));
    // One level less than the header: the value sits inside the header object.
    if (parser.allocate(value.size() + 1, kMaxHeaderDepth - 1)) throw std::bad_alloc();
    simdjson::dom::element ignored;
    if (parser.parse(value).get(ignored)) return std::string(key);
    if (i == json.size() || json[i] != ',') return {};
    ++i;
  }
}

[[noreturn]] void parse_failed(simdjson::error_code err, const std::string& json) {
  const std::string key = member_at_fault(json);
  const std::string where = key.empty() ? "" : " (key \"" + key + "\")";
  if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE) {
    header_error(ErrorCode::kBadField,
                 key.empty() ? "a number in the trace header is beyond 64 bits"
                             : "the number of header key \"" + key + "\" is beyond 64 bits",
                 key);
  }
  if (err == simdjson::DEPTH_ERROR) {
    header_error(
        ErrorCode::kTooDeep,
        "the trace header nests deeper than " + std::to_string(kMaxHeaderDepth) + " levels" + where,
        key);
  }
  if (err == simdjson::UTF8_ERROR) {
    header_error(ErrorCode::kBadJson, "invalid UTF-8 in the trace header" + where, key,
                 /*recoverable=*/true);
  }
  header_error(
      ErrorCode::kBadJson,
      std::string("the trace header is not valid JSON: ") + simdjson::error_message(err) + where,
      key);
}

int64_t read_base_time(simdjson::dom::element base) {
  const std::string key = "baseTimeNanoseconds";
  if (base.is_int64()) return base.get_int64().value_unsafe();
  if (base.is_uint64()) header_error(ErrorCode::kBadField, key + " beyond int64", key);
  std::string_view text;
  int64_t v = 0;
  if (base.is_string() && !base.get_string().get(text) &&
      parse_int64(text, v) == NumberStatus::kOk) {
    return v;
  }
  double d = 0;
  if (!base.get_double().get(d) && d >= 0 && d < 9.2e18) return static_cast<int64_t>(d);
  header_error(ErrorCode::kBadField, key + " is not an integer", key);
}

}  // namespace

TraceHeader::TraceHeader(const std::string& json, bool recover) {
  const std::string* text = &json;
  if (recover && first_invalid_utf8(json.data(), json.size())) {
    Utf8Repair repair;
    repair.repair(json.data(), json.size());
    repaired_.assign(repair.text.begin(), repair.text.end());
    repaired_utf8_ = repair.edits.size();
    text = &repaired_;
  }
  if (parser_.allocate(text->size(), kMaxHeaderDepth)) throw std::bad_alloc();
  if (auto err = parser_.parse(*text).get(root_)) parse_failed(err, *text);
  simdjson::dom::object fields;
  if (root_.get_object().get(fields)) {
    header_error(ErrorCode::kBadJson, "the trace header is not an object");
  }
  // Each occurrence of a duplicated key is checked; the last one wins, as in the dict that
  // the binding builds from the same object.
  for (simdjson::dom::key_value_pair field : fields) {
    if (field.key == "baseTimeNanoseconds") base_time_ns_ = read_base_time(field.value);
    // The events array was taken out of the header; another one here is a second copy,
    // and no one copy is the right one to read (json.load would keep the last, a
    // streaming reader the first).
    if (field.key == "traceEvents") {
      header_error(ErrorCode::kDuplicateKey,
                   "the trace has two traceEvents keys: which holds the events is ambiguous",
                   "traceEvents");
    }
  }
}

}  // namespace hta
