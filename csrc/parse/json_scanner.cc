#include "parse/json_scanner.h"

#include <cstdio>

#include "io/format_error.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hta {
namespace {
constexpr size_t npos = static_cast<size_t>(-1);
bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A byte as text that is safe in a message: 'x' when printable, else its hex code.
std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", u);
  return std::string("byte ") + hex;
}
// The first i >= from with p[i] '"' or '\\' (n if none): a string's content holds most of a
// trace's bytes, and only these two can end it or change how the next byte reads. Never
// reads at or past n.
size_t next_quote_or_backslash(const char* p, size_t from, size_t n) {
  size_t i = from;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const auto hits = static_cast<uint32_t>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, slash))));
    if (hits != 0) return i + static_cast<size_t>(__builtin_ctz(hits));
  }
#endif
  for (; i < n; ++i) {
    if (p[i] == '"' || p[i] == '\\') return i;
  }
  return n;
}

}  // namespace

bool find_last_boundary(const char* p, size_t n, size_t& end, size_t& next, size_t from) {
  // Search backwards for '{' preceded (through whitespace) by ',' preceded by '}'.
  for (size_t i = n; i-- > from;) {
    if (p[i] != '{') continue;
    size_t j = i;
    while (j > 0 && is_ws(p[j - 1])) --j;
    if (j == 0 || p[j - 1] != ',') continue;
    --j;
    while (j > 0 && is_ws(p[j - 1])) --j;
    if (j == 0 || p[j - 1] != '}') continue;
    end = j;
    next = i;
    return true;
  }
  return false;
}

JsonScanner JsonScanner::inside_events(bool object_format) {
  JsonScanner s;
  s.phase_ = Phase::kEvents;
  s.events_depth_ = object_format ? 2 : 1;
  s.depth_ = s.events_depth_;
  return s;
}

void JsonScanner::fail(uint64_t offset, const std::string& what, ErrorCode code) const {
  throw FormatError(code, offset, what);
}

size_t JsonScanner::scan(const char* p, size_t n, uint64_t base, Stop& stop) {
  stop = Stop::kNone;
  last_boundary_ = npos;
  last_complete_end_ = npos;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string_) {
      if (!escape_ && !reading_header_key() && c != '"' && c != '\\') {
        i = next_quote_or_backslash(p, i + 1, n) - 1;  // the loop's ++i lands on it
        continue;
      }
      string_byte(c);
      continue;
    }
    if (is_ws(c)) {
      in_scalar_ = false;
      continue;
    }
    switch (phase_) {
      case Phase::kStart:
        if (!start_byte(c, base + i)) break;
        stop = Stop::kEventsBegin;
        return i + 1;
      case Phase::kHeader:
        if (!header_byte(c, base + i)) break;
        stop = Stop::kEventsBegin;
        return i + 1;
      case Phase::kEvents:
        if (!events_byte(c, i, base)) break;
        stop = Stop::kEventsEnd;
        return i + 1;
      case Phase::kSuffix:
        suffix_byte(c, base + i);
        break;
      case Phase::kDone:
        fail(base + i,
             "unexpected content after the end of the JSON document: " + describe_byte(c));
    }
  }
  return n;
}

inline void JsonScanner::string_byte(char c) {
  if (escape_) {
    escape_ = false;
  } else if (c == '\\') {
    escape_ = true;
  } else if (c == '"') {
    in_string_ = false;
    if (phase_ == Phase::kEvents && open_.empty()) after_event_ = true;
    if (reading_header_key()) {
      key_is_events_ = key_ == "traceEvents";
      expect_key_ = false;
    }
  } else if (reading_header_key() && key_.size() < 32) {
    key_.push_back(c);
  }
}

inline bool JsonScanner::start_byte(char c, uint64_t offset) {
  if (c == '{') {
    phase_ = Phase::kHeader;
    depth_ = 1;
    expect_key_ = true;
  } else if (c == '[') {
    // The JSON Array Format: the file is the events array itself.
    phase_ = Phase::kEvents;
    events_depth_ = depth_ = 1;
    return true;
  } else {
    fail(offset, "not a JSON trace: expected '{' or '[' but found " + describe_byte(c),
         ErrorCode::kNotJson);
  }
  return false;
}

inline bool JsonScanner::header_byte(char c, uint64_t offset) {
  if (after_events_key_) {
    after_events_key_ = false;
    if (c != '[') {
      throw FormatError(ErrorCode::kBadField, offset, "traceEvents is not an array", "traceEvents");
    }
    phase_ = Phase::kEvents;
    depth_ = events_depth_ = 2;
    return true;
  }
  switch (c) {
    case '"':
      in_string_ = true;
      if (depth_ == 1 && expect_key_) key_.clear();
      break;
    case ':':
      if (depth_ == 1 && key_is_events_) after_events_key_ = true;
      key_is_events_ = false;
      break;
    case ',':
      if (depth_ == 1) expect_key_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      break;
    case '}':
    case ']':
      if (--depth_ == 0) phase_ = Phase::kDone;
      break;
    default:
      break;
  }
  return false;
}

inline bool JsonScanner::events_byte(char c, size_t i, uint64_t base) {
  if (open_.empty()) {
    if (c == ']') {
      --depth_;
      phase_ = depth_ == 0 ? Phase::kDone : Phase::kSuffix;
      return true;
    }
    if (between_events_byte(c, i, base)) return false;
  }
  event_byte(c, i, base);
  return false;
}

inline bool JsonScanner::between_events_byte(char c, size_t i, uint64_t base) {
  // After an event, only ',' or the closing ']' (events_byte) may come.
  if (c == ',') {
    if (!after_event_) fail(base + i, "two commas in a row in traceEvents");
    after_event_ = in_scalar_ = false;
    last_boundary_ = i + 1;
    return true;
  }
  if (in_scalar_ && c != '"' && c != '{' && c != '[' && c != '}') return true;
  in_scalar_ = false;
  if (after_event_) {
    fail(base + i, "expected ',' or ']' after an event in traceEvents, found " + describe_byte(c));
  }
  if (c == '}') fail(base + i, "unbalanced '}' in traceEvents");
  if (c != '"' && c != '{' && c != '[') {
    // A bare number or literal as an entry (counted later as not an event).
    in_scalar_ = true;
    after_event_ = true;
    return true;
  }
  return false;
}

inline void JsonScanner::event_byte(char c, size_t i, uint64_t base) {
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      open_.push_back(c);
      break;
    case '}':
    case ']':
      if ((c == '}') != (open_.back() == '{')) {
        fail(base + i, std::string("'") + open_.back() + "' closed by '" + c + "' in traceEvents");
      }
      --depth_;
      open_.pop_back();
      if (open_.empty()) {
        after_event_ = true;
        last_complete_end_ = i + 1;
      }
      break;
    default:
      break;
  }
}

inline void JsonScanner::suffix_byte(char c, uint64_t offset) {
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      break;
    case '}':
    case ']':
      if (--depth_ == 0) phase_ = Phase::kDone;
      if (depth_ < 0) fail(offset, "unbalanced '" + std::string(1, c) + "'");
      break;
    default:
      break;
  }
}

}  // namespace hta
