#include "parse/event_parser.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "parse/arg_fields.h"
#include "parse/event_store.h"
#include "parse/event_walker.h"
#include "parse/number_text.h"
#include "parse/utf8_text.h"

namespace hta {
namespace od = simdjson::ondemand;

namespace {

// A field's key as written, without its quotes. Keys in traces carry no escapes; one that
// does simply matches no known key. The key's end is found from its value's start, which the
// structural index gives: scanning back over `": ` is shorter than scanning the key forward
// (that scan was 8% of a parse's instructions). The field has been checked for its colon, so
// the closing quote is there, after the opening one.
std::string_view key_text(od::field& field) {
  const char* start = field.key().raw();
  const char* value = field.value().raw_json_token().data();
  // The profiler writes `"key": value`; anything else is scanned.
  const char* end = value - 3;
  if (end < start || end[0] != '"' || end[1] != ':' || end[2] != ' ') {
    end = value - 1;
    while (end > start && *end != '"') --end;
  }
  return {start, static_cast<size_t>(end - start)};
}

class ChunkReader final : public EventEnd {
 public:
  // `text_end`: the chunk's last real byte (its closing ']', added by the splitter).
  ChunkReader(const ParseOptions& options, TraceColumns& out, od::document& doc,
              const char* text_end)
      : options_(options), out_(out), doc_(doc), text_end_(text_end), store_(out) {}

  void read_event(od::object obj, RawEvent& ev);
  void store(RawEvent& ev, uint64_t offset, const char* where) {
    store_.store(ev, offset, where, *this);
  }
  // Where the event read last ends: the parser stands just past it.
  const char* at(const char* start) override {
    const char* here = nullptr;
    if (doc_.current_location().get(here) == simdjson::SUCCESS && here > start &&
        here <= text_end_) {
      return here;
    }
    return text_end_;
  }

 private:
  // One argument's value, as arg_fields.h reads it.
  struct ArgValue {
    ChunkReader& r;
    od::value& v;
    int64_t int64() { return r.read_int(v); }
    int32_t int32() { return r.read_int32(v); }
    double float64() { return r.read_double(v); }
    int32_t string() { return r.read_string(v); }
    int32_t raw_json() { return r.read_raw_json(v); }
    int32_t stream() { return r.read_stream(v); }
    bool dim3(int32_t (&out)[3]) { return r.read_dim3(v, out); }
  };

  static void check(simdjson::error_code e) {
    if (e) throw FieldError{simdjson::error_message(e), true};
  }
  static std::string_view token(od::value& v) { return v.raw_json_token(); }
  void read_field(std::string_view k, od::value& v, RawEvent& ev, bool& args_before_ph);
  int32_t read_string(od::value& v);
  int32_t read_raw_json(od::value& v);
  int64_t read_int(od::value& v);
  int32_t read_int32(od::value& v);
  int64_t read_time(od::value& v);
  double read_double(od::value& v);
  int64_t read_id(od::value& v, RawEvent& ev);
  int64_t read_repeated_id(od::value& v, RawEvent& ev, LastValue<int64_t>& last);
  int32_t read_repeated_string(od::value& v, LastValue<int32_t>& last);
  int32_t read_stream(od::value& v);
  bool read_dim3(od::value& v, int32_t (&out)[3]);
  char read_char(od::value& v);
  void read_args(od::value& v, RawEvent& ev);
  void read_counter_args(od::value& v);

