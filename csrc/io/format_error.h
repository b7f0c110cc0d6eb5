// The one error a broken input raises: what is wrong and where (a byte offset in the
// decompressed JSON text, or in the compressed file for a corrupt stream).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hta {

class FormatError : public std::runtime_error {
 public:
  FormatError(uint64_t offset, const std::string& message)
      : std::runtime_error(message), offset_(offset) {}
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
};

// A compressed stream that ends before its end marker (the writer was interrupted).
class TruncatedInput : public FormatError {
 public:
  using FormatError::FormatError;
};

}  // namespace hta
