#include "parse/event_walker.h"

#include <array>
#include <cstring>
#include <string>
#include <string_view>

#include "parse/arg_fields.h"
#include "parse/event_store.h"
#include "parse/member_layout.h"
#include "parse/number_text.h"
#include "parse/raw_event.h"
#include "parse/recent_strings.h"
#include "trace/tables.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hta {
namespace {

// The walker cannot read this event as the On-Demand reader would: that reader takes over.
struct Stop {};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Whether a string's content holds a backslash. Reads in 16-byte blocks, up to 15 bytes
// past the content: the closing quote and what follows it in the chunk or its padding.
bool has_backslash(std::string_view s) {
#if defined(__SSE2__)
  const __m128i slash = _mm_set1_epi8('\\');
  for (size_t i = 0; i < s.size(); i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    uint32_t hits = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, slash)));
    if (s.size() - i < 16) hits &= (1u << (s.size() - i)) - 1;
    if (hits != 0) return true;
  }
  return false;
#else
  return std::memchr(s.data(), '\\', s.size()) != nullptr;
#endif
}

// Deeper nesting is left to the On-Demand reader, which has its own depth limit.
constexpr int kMaxDepth = 64;

class Walker final : public EventEnd {
 public:
  Walker(TraceColumns& out, MemberLayout& layout, RecentStrings& recent, const char* text,
         const uint32_t* index, uint32_t count)
      : out_(out),
        store_(out),
        layout_(layout),
        recent_(recent),
        text_(text),
        s_(index),
        last_(index + count - 1) {}

  size_t walk(uint64_t file_offset);
  const char* at(const char*) override { return event_end_; }

 private:
  // One argument's value, as arg_fields.h reads it; the cursor stands on its first token.
  struct ArgValue {
    Walker& w;
    int64_t int64() { return int_value(w.scalar()); }
    int32_t int32() { return int32_value(w.scalar()); }
    double float64() { return double_value(w.scalar()); }
    int32_t string() { return w.read_string(); }
    int32_t raw_json() { return w.read_raw_json(); }
    int32_t stream() { return stream_value(w.scalar()); }
    bool dim3(int32_t (&out)[3]) { return w.read_dim3(out); }
  };

  [[noreturn]] static void stop() { throw Stop{}; }
  // The byte at the cursor's token, and at the one after it.
  char here() const { return text_[s_[0]]; }
  char next() const { return text_[s_[1]]; }
  const char* at_token(const uint32_t* s) const { return text_ + *s; }

  std::string_view scalar();
  std::string_view string_content();
  std::string_view plain_string();
  std::string_view nested();
  void skip_value();
  std::string_view key();
  template <class Read>
  void read_members(int level, Read&& read);

  int32_t read_string();
  int32_t read_raw_json();
  bool read_dim3(int32_t (&out)[3]);
  int64_t read_id(RawEvent& ev);
  int64_t read_repeated_id(RawEvent& ev, LastValue<int64_t>& last);
  int32_t read_repeated_string(LastValue<int32_t>& last);
  char read_char();
  void read_field(EventKey k, RawEvent& ev);
  void read_args(RawEvent& ev);
  void read_counter_args();
  void read_event(RawEvent& ev);

  TraceColumns& out_;
  EventStore store_;
  MemberLayout& layout_;
  RecentStrings& recent_;       // names and argument texts: they repeat
  std::string_view other_key_;  // a counter's key read without an id (the table full)
  const char* text_;
  const uint32_t* s_;     // the cursor: the structural position being read
  const uint32_t* last_;  // the splitter's ']', the last position
  const char* event_end_ = nullptr;
  const uint32_t* args_at_ = nullptr;  // args met before ph, read at the event's end
  LastValue<int64_t> last_pid_, last_tid_;
  LastValue<int32_t> last_cat_;
};

// A value's token as On-Demand's raw_json_token gives it: from its first byte to the next
// structural position (trailing whitespace included). Strings keep their quotes; nested
// values are not scalars (their '[' alone makes no number, as in the On-Demand reader).
std::string_view Walker::scalar() {
  if (s_ >= last_) stop();
  const char* start = at_token(s_);
  const char* end = at_token(s_ + 1);
  ++s_;
  return {start, static_cast<size_t>(end - start)};
}

// A string value's content, escapes and all; the cursor moves past it. The closing quote is
// the last byte before the next position other than whitespace: stage 1 marks any other
// byte after a string as a token of its own.
std::string_view Walker::string_content() {
  if (s_ >= last_) stop();
  const char* open = at_token(s_);
  const char* close = at_token(s_ + 1) - 1;
  while (is_space(*close)) --close;
  if (*close != '"' || close == open) stop();
  ++s_;
  return {open + 1, static_cast<size_t>(close - open - 1)};
}

// A string without escapes, its content. One with escapes would have to be unescaped: the
// On-Demand reader does that.
std::string_view Walker::plain_string() {
  const std::string_view s = string_content();
  if (has_backslash(s)) stop();
  return s;
}