  const ParseOptions& options_;
  TraceColumns& out_;
  od::document& doc_;
  const char* text_end_;
  EventStore store_;
  LastValue<int64_t> last_pid_, last_tid_;
  LastValue<int32_t> last_cat_;
};

int32_t ChunkReader::read_string(od::value& v) {
  std::string_view tok = token(v);
  if (tok.empty() || tok[0] != '"') {
    if (tok.substr(0, 4) == "null") return -1;
    bad_value(tok, "expected a string");
  }
  const size_t close = tok.rfind('"');
  std::string_view content = tok.substr(1, close - 1);
  if (std::memchr(content.data(), '\\', content.size()) != nullptr) {
    check(v.get_string().get(content));
  }
  return out_.strings.intern(content);
}

int32_t ChunkReader::read_raw_json(od::value& v) {
  std::string_view text;
  od::json_type type;
  check(v.type().get(type));
  switch (type) {
    case od::json_type::array: {
      od::array a;
      check(v.get_array().get(a));
      check(a.raw_json().get(text));
      break;
    }
    case od::json_type::object: {
      od::object o;
      check(v.get_object().get(o));
      check(o.raw_json().get(text));
      break;
    }
    case od::json_type::string:
      return read_string(v);
    default:
      text = trim_number_text(token(v));
  }
  // raw_json() runs to the next token: an array or object last in its object brings the
  // whitespace before the closing brace, which is not the value's.
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return out_.strings.intern(text);
}

int64_t ChunkReader::read_int(od::value& v) { return int_value(token(v)); }
int32_t ChunkReader::read_int32(od::value& v) { return int32_value(token(v)); }
int64_t ChunkReader::read_time(od::value& v) { return time_value(token(v)); }
double ChunkReader::read_double(od::value& v) { return double_value(token(v)); }

// pid/tid/id: numbers, numeric strings, or names ("Spans", "stream 7", "").
int64_t ChunkReader::read_id(od::value& v, RawEvent& ev) {
  std::string_view tok = token(v);
  int64_t id = 0;
  if (integer_id(tok, out_.strings, id)) return id;
  if (tok.empty() || tok[0] != '"') bad_value(tok, "expected an integer or a string id");
  return kStringIdBase - read_string(v);
}

// An id that is a plain integer is remembered (one that is kept as text, or a name, is read
// each time: reading it also counts it).
int64_t ChunkReader::read_repeated_id(od::value& v, RawEvent& ev, LastValue<int64_t>& last) {
  const std::string_view tok = token(v);
  if (last.matches(tok)) return last.value;
  const int64_t id = read_id(v, ev);
  return id > kStringIdBase ? last.remember(tok, id) : id;
}

int32_t ChunkReader::read_repeated_string(od::value& v, LastValue<int32_t>& last) {
  const std::string_view tok = token(v);
  if (last.matches(tok)) return last.value;
  return last.remember(tok, read_string(v));
}

int32_t ChunkReader::read_stream(od::value& v) { return stream_value(token(v)); }

// grid/block of a kernel: [x, y, z]; false for anything else.
bool ChunkReader::read_dim3(od::value& v, int32_t (&out)[3]) {
  od::json_type type;
  check(v.type().get(type));
  if (type != od::json_type::array) return false;
  od::array a;
  check(v.get_array().get(a));
  int i = 0;
  for (auto item : a) {
    od::value x;
    check(item.get(x));
    if (i < 3) out[i] = read_int32(x);
    ++i;
  }
  return true;
}

// ph, s and bp: a string of exactly one printable ASCII character, escaped ("\u0058") or not.
char ChunkReader::read_char(od::value& v) {
  std::string_view tok = token(v);
  if (const char c = plain_char(tok)) return c;
  std::string_view text;
  if (tok.empty() || tok[0] != '"' || v.get_string().get(text) || text.size() != 1 ||
      text[0] < 0x20 || text[0] >= 0x7f) {
    bad_value(tok, "expected a one-letter string");
  }
  return text[0];
}

void ChunkReader::read_counter_args(od::value& v) {
  od::object args;
  if (v.get_object().get(args)) throw FieldError{"args is not an object", false};
  for (auto item : args) {
    od::field field;
    check(std::move(item).get(field));
    double x = 0;
    std::string_view tok = token(field.value());
    if (parse_double(tok, x) != NumberStatus::kOk) {
      store_.count_non_numeric_counter();
      continue;
    }
    std::string_view k = key_text(field);
    store_.add_counter(out_.strings.intern(k), x);
  }
}

void ChunkReader::read_args(od::value& v, RawEvent& ev) {
  if (ev.ph == 'C') return read_counter_args(v);
  od::object args;
  if (v.get_object().get(args)) {
    if (token(v).substr(0, 4) == "null") return;
    throw FieldError{"args is not an object", false};
  }
  for (auto item : args) {
    // One copy of the field, then its key and value by reference: copying each part out of
    // the simdjson_result costs a store-forwarding stall per field.
    od::field field;
    check(std::move(item).get(field));
    const std::string_view key = key_text(field);
    const ArgKey k = arg_key(key);
    if (k == ArgKey::kUnknown) continue;
    try {
      ArgValue value{*this, field.value()};
      read_arg(k, value, ev.args);
    } catch (FieldError& e) {
      if (e.structural) throw;
      if (!options_.recover) {
        e.key = "args.";
        e.key += key;
        throw;
      }
      // An argument is optional: read as if this copy of the key were absent (its column
      // stays missing), and keep the event, which the timeline needs.
      ev.bad_arg = true;
    }
  }
}

void ChunkReader::read_event(od::object obj, RawEvent& ev) {
  bool args_before_ph = false;
  std::string_view k;  // the key being read, for the error
  try {
    for (auto item : obj) {
      od::field field;
      check(std::move(item).get(field));
      k = key_text(field);
      read_field(k, field.value(), ev, args_before_ph);
    }
    if (args_before_ph && ev.ph != 0) {
      // Every field is walked again (none skipped after args), so that the parser ends
      // past the event and event_end() finds its end.
      k = "args";
      bool ignored;
      check(obj.reset().get(ignored));
      for (auto item : obj) {
        od::field field;
        check(std::move(item).get(field));
        if (key_text(field) == "args") read_args(field.value(), ev);
      }
    }
  } catch (FieldError& e) {
    if (!e.structural && e.key.empty()) e.key = k;
    throw;
  }
}

// One field of an event, by its key (arg_keys.h).
void ChunkReader::read_field(std::string_view k, od::value& v, RawEvent& ev, bool& args_before_ph) {
  switch (event_key(k)) {
    case EventKey::kPh:
      ev.ph = read_char(v);
      return;
    case EventKey::kTs:
      ev.ts = read_time(v);
      ev.has_ts = true;
      return;
    case EventKey::kId:
      ev.id = read_id(v, ev);
      return;
    case EventKey::kBp:
      ev.binds_enclosing = read_char(v) == 'e';
      return;
    case EventKey::kCat:
      ev.cat = read_repeated_string(v, last_cat_);
      return;
    case EventKey::kPid:
      ev.pid = read_repeated_id(v, ev, last_pid_);
      return;
    case EventKey::kTid:
      ev.tid = read_repeated_id(v, ev, last_tid_);
      return;
    case EventKey::kDur:
      ev.dur = read_time(v);
      ev.has_dur = true;
      return;
    case EventKey::kName:
      ev.name = read_string(v);
      return;
    case EventKey::kArgs:
      if (ev.ph == 0)
        args_before_ph = true;  // read on a second pass, once ph is known
      else
        read_args(v, ev);
      return;
    case EventKey::kScope:
      ev.scope = read_char(v);
      return;
    case EventKey::kOther:
      return;
  }
}

}  // namespace

EventParser::EventParser(const ParseOptions& options) : options_(options) {
  const char* setting = std::getenv("HTA_FAST_WALKER");
  walk_ = !(setting && std::strcmp(setting, "0") == 0);
}

EventParser::~EventParser() = default;

ChunkError EventParser::parse(const char* text, size_t len, uint64_t file_offset,
                              TraceColumns& out) {
  if (walk_) {
    // simdjson's first stage, run here so that its index is ours to walk. A chunk it
    // rejects (invalid UTF-8, an unclosed string) goes to the On-Demand reader whole, which
    // reports or repairs it as it always has.
    if (!index_ || index_->capacity() < len) {
      const size_t capacity = std::max(len, size_t{1} << 20);
      if (index_) {
        if (index_->set_capacity(capacity)) index_.reset();
      } else if (simdjson::get_active_implementation()->create_dom_parser_implementation(
                     capacity, simdjson::DEFAULT_MAX_DEPTH, index_)) {
        index_.reset();
      }
    }
    if (index_ && !index_->stage1(reinterpret_cast<const uint8_t*>(text), len,
                                  simdjson::stage1_mode::regular)) {
      const size_t done =
          walk_events(text, len, index_->structural_indexes.get(), index_->n_structural_indexes,
                      file_offset, out, layout_, recent_);
      if (done == len) return {};
      if (done > 1) {
        // The events after the one the walker stopped at, as a chunk of their own.
        rest_.assign(1, '[');
        rest_.insert(rest_.end(), text + done, text + len);
        rest_.resize(rest_.size() + simdjson::SIMDJSON_PADDING, ' ');
        ChunkError result =
            read_on_demand(rest_.data(), len - done + 1, file_offset + done - 1, out);
        result.on_demand = true;
        return result;
      }
    }
  }
  ChunkError result = read_on_demand(text, len, file_offset, out);
  result.on_demand = true;
  return result;
}

ChunkError EventParser::read_on_demand(const char* text, size_t len, uint64_t file_offset,
                                       TraceColumns& out) {
  ChunkError result;
  const Utf8Repair* repaired = nullptr;  // text is repair_.text: map offsets back
  auto offset_of = [&](const char* p) {
    size_t i = static_cast<size_t>(p - text);
    if (repaired) i = repaired->input_index(i);
    return file_offset + i - 1;
  };
  auto fail = [&](const char* where, std::string message, bool field_error) {
    result.failed = true;
    result.field_error = field_error;
    result.offset = offset_of(where);
    result.message = std::move(message);
    return result;
  };

  od::document doc;
  auto err = parser_.iterate(text, len, len + simdjson::SIMDJSON_PADDING).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    if (!options_.recover) {
      const char* bad = first_invalid_utf8(text, len);
      fail(bad ? bad : text + 1, "invalid UTF-8 in the text", false);
      result.recoverable = true;
      return result;
    }
    repair_.repair(text, len);
    const char* fixed = repair_.text.data();
    const char* fixed_end = fixed + repair_.text.size() - 1;  // its closing ']'
    for (const auto& e : repair_.edits) {
      // The example is the input from the bad sequence on, the sequence shown as U+FFFD.
      const char* at = fixed + e.text_end - 3;
      out.stats.add(Stat::invalid_utf8, file_offset + e.input_at - 1, snippet(at, fixed_end));
    }
    len = repair_.text.size();
    repair_.text.resize(len + simdjson::SIMDJSON_PADDING, ' ');
    text = repair_.text.data();
    repaired = &repair_;
    err = parser_.iterate(text, len, len + simdjson::SIMDJSON_PADDING).get(doc);
  }
  if (err) return fail(text + 1, simdjson::error_message(err), false);
  od::array events;
  if ((err = doc.get_array().get(events)))
    return fail(text + 1, simdjson::error_message(err), false);

