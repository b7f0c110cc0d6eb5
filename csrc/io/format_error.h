// The one error a broken input raises: what kind of fault (a code the Python side tests),
// where (a byte offset in the decompressed JSON text, or in the compressed file for a
// corrupt stream; none when no single byte is to blame), the field at fault when there is
// one ("ts", "args.bytes", "baseTimeNanoseconds"), whether recover=True reads past it, and
// a message for people.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace hta {

// X(enumerator, Python name, description). Declared once here: the binding exposes the
// list as hta_fast.ErrorCode. Append only; a code's meaning never changes.
#define HTA_ERROR_CODES(X)                                                              \
  X(kEmpty, empty, "the input holds no JSON (empty, or only whitespace)")               \
  X(kNotJson, not_json, "the input does not start a JSON object or array")              \
  X(kNotATrace, not_a_trace, "JSON, but not a trace (no traceEvents array, no events)") \
  X(kBadJson, bad_json, "broken JSON (syntax, encoding) inside the trace")              \
  X(kBadField, bad_field, "a value of the wrong type or beyond its range")              \
  X(kTruncated, truncated, "the input ends early (the writer was interrupted)")         \
  X(kCorruptStream, corrupt_stream, "corrupt gzip/zstd data")                           \
  X(kUnsupported, unsupported, "an encoding this build cannot read")                    \
  X(kTooDeep, too_deep, "values nested deeper than the loader accepts")                 \
  X(kTooLarge, too_large, "more events than one trace can hold")                        \
  X(kDuplicateKey, duplicate_key, "a key that must appear once appears twice (traceEvents)")

#define HTA_ERROR_ENUMERATOR(id, name, description) id,
enum class ErrorCode : uint8_t { HTA_ERROR_CODES(HTA_ERROR_ENUMERATOR) };
#undef HTA_ERROR_ENUMERATOR

class FormatError : public std::runtime_error {
 public:
  FormatError(ErrorCode code, std::optional<uint64_t> offset, const std::string& message,
              std::string key = {}, bool recoverable = false)
      : std::runtime_error(message),
        code_(code),
        offset_(offset),
        key_(std::move(key)),
        recoverable_(recoverable) {}
  ErrorCode code() const { return code_; }
  std::optional<uint64_t> offset() const { return offset_; }
  const std::string& key() const { return key_; }  // empty: no one field is at fault
  // Loading again with recover=True would get past this fault (never true of an error
  // raised with recover=True already).
  bool recoverable() const { return recoverable_; }

 private:
  ErrorCode code_;
  std::optional<uint64_t> offset_;
  std::string key_;
  bool recoverable_;
};

// A compressed stream that ends before its end marker (the writer was interrupted).
class TruncatedInput : public FormatError {
 public:
  TruncatedInput(uint64_t offset, const std::string& message)
      : FormatError(ErrorCode::kTruncated, offset, message, {}, true) {}
};

}  // namespace hta
