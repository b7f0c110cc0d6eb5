// The trace header (the top-level members other than traceEvents), parsed once, here. The
// core reads baseTimeNanoseconds from it for the timestamps, and the binding hands the whole
// value to Python (TraceMeta), which never parses the text again: one parser gives one answer
// for a duplicated key (the last one wins, as in Python's json) and one depth limit.
#pragma once
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hta {

// Deeper headers are refused (too_deep): real ones nest a handful of levels, and Python code
// that walks the header (json.dumps in Trace.save, repr) recurses once per level.
constexpr size_t kMaxHeaderDepth = 64;

class TraceHeader {
 public:
  // Throws FormatError, naming the key at fault where one is, when the text is not a JSON
  // object within kMaxHeaderDepth, when a baseTimeNanoseconds (any occurrence of the key)
  // is not an int64, or when it holds traceEvents (a second copy: the first is the events).
  // `recover`: invalid UTF-8 is read as U+FFFD (counted by repaired_utf8()) instead.
  explicit TraceHeader(const std::string& json, bool recover = false);
  // root() points into the parser: neither may move.
  TraceHeader(const TraceHeader&) = delete;
  TraceHeader& operator=(const TraceHeader&) = delete;

  // The header object, valid as long as this TraceHeader.
  simdjson::dom::element root() const { return root_; }
  // baseTimeNanoseconds (an epoch time above 2^53, so read as an integer), or 0.
  int64_t base_time_ns() const { return base_time_ns_; }
  // Invalid UTF-8 sequences replaced (recover only).
  size_t repaired_utf8() const { return repaired_utf8_; }

 private:
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
  int64_t base_time_ns_ = 0;
  size_t repaired_utf8_ = 0;
  std::string repaired_;  // the text parsed, when it was repaired: root_ points into it
};

}  // namespace hta