  const char* text_end = text + len - 1;  // the splitter's ']': the real bytes end before it
  ChunkReader reader(options_, out, doc, text_end);
  const char* event_start = text + 1;
  RawEvent ev;
  try {
    for (auto item : events) {
      od::value value;
      if ((err = item.get(value))) return fail(event_start, simdjson::error_message(err), false);
      const char* here = nullptr;
      if (value.current_location().get(here) == simdjson::SUCCESS) event_start = here;
      od::object obj;
      if (value.get_object().get(obj)) {
        out.stats.add(Stat::non_object_event, offset_of(event_start),
                      snippet(event_start, text_end, 40));
        continue;
      }
      ev.start();
      try {
        reader.read_event(obj, ev);
      } catch (const FieldError& e) {
        if (e.structural || !options_.recover) throw;
        // Recover mode: skip the rest of this event; the array iteration moves past it.
        out.stats.add(Stat::bad_field, offset_of(event_start), snippet(event_start, text_end));
        continue;
      }
      reader.store(ev, offset_of(event_start), event_start);
    }
  } catch (const simdjson::simdjson_error& e) {
    // No On-Demand call here should throw; if one does, it is a broken chunk, not a crash.
    return fail(event_start, e.what(), false);
  } catch (const FieldError& e) {
    if (e.structural) return fail(event_start, e.what, false);
    // Only strict mode gets here: recover=True skips the event.
    std::string message = "bad event: ";
    if (!e.key.empty()) message += "key \"" + e.key + "\": ";
    message += e.what;
    fail(event_start, std::move(message), true);
    result.key = e.key;
    result.recoverable = true;
    return result;
  }
  // The array must end exactly at the closing bracket the splitter added.
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return fail(trailing, "unexpected content after the events", false);
  }
  return result;
}

}  // namespace hta
