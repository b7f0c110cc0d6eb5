// Invalid UTF-8 in trace text: found (for the error offset; simdjson says only that a
// document is invalid) and, with recover=True, replaced so that the text can be parsed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta {

// The first byte of s[0..n) that breaks UTF-8, or nullptr. Rejects overlong forms,
// surrogates and code points > U+10FFFF.
const char* first_invalid_utf8(const char* s, size_t n);

// s[0..n) with each maximal invalid subsequence (Unicode's "maximal subpart", as Python's
// errors="replace" does) replaced by U+FFFD, plus where the replacements are.
struct Utf8Repair {
  std::vector<char> text;  // the repaired bytes; callers append their own padding
  // For each replacement, in order: its index in the input and the index just past the
  // U+FFFD in `text`; the shift between the two texts changes only at these points.
  struct Edit {
    size_t input_at;
    size_t input_end;
    size_t text_end;
  };
  std::vector<Edit> edits;

  void repair(const char* s, size_t n);
  // The input index of text index i.
  size_t input_index(size_t i) const;
};

}  // namespace hta