// What a structural character does to the nesting: 1 opens an array, 2 an object, 3
// closes an array, 4 an object, 0 nothing (commas, colons, the first bytes of scalars,
// most of what a nested argument such as "Input Dims" holds): one load and one test a
// position, not four comparisons.
constexpr auto kBracket = [] {
  std::array<uint8_t, 256> table{};
  table['['] = 1;
  table['{'] = 2;
  table[']'] = 3;
  table['}'] = 4;
  return table;
}();

// An array or object, brackets included; the cursor moves past it. Brackets must pair up.
std::string_view Walker::nested() {
  const char* start = at_token(s_);
  uint64_t kinds = 0;  // one bit per open bracket: 1 for '{'
  int depth = 0;
  for (;; ++s_) {
    if (s_ >= last_) stop();
    const uint8_t b = kBracket[static_cast<unsigned char>(here())];
    if (b == 0) continue;
    if (b <= 2) {
      if (++depth > kMaxDepth) stop();
      kinds = (kinds << 1) | (b == 2);
    } else {
      if ((kinds & 1) != (b == 4)) stop();
      kinds >>= 1;
      if (--depth == 0) {
        ++s_;
        return {start, static_cast<size_t>(text_ + s_[-1] + 1 - start)};
      }
    }
  }
}

void Walker::skip_value() {
  const char c = here();
  if (c == '[' || c == '{') {
    nested();
  } else if (not_a_value(c)) {
    stop();  // a missing value
  } else {
    ++s_;
  }
}

// `"key":`; the cursor moves to the value.
std::string_view Walker::key() {
  if (here() != '"' || next() != ':') stop();
  const std::string_view k = string_content();
  ++s_;  // the colon
  return k;
}

// The members of an object of `level`, the cursor just past its '{': `read(key)` reads each
// value (the cursor on its first token) and leaves the cursor past it. Each member's key is
// told from the bytes before its value when they are those that followed the same previous
// key before (member_layout.h); else it is read, and the bytes learned.
template <class Read>
void Walker::read_members(int level, Read&& read) {
  if (here() == '}') return void(++s_);
  const char* gap = at_token(s_ - 1) + 1;  // from just past the '{', then from each comma
  uint8_t prev = MemberLayout::kStart;
  for (;;) {
    const MemberLayout::Gap* learned = layout_.after(level, prev);
    const char* value = at_token(s_ + 2);  // past the key and the colon, if they are there
    const auto len = static_cast<size_t>(value - gap);
    uint8_t id;
    MemberLayout::Key kind{};
    int way = 0;
    while (way < MemberLayout::kWays && !learned[way].matches(gap, len)) ++way;
    if (way < MemberLayout::kWays) {
      s_ += 2;
      id = learned[way].next;
      kind = learned[way].kind;
    } else {
      const std::string_view k = key();
      id = layout_.id_of(k);
      kind =
          id == MemberLayout::kNone ? MemberLayout::Key{event_key(k), arg_key(k)} : layout_.key(id);
      if (level == 1) other_key_ = k;
      layout_.learn(level, prev, {gap, len}, id);
    }
    if (not_a_value(here())) stop();  // a missing value
    read(kind, id);
    gap = at_token(s_);
    const char after = here();
    ++s_;
    if (after == '}') return;
    if (after != ',') stop();
    prev = id;
  }
}

int32_t Walker::read_string() {
  if (here() == '"') {
    const std::string_view s = string_content();
    return recent_.intern_checked(s, [&] {
      if (has_backslash(s)) stop();
    });
  }
  const std::string_view tok = scalar();
  if (tok.substr(0, 4) == "null") return -1;
  stop();
}

int32_t Walker::read_raw_json() {
  switch (here()) {
    case '[':
    case '{':
      return recent_.intern(nested());
    case '"':
      return read_string();
    default:
      return out_.strings.intern(trim_number_text(scalar()));
  }
}

bool Walker::read_dim3(int32_t (&out)[3]) {
  if (here() != '[') return false;
  ++s_;
  if (here() == ']') {
    ++s_;
    return true;
  }
  for (int i = 0;; ++i) {
    if (here() == '[' || here() == '{') stop();
    const int32_t x = int32_value(scalar());
    if (i < 3) out[i] = x;
    const char c = here();
    ++s_;
    if (c == ']') return true;
    if (c != ',') stop();
  }
}

// pid/tid/id: as the On-Demand reader reads them, for the plain spellings.
int64_t Walker::read_id(RawEvent& ev) {
  const uint32_t* start = s_;
  const std::string_view tok = scalar();
  int64_t id = 0;
  if (integer_id(tok, out_.strings, id)) return id;
  if (tok.empty() || tok[0] != '"') stop();
  s_ = start;
  return kStringIdBase - out_.strings.intern(plain_string());
}

