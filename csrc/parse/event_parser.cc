#include "parse/event_parser.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "parse/arg_keys.h"
#include "parse/number_text.h"
#include "parse/utf8_text.h"

namespace hta {
namespace od = simdjson::ondemand;

namespace {

// Arguments of one event that the loader keeps, with a bit per argument group present.
// Only the fields every event is read for are reset per event; a group's fields get their
// defaults when the event first touches the group (resetting all ~300 bytes per event
// showed in profiles).
struct ArgValues {
  enum Group : uint8_t { kKernel = 1, kOp = 2, kComm = 4, kSync = 8, kMemory = 16, kMeta = 32 };
  uint8_t groups = 0;
  int64_t correlation = -1, external_id = -1;
  int32_t device = -1, stream = -1;
  // kKernel
  int32_t queued, context, grid[3], block[3], registers, shared_memory;
  float blocks_per_sm, warps_per_sm, occupancy;
  int64_t bytes;
  double bandwidth;
  // kOp
  int64_t record_function_id, sequence_number, fwd_thread_id, ev_idx;
  int32_t input_dims, input_type, input_strides, concrete_inputs;
  // kComm
  int32_t collective_name, dtype, group_size, pg_name, pg_desc, pg_ranks, in_split, out_split, rank;
  int64_t in_nelems, out_nelems, seq;
  // kSync
  int32_t wait_on_stream;
  int64_t wait_on_event_correlation;
  // kMeta
  int32_t meta_value;
  int64_t sort_index;
  // kMemory
  int64_t mem_bytes, total_allocated, total_reserved, addr;
  int32_t device_type, device_id;

  void start() {
    groups = 0;
    correlation = external_id = -1;
    device = stream = -1;
  }
  // Gives the group's fields their defaults the first time the event touches it.
  void touch(Group g) {
    if (groups & g) return;
    groups |= g;
    switch (g) {
      case kKernel:
        queued = context = registers = shared_memory = -1;
        grid[0] = grid[1] = grid[2] = block[0] = block[1] = block[2] = -1;
        blocks_per_sm = warps_per_sm = occupancy = NAN;
        bytes = -1;
        bandwidth = NAN;
        return;
      case kOp:
        record_function_id = sequence_number = fwd_thread_id = ev_idx = -1;
        input_dims = input_type = input_strides = concrete_inputs = -1;
        return;
      case kComm:
        collective_name = dtype = group_size = pg_name = pg_desc = pg_ranks = -1;
        in_split = out_split = rank = -1;
        in_nelems = out_nelems = seq = -1;
        return;
      case kSync:
        wait_on_stream = -1;
        wait_on_event_correlation = -1;
        return;
      case kMeta:
        meta_value = -1;
        sort_index = -1;
        return;
      case kMemory:
        mem_bytes = total_allocated = total_reserved = addr = -1;
        device_type = device_id = -1;
        return;
    }
  }
};

struct RawEvent {
  char ph;
  int32_t name, cat;
  int64_t pid, tid, id;
  int64_t ts, dur;
  bool has_ts, has_dur, binds_enclosing;
  char scope;
  // What was read leniently, counted when the event is stored: an argument that could not
  // be read (recover=True), an integer id kept as text (read_id).
  bool bad_arg, id_as_text;
  ArgValues args;

