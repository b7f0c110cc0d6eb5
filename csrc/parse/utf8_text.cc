#include "parse/utf8_text.h"

#include <algorithm>

namespace hta {
namespace {

// At p[i] (i < n): how many bytes form a valid character there (0 if none), and, when
// invalid, the length of the maximal subpart to replace (at least 1).
size_t valid_char(const unsigned char* p, size_t i, size_t n, size_t& bad_len) {
  const unsigned c = p[i];
  bad_len = 1;
  if (c < 0x80) return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  // The second byte has its own range; the others are plain continuation bytes.
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n) return 0;
    const unsigned b = p[i + k];
    const bool ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
    if (!ok) return 0;
    bad_len = k + 1;  // a valid prefix of a character is replaced as one subpart
  }
  return len;
}

}  // namespace

const char* first_invalid_utf8(const char* s, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(s);
  size_t bad_len;
  for (size_t i = 0; i < n;) {
    const size_t len = valid_char(p, i, n, bad_len);
    if (len == 0) return s + i;
    i += len;
  }
  return nullptr;
}

void Utf8Repair::repair(const char* s, size_t n) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  const auto* p = reinterpret_cast<const unsigned char*>(s);
  text.clear();
  edits.clear();
  text.reserve(n + 64);
  size_t done = 0;  // input bytes copied or replaced so far
  size_t bad_len;
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = valid_char(p, i, n, bad_len);
    if (len > 0) {
      i += len;
      continue;
    }
    const size_t cut = bad_len;
    text.insert(text.end(), s + done, s + i);
    text.insert(text.end(), kReplacement, kReplacement + 3);
    edits.push_back({i, i + cut, text.size()});
    i += cut;
    done = i;
  }
  text.insert(text.end(), s + done, s + n);
}

size_t Utf8Repair::input_index(size_t i) const {
  // The last edit whose replacement ends at or before i sets the shift.
  auto it = std::upper_bound(edits.begin(), edits.end(), i,
                             [](size_t x, const Edit& e) { return x < e.text_end; });
  if (it == edits.begin()) return i;
  --it;
  return i - it->text_end + it->input_end;
}

}  // namespace hta