// pid, tid and cat repeat from event to event: the text is compared before it is read.
int64_t Walker::read_repeated_id(RawEvent& ev, LastValue<int64_t>& last) {
  const uint32_t* start = s_;
  const std::string_view tok = scalar();
  if (last.matches(tok)) return last.value;
  s_ = start;
  const int64_t id = read_id(ev);
  return id > kStringIdBase ? last.remember(tok, id) : id;
}

int32_t Walker::read_repeated_string(LastValue<int32_t>& last) {
  const uint32_t* start = s_;
  const std::string_view tok = scalar();
  if (last.matches(tok)) return last.value;
  s_ = start;
  return last.remember(tok, read_string());
}

char Walker::read_char() {
  const char c = plain_char(scalar());
  if (c == 0) stop();
  return c;
}

void Walker::read_field(EventKey k, RawEvent& ev) {
  switch (k) {
    case EventKey::kPh:
      return void(ev.ph = read_char());
    case EventKey::kTs:
      ev.ts = time_value(scalar());
      ev.has_ts = true;
      return;
    case EventKey::kId:
      return void(ev.id = read_id(ev));
    case EventKey::kBp:
      return void(ev.binds_enclosing = read_char() == 'e');
    case EventKey::kCat:
      return void(ev.cat = read_repeated_string(last_cat_));
    case EventKey::kPid:
      return void(ev.pid = read_repeated_id(ev, last_pid_));
    case EventKey::kTid:
      return void(ev.tid = read_repeated_id(ev, last_tid_));
    case EventKey::kDur:
      ev.dur = time_value(scalar());
      ev.has_dur = true;
      return;
    case EventKey::kName:
      return void(ev.name = read_string());
    case EventKey::kArgs:
      // Args before ph are read once ph is known (read_event), as the On-Demand reader
      // does; a second args with the first still unread is left to that reader.
      if (args_at_ != nullptr) stop();
      if (ev.ph != 0) return read_args(ev);
      args_at_ = s_;
      return skip_value();
    case EventKey::kScope:
      return void(ev.scope = read_char());
    case EventKey::kOther:
      return skip_value();
  }
}

void Walker::read_counter_args() {
  if (here() != '{') stop();
  ++s_;
  read_members(1, [&](MemberLayout::Key, uint8_t id) {
    const std::string_view k = id == MemberLayout::kNone ? other_key_ : layout_.text(id);
    double x = 0;
    const char c = here();
    if (c != '[' && c != '{' && parse_double(scalar(), x) == NumberStatus::kOk) {
      store_.add_counter(out_.strings.intern(k), x);
    } else {
      if (c == '[' || c == '{') skip_value();
      store_.count_non_numeric_counter();
    }
  });
}

void Walker::read_args(RawEvent& ev) {
  if (ev.ph == 'C') return read_counter_args();
  if (here() != '{') {
    if (scalar().substr(0, 4) == "null") return;
    stop();  // not an object: the On-Demand reader says so
  }
  ++s_;
  read_members(1, [&](MemberLayout::Key kind, uint8_t) {
    const uint32_t* start = s_;
    if (kind.arg != ArgKey::kUnknown) {
      ArgValue value{*this};
      read_arg(kind.arg, value, ev.args);
    }
    if (s_ == start) skip_value();  // unknown, or a grid that is not a kernel's
  });
}

void Walker::read_event(RawEvent& ev) {
  args_at_ = nullptr;
  ++s_;  // the '{'
  read_members(0, [&](MemberLayout::Key kind, uint8_t) { read_field(kind.event, ev); });
  if (args_at_ != nullptr && ev.ph != 0) {
    const uint32_t* after = s_;
    s_ = args_at_;
    read_args(ev);
    s_ = after;
  }
}

size_t Walker::walk(uint64_t file_offset) {
  const char* const end = at_token(last_);
  if (here() != '[') return 1;
  ++s_;
  if (s_ == last_) return static_cast<size_t>(end - text_) + 1;  // "[]"
  RawEvent ev;
  for (;;) {
    const char* start = at_token(s_);
    if (*start != '{') return static_cast<size_t>(start - text_);
    try {
      ev.start();
      read_event(ev);
      event_end_ = at_token(s_ - 1) + 1;
      // A ',' and another event, or the splitter's ']' as the last position.
      const bool final = here() == ']';
      if (final ? s_ != last_ : here() != ',') stop();
      ++s_;
      store_.store(ev, file_offset + static_cast<uint64_t>(start - text_) - 1, start, *this);
      if (final) return static_cast<size_t>(end - text_) + 1;
    } catch (const Stop&) {
      return static_cast<size_t>(start - text_);
    } catch (const FieldError&) {
      return static_cast<size_t>(start - text_);
    }
  }
}

}  // namespace

size_t walk_events(const char* text, size_t len, const uint32_t* index, uint32_t count,
                   uint64_t file_offset, TraceColumns& out, MemberLayout& layout,
                   RecentStrings& recent) {
  if (count < 2 || index[count - 1] != len - 1) return 1;
  recent.bind(out.strings);
  return Walker(out, layout, recent, text, index, count).walk(file_offset);
}

}  // namespace hta