  void start() {
    ph = 0;
    name = cat = -1;
    pid = tid = id = -1;
    ts = dur = 0;
    has_ts = has_dur = binds_enclosing = false;
    scope = 0;
    bad_arg = id_as_text = false;
    args.start();
  }
};

// Thrown inside one chunk; turned into a ChunkError at the chunk boundary. `key` is filled
// in on the way out, by the loop that knows which field was being read.
struct FieldError {
  const char* what;
  bool structural;
  std::string key = {};
};

constexpr size_t kSnippetBytes = 80;

bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A stat's example: up to `max` bytes from `start`, never past `end` (the event's end, or
// the last real byte of the chunk: past it lie the splitter's ']', padding and stale bytes
// of a reused buffer), without trailing whitespace or a character cut in two.
std::string_view snippet(const char* start, const char* end, size_t max = kSnippetBytes) {
  const size_t avail = end > start ? static_cast<size_t>(end - start) : 0;
  size_t n = std::min(avail, max);
  if (n < avail) {
    while (n > 0 && (static_cast<unsigned char>(start[n]) & 0xC0) == 0x80) --n;
  }
  while (n > 0 && is_json_space(start[n - 1])) --n;
  return {start, n};
}

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

// A wrong-typed value is a bad field; a "value" that is a bracket, comma or colon (or
// nothing) is broken JSON, which no event-level recovery can step over reliably.
[[noreturn]] void bad_value(std::string_view tok, const char* what) {
  const bool broken =
      tok.empty() || tok[0] == '}' || tok[0] == ']' || tok[0] == ',' || tok[0] == ':';
  throw FieldError{broken ? "broken JSON: a value is missing" : what, broken};
}

// The value a field had in the event before, by its exact text: pid, tid and cat repeat
// from event to event, and comparing a few bytes is cheaper than parsing or interning them
// again. The text is a view into the chunk, which outlives the reader.
template <class T>
struct LastValue {
  std::string_view text;
  T value{};
  bool matches(std::string_view tok) const { return !text.empty() && tok == text; }
  T remember(std::string_view tok, T v) {
    text = tok;
    value = v;
    return v;
  }
};

class ChunkReader {
 public:
  // `text_end`: the chunk's last real byte (its closing ']', added by the splitter).
  ChunkReader(const ParseOptions& options, TraceColumns& out, od::document& doc,
              const char* text_end)
      : options_(options), out_(out), doc_(doc), text_end_(text_end) {}

  void read_event(od::object obj, RawEvent& ev);
  void store(RawEvent& ev, uint64_t offset, const char* where);
  // Where the event read last ends: the parser stands just past it.
  const char* event_end(const char* start) {
    const char* here = nullptr;
    if (doc_.current_location().get(here) == simdjson::SUCCESS && here > start &&
        here <= text_end_) {
      return here;
    }
    return text_end_;
  }

 private:
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
  void read_dim3_arg(od::value& v, ArgValues& a, int32_t (&field)[3]);
  char read_char(od::value& v);
  void read_args(od::value& v, RawEvent& ev);
  void read_counter_args(od::value& v, RawEvent& ev);
  void read_arg(ArgKey key, od::value& v, ArgValues& a);
  void note_lenient_reads(const RawEvent& ev, uint64_t offset, std::string_view text);

  const ParseOptions& options_;
  TraceColumns& out_;
  od::document& doc_;
  const char* text_end_;
  LastValue<int64_t> last_pid_, last_tid_;
  LastValue<int32_t> last_cat_;
  // Counter args are stored when the event is, since ts may follow args.
  std::vector<std::pair<int32_t, double>> counter_values_;
  uint64_t non_numeric_counters_ = 0;
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
  return out_.strings.intern(text);
}

int64_t ChunkReader::read_int(od::value& v) {
  std::string_view tok = token(v);
  int64_t x = 0;
  switch (parse_int64(tok, x)) {
    case NumberStatus::kOk:
      return x;
    case NumberStatus::kOutOfRange:
      throw FieldError{"integer beyond int64", false};
    default:
      if (tok.substr(0, 4) == "null") return -1;
      bad_value(tok, "expected an integer");
  }
}

int32_t ChunkReader::read_int32(od::value& v) {
  const int64_t x = read_int(v);
  if (x < INT32_MIN || x > INT32_MAX) throw FieldError{"integer beyond int32", false};
  return static_cast<int32_t>(x);
}

int64_t ChunkReader::read_time(od::value& v) {
  int64_t ns = 0;
  const std::string_view tok = token(v);
  switch (micros_to_ns(tok, ns)) {
    case NumberStatus::kOk:
      return ns;
    case NumberStatus::kOutOfRange:
      throw FieldError{"timestamp beyond int64 nanoseconds", false};
    default:
      bad_value(tok, "expected a number of microseconds");
  }
}

double ChunkReader::read_double(od::value& v) {
  std::string_view tok = token(v);
  double x = 0;
  if (parse_double(tok, x) == NumberStatus::kOk) return x;
  if (tok.substr(0, 4) == "null") return NAN;
  bad_value(tok, "expected a number");
}

// pid/tid/id: numbers, numeric strings, or names ("Spans", "stream 7", ""). Names are stored
// at kStringIdBase - (pool id); an integer at or below kStringIdBase would read as such a
// name, so it is kept as its decimal text, as the string "-1099511627776" would be.
int64_t ChunkReader::read_id(od::value& v, RawEvent& ev) {
  std::string_view tok = token(v);
  int64_t x = 0;
  switch (parse_int64(tok, x)) {
    case NumberStatus::kOk:
      if (x > kStringIdBase) return x;
      ev.id_as_text = true;
      return kStringIdBase - out_.strings.intern(std::to_string(x));
    case NumberStatus::kOutOfRange:
      throw FieldError{"id beyond int64", false};
    default:
      break;
  }
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

// Streams are integers; AMD runtime events write "0x0" and some tools write names.
int32_t ChunkReader::read_stream(od::value& v) {
  std::string_view tok = token(v);
  int64_t x = 0;
  if (parse_int64(tok, x) == NumberStatus::kOk) {
    // CUPTI writes "no stream" as 2^32 - 1; anything else outside int32 is no stream either.
    return x >= INT32_MIN && x <= INT32_MAX ? static_cast<int32_t>(x) : -1;
  }
  if (!tok.empty() && tok[0] == '"') return -1;
  bad_value(tok, "expected a stream number");
}

// grid/block of a kernel: [x, y, z]. Other events reuse the names for other things
// (Triton's "grid": "grid(100,)"), which are not kernel arguments: false.
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

void ChunkReader::read_dim3_arg(od::value& v, ArgValues& a, int32_t (&field)[3]) {
  int32_t dims[3] = {-1, -1, -1};
  if (!read_dim3(v, dims)) return;
  a.touch(ArgValues::kKernel);
  std::copy(dims, dims + 3, field);
}

// ph, s and bp: a string of exactly one printable ASCII character, escaped ("\u0058") or not.
char ChunkReader::read_char(od::value& v) {
  auto printable = [](char c) { return c >= 0x20 && c < 0x7f; };
  std::string_view tok = token(v);
  if (tok.size() >= 3 && tok[0] == '"' && tok[2] == '"' && tok[1] != '\\' && tok[1] != '"' &&
      printable(tok[1])) {
    return tok[1];
  }
  std::string_view text;
  if (tok.empty() || tok[0] != '"' || v.get_string().get(text) || text.size() != 1 ||
      !printable(text[0])) {
    bad_value(tok, "expected a one-letter string");
  }
  return text[0];
}

void ChunkReader::read_arg(ArgKey key, od::value& v, ArgValues& a) {
  using G = ArgValues;
  switch (key) {
    case ArgKey::kUnknown:
      return;
    case ArgKey::kCorrelation:
      a.correlation = read_int(v);
      return;
    case ArgKey::kExternalId:
      a.external_id = read_int(v);
      return;
    case ArgKey::kDevice:
      a.device = read_int32(v);
      return;
    case ArgKey::kStream:
      a.stream = read_stream(v);
      return;
    case ArgKey::kQueued:
      a.touch(G::kKernel);
      a.queued = read_int32(v);
      return;
    case ArgKey::kContext:
      a.touch(G::kKernel);
      a.context = read_int32(v);
      return;
    case ArgKey::kGrid:
      return read_dim3_arg(v, a, a.grid);
    case ArgKey::kBlock:
      return read_dim3_arg(v, a, a.block);
    case ArgKey::kRegisters:
      a.touch(G::kKernel);
      a.registers = read_int32(v);
      return;
    case ArgKey::kSharedMemory:
      a.touch(G::kKernel);
      a.shared_memory = read_int32(v);
      return;
    case ArgKey::kBlocksPerSm:
      a.touch(G::kKernel);
      a.blocks_per_sm = float(read_double(v));
      return;
    case ArgKey::kWarpsPerSm:
      a.touch(G::kKernel);
      a.warps_per_sm = float(read_double(v));
      return;
    case ArgKey::kOccupancy:
      a.touch(G::kKernel);
      a.occupancy = float(read_double(v));
      return;
    case ArgKey::kBytes:
      a.touch(G::kKernel);
      a.bytes = read_int(v);
      return;
    case ArgKey::kBandwidth:
      a.touch(G::kKernel);
      a.bandwidth = read_double(v);
      return;
    case ArgKey::kRecordFunctionId:
      a.touch(G::kOp);
      a.record_function_id = read_int(v);
      return;
    case ArgKey::kSequenceNumber:
      a.touch(G::kOp);
      a.sequence_number = read_int(v);
      return;
    case ArgKey::kFwdThreadId:
      a.touch(G::kOp);
      a.fwd_thread_id = read_int(v);
      return;
    case ArgKey::kEvIdx:
      a.touch(G::kOp);
      a.ev_idx = read_int(v);
      return;
    case ArgKey::kInputDims:
      a.touch(G::kOp);
      a.input_dims = read_raw_json(v);
      return;
    case ArgKey::kInputType:
      a.touch(G::kOp);
      a.input_type = read_raw_json(v);
      return;
    case ArgKey::kInputStrides:
      a.touch(G::kOp);
      a.input_strides = read_raw_json(v);
      return;
    case ArgKey::kConcreteInputs:
      a.touch(G::kOp);
      a.concrete_inputs = read_raw_json(v);
      return;
    case ArgKey::kCollectiveName:
      a.touch(G::kComm);
      a.collective_name = read_string(v);
      return;
    case ArgKey::kInMsgNelems:
      a.touch(G::kComm);
      a.in_nelems = read_int(v);
      return;
    case ArgKey::kOutMsgNelems:
      a.touch(G::kComm);
      a.out_nelems = read_int(v);
      return;
    case ArgKey::kDtype:
      a.touch(G::kComm);
      a.dtype = read_raw_json(v);
      return;
    case ArgKey::kGroupSize:
      a.touch(G::kComm);
      a.group_size = read_int32(v);
      return;
    case ArgKey::kPgName:
      a.touch(G::kComm);
      a.pg_name = read_raw_json(v);
      return;
    case ArgKey::kPgDesc:
      a.touch(G::kComm);
      a.pg_desc = read_raw_json(v);
      return;
    case ArgKey::kPgRanks:
      a.touch(G::kComm);
      a.pg_ranks = read_raw_json(v);
      return;
    case ArgKey::kInSplitSize:
      a.touch(G::kComm);
      a.in_split = read_raw_json(v);
      return;
    case ArgKey::kOutSplitSize:
      a.touch(G::kComm);
      a.out_split = read_raw_json(v);
      return;
    case ArgKey::kRank:
      a.touch(G::kComm);
      a.rank = read_int32(v);
      return;
    case ArgKey::kSeq:
      a.touch(G::kComm);
      a.seq = read_int(v);
      return;
    case ArgKey::kWaitOnStream:
      a.touch(G::kSync);
      a.wait_on_stream = read_int32(v);
      return;
    case ArgKey::kWaitOnEventCorrelation:
      a.touch(G::kSync);
      a.wait_on_event_correlation = read_int(v);
      return;
    case ArgKey::kMetaName:
    case ArgKey::kMetaLabels:
      a.touch(G::kMeta);
      a.meta_value = read_raw_json(v);
      return;
    case ArgKey::kMetaSortIndex:
      a.touch(G::kMeta);
      a.sort_index = read_int(v);
      return;
    case ArgKey::kMemBytes:
      a.touch(G::kMemory);
      a.mem_bytes = read_int(v);
      return;
    case ArgKey::kMemTotalAllocated:
      a.touch(G::kMemory);
      a.total_allocated = read_int(v);
      return;
    case ArgKey::kMemTotalReserved:
      a.touch(G::kMemory);
      a.total_reserved = read_int(v);
      return;
    case ArgKey::kMemAddr:
      a.touch(G::kMemory);
      a.addr = read_int(v);
      return;
    case ArgKey::kMemDeviceType:
      a.touch(G::kMemory);
      a.device_type = read_int32(v);
      return;
    case ArgKey::kMemDeviceId:
      a.touch(G::kMemory);
      a.device_id = read_int32(v);
      return;
  }
}

void ChunkReader::read_counter_args(od::value& v, RawEvent& ev) {
  (void)ev;
  od::object args;
  if (v.get_object().get(args)) throw FieldError{"args is not an object", false};
  for (auto item : args) {
    od::field field;
    check(std::move(item).get(field));
    double x = 0;
    std::string_view tok = token(field.value());
    if (parse_double(tok, x) != NumberStatus::kOk) {
      ++non_numeric_counters_;
      continue;
    }
    std::string_view k = key_text(field);
    counter_values_.emplace_back(out_.strings.intern(k), x);
  }
}

void ChunkReader::read_args(od::value& v, RawEvent& ev) {
  if (ev.ph == 'C') return read_counter_args(v, ev);
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
      read_arg(k, field.value(), ev.args);
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

// One field of an event, by its key; the known keys are told apart by length first.
void ChunkReader::read_field(std::string_view k, od::value& v, RawEvent& ev, bool& args_before_ph) {
  switch (k.size()) {
    case 2:
      if (k == "ph")
        ev.ph = read_char(v);
      else if (k == "ts") {
        ev.ts = read_time(v);
        ev.has_ts = true;
      } else if (k == "id")
        ev.id = read_id(v, ev);
      else if (k == "bp")
        ev.binds_enclosing = read_char(v) == 'e';
      break;
    case 3:
      if (k == "cat")
        ev.cat = read_repeated_string(v, last_cat_);
      else if (k == "pid")
        ev.pid = read_repeated_id(v, ev, last_pid_);
      else if (k == "tid")
        ev.tid = read_repeated_id(v, ev, last_tid_);
      else if (k == "dur") {
        ev.dur = read_time(v);
        ev.has_dur = true;
      }
      break;
    case 4:
      if (k == "name")
        ev.name = read_string(v);
      else if (k == "args") {
        if (ev.ph == 0)
          args_before_ph = true;  // read on a second pass, once ph is known
        else
          read_args(v, ev);
      }
      break;
    case 1:
      if (k == "s") ev.scope = read_char(v);
      break;
    default:
      break;
  }
}

void ChunkReader::note_lenient_reads(const RawEvent& ev, uint64_t offset, std::string_view text) {
  if (ev.bad_arg) out_.stats.add(Stat::bad_arg, offset, text);
  if (ev.id_as_text) out_.stats.add(Stat::id_as_text, offset, text);
}

void ChunkReader::store(RawEvent& ev, uint64_t offset, const char* where) {
  auto example = [&] { return snippet(where, event_end(where)); };
  if (ev.bad_arg | ev.id_as_text) note_lenient_reads(ev, offset, example());
  if (ev.ph == 0) return out_.stats.add(Stat::missing_phase, offset, example());
  if (ev.ph == 'M') {
    ev.args.touch(ArgValues::kMeta);
    auto& m = out_.meta;
    m.name.push_back(ev.name);
    m.pid.push_back(ev.pid);
    m.tid.push_back(ev.tid);
    m.value.push_back(ev.args.meta_value);
    m.sort_index.push_back(ev.args.sort_index);
    return;
  }
  if (!ev.has_ts) {
    counter_values_.clear();
    return out_.stats.add(Stat::missing_timestamp, offset, example());
  }
  switch (ev.ph) {
    case 'X': {
      if (!ev.has_dur) out_.stats.add(Stat::missing_duration, offset, example());
      if (ev.dur < 0) {
        out_.stats.add(Stat::negative_duration, offset, example());
        ev.dur = 0;
      }
      auto& e = out_.events;
      const int64_t row = static_cast<int64_t>(e.ts.size());
      const ArgValues& a = ev.args;
      e.ts.push_back(ev.ts);
      e.dur.push_back(ev.dur);
      e.name.push_back(ev.name);
      e.cat.push_back(ev.cat);
      e.pid.push_back(ev.pid);
      e.tid.push_back(ev.tid);
      e.kind.push_back(0);
      e.kernel_class.push_back(0);
      e.device.push_back(a.device);
      e.stream.push_back(a.stream);
      e.correlation.push_back(a.correlation);
      e.external_id.push_back(a.external_id);
      e.partner.push_back(-1);
      e.parent.push_back(-1);
      e.step.push_back(-1);
      if (a.groups & ArgValues::kKernel) {
        auto& k = out_.kernel_args;
        k.row.push_back(row);
        k.queued.push_back(a.queued);
        k.context.push_back(a.context);
        k.grid_x.push_back(a.grid[0]);
        k.grid_y.push_back(a.grid[1]);
        k.grid_z.push_back(a.grid[2]);
        k.block_x.push_back(a.block[0]);
        k.block_y.push_back(a.block[1]);
        k.block_z.push_back(a.block[2]);
        k.registers_per_thread.push_back(a.registers);
        k.shared_memory.push_back(a.shared_memory);
        k.blocks_per_sm.push_back(a.blocks_per_sm);
        k.warps_per_sm.push_back(a.warps_per_sm);
        k.est_achieved_occupancy.push_back(a.occupancy);
        k.bytes.push_back(a.bytes);
        k.memory_bandwidth_gbps.push_back(a.bandwidth);
      }
      if (a.groups & ArgValues::kOp) {
        auto& o = out_.op_args;
        o.row.push_back(row);
        o.record_function_id.push_back(a.record_function_id);
        o.sequence_number.push_back(a.sequence_number);
        o.fwd_thread_id.push_back(a.fwd_thread_id);
        o.ev_idx.push_back(a.ev_idx);
        o.input_dims.push_back(a.input_dims);
        o.input_type.push_back(a.input_type);
        o.input_strides.push_back(a.input_strides);
        o.concrete_inputs.push_back(a.concrete_inputs);
      }
      if (a.groups & ArgValues::kComm) {
        auto& c = out_.comm_args;
        c.row.push_back(row);
        c.collective_name.push_back(a.collective_name);
        c.in_msg_nelems.push_back(a.in_nelems);
        c.out_msg_nelems.push_back(a.out_nelems);
        c.dtype.push_back(a.dtype);
        c.group_size.push_back(a.group_size);
        c.process_group_name.push_back(a.pg_name);
        c.process_group_desc.push_back(a.pg_desc);
        c.process_group_ranks.push_back(a.pg_ranks);
        c.in_split_size.push_back(a.in_split);
        c.out_split_size.push_back(a.out_split);
        c.rank.push_back(a.rank);
        c.seq.push_back(a.seq);
      }
      if (a.groups & ArgValues::kSync) {
        auto& s = out_.sync_args;
        s.row.push_back(row);
        s.wait_on_stream.push_back(a.wait_on_stream);
        s.wait_on_event_correlation.push_back(a.wait_on_event_correlation);
      }
      return;
    }
    case 's':
    case 'f':
    case 't': {
      auto& f = out_.flows;
      f.ts.push_back(ev.ts);
      f.pid.push_back(ev.pid);
      f.tid.push_back(ev.tid);
      f.id.push_back(ev.id);
      f.phase.push_back(static_cast<uint8_t>(ev.ph));
      f.binds_enclosing.push_back(ev.binds_enclosing);
      f.cat.push_back(ev.cat);
      f.name.push_back(ev.name);
      f.event.push_back(-1);
      return;
    }
    case 'C': {
      auto& c = out_.counters;
      for (auto [series, value] : counter_values_) {
        c.ts.push_back(ev.ts);
        c.pid.push_back(ev.pid);
        c.tid.push_back(ev.tid);
        c.name.push_back(ev.name);
        c.series.push_back(series);
        c.value.push_back(value);
      }
      counter_values_.clear();
      if (non_numeric_counters_) out_.stats.add(Stat::counter_non_numeric, non_numeric_counters_);
      non_numeric_counters_ = 0;
      return;
    }
    case 'i':
    case 'I': {
      ev.args.touch(ArgValues::kMemory);
      auto& i = out_.instants;
      const ArgValues& a = ev.args;
      i.ts.push_back(ev.ts);
      i.pid.push_back(ev.pid);
      i.tid.push_back(ev.tid);
      i.name.push_back(ev.name);
      i.cat.push_back(ev.cat);
      i.scope.push_back(static_cast<uint8_t>(ev.scope));
      i.bytes.push_back(a.mem_bytes);
      i.total_allocated.push_back(a.total_allocated);
      i.total_reserved.push_back(a.total_reserved);
      i.addr.push_back(a.addr);
      i.device_type.push_back(a.device_type);
      i.device_id.push_back(a.device_id);
      return;
    }
    default:
      out_.stats.add(Stat::unsupported_phase, offset, example());
  }
}

}  // namespace

ChunkError EventParser::parse(const char* text, size_t len, uint64_t file_offset,
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
