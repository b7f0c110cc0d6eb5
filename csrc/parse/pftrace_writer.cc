#include "parse/pftrace_writer.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <limits>
#include <protozero/pbf_writer.hpp>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/format_error.h"
#include "parse/number_text.h"

namespace hta {
namespace {

namespace od = simdjson::ondemand;

// TrackEvent.Type (track_event.proto).
enum : int32_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };
constexpr uint32_t kSequence = 1;  // every packet is on one sequence

// An argument, read once from the JSON and kept until its event is written.
struct Arg {
  enum class Kind : uint8_t { kNone, kBool, kInt, kUint, kDouble, kString, kJson };
  std::string key;
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;  // a string's content, or an array's or object's JSON text
};

struct Event {
  char ph = 0;
  int64_t pid = -1, tid = -1, ts = 0, dur = 0;
  bool has_dur = false, has_name = false, has_cat = false;
  char scope = 0;
  std::string name, cat;
  std::vector<Arg> args;
  std::vector<uint64_t> flows, terminating;
  int64_t end() const { return ts + dur; }
};

struct Flow {
  char ph = 0;
  bool bind_enclosing = false;
  int64_t pid = -1, tid = -1, ts = 0;
  std::string cat, id_text;  // (cat, id as written) names one flow
  bool numeric_id = false;
  uint64_t id = 0;
};

struct ProcessMeta {
  std::string name, labels;
  int64_t sort_index = -1;
};
struct ThreadMeta {
  std::string name;
  int64_t sort_index = -1;
};

using ThreadKey = std::pair<int64_t, int64_t>;

std::string_view trimmed(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

class JsonEvents {
 public:
  std::vector<Event> events;  // ph X and i, in file order
  std::vector<Event> counters;
  std::vector<Flow> flows;
  std::map<int64_t, ProcessMeta> processes;
  std::map<ThreadKey, ThreadMeta> threads;
  std::map<std::string, int64_t> left_out;
  bool in_event = false;  // reading an event's members, not the document's structure

  void read(std::string_view json);

 private:
  void event(od::object obj);
  bool id_of(od::value v, int64_t& out);  // pid/tid: an integer of int32 range
  static void arg_of(od::value v, Arg& a);
  void meta(const Event& e);
  // A process or thread has one descriptor: a metadata event that names it again is left
  // out (true: it was handled).
  bool repeated() {
    ++left_out["a repeated process or thread metadata event"];
    return true;
  }
};

bool JsonEvents::id_of(od::value v, int64_t& out) {
  int64_t x = 0;
  if (v.get_int64().get(x) || x < std::numeric_limits<int32_t>::min() ||
      x > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  out = x;
  return true;
}

void JsonEvents::arg_of(od::value v, Arg& a) {
  switch (v.type()) {
    case od::json_type::null:
      a.kind = Arg::Kind::kNone;
      return;
    case od::json_type::boolean:
      a.kind = Arg::Kind::kBool;
      a.b = v.get_bool();
      return;
    case od::json_type::string:
      a.kind = Arg::Kind::kString;
      a.s = std::string(std::string_view(v.get_string()));
      return;
    case od::json_type::number:
      switch (v.get_number_type()) {
        case od::number_type::signed_integer:
          a.kind = Arg::Kind::kInt;
          a.i = v.get_int64();
          return;
        case od::number_type::unsigned_integer:
          a.kind = Arg::Kind::kUint;
          a.u = v.get_uint64();
          return;
        case od::number_type::floating_point_number:
          a.kind = Arg::Kind::kDouble;
          a.d = v.get_double();
          return;
        default:  // beyond 64 bits: kept as its text, as JSON wrote it
          a.kind = Arg::Kind::kJson;
          a.s = std::string(trimmed(v.raw_json_token()));
          return;
      }
    case od::json_type::array:
      a.kind = Arg::Kind::kJson;
      a.s = std::string(trimmed(od::array(v.get_array()).raw_json()));
      return;
    case od::json_type::object:
      a.kind = Arg::Kind::kJson;
      a.s = std::string(trimmed(od::object(v.get_object()).raw_json()));
      return;
  }
}

void JsonEvents::event(od::object obj) {
  Event e;
  Flow f;
  bool has_ts = false, ids_ok = true;
  std::string id_text;
  for (auto field : obj) {
    const std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "ph") {
      const std::string_view ph = v.get_string();
      e.ph = ph.size() == 1 ? ph[0] : '?';
    } else if (key == "name") {
      e.name = std::string(std::string_view(v.get_string()));
      e.has_name = true;
    } else if (key == "cat") {
      e.cat = std::string(std::string_view(v.get_string()));
      e.has_cat = true;
    } else if (key == "pid") {
      ids_ok &= id_of(v, e.pid);
    } else if (key == "tid") {
      ids_ok &= id_of(v, e.tid);
    } else if (key == "ts" || key == "dur") {
      int64_t ns = 0;
      if (micros_to_ns(trim_number_text(v.raw_json_token()), ns) != NumberStatus::kOk) continue;
      if (key == "ts") {
        e.ts = ns;
        has_ts = true;
      } else {
        e.dur = ns;
        e.has_dur = true;
      }
    } else if (key == "s") {
      const std::string_view s = v.get_string();
      e.scope = s.size() == 1 ? s[0] : 0;
    } else if (key == "bp") {
      f.bind_enclosing = std::string_view(v.get_string()) == "e";
    } else if (key == "id") {
      id_text = std::string(trimmed(v.raw_json_token()));
      const auto r = std::from_chars(id_text.data(), id_text.data() + id_text.size(), f.id);
      f.numeric_id = r.ec == std::errc() && r.ptr == id_text.data() + id_text.size();
    } else if (key == "args") {
      if (v.type() != od::json_type::object) continue;
      for (auto member : v.get_object()) {
        Arg a;
        a.key = std::string(std::string_view(member.unescaped_key()));
        arg_of(member.value(), a);
        e.args.push_back(std::move(a));
      }
    }
  }
  if (!ids_ok) {
    ++left_out["a pid or tid that is not an integer of 32 bits"];
    return;
  }
  if (e.ph == 'M') return meta(e);
  if (!has_ts) {
    ++left_out["no ts"];
    return;
  }
  switch (e.ph) {
    case 'X':
    case 'i':
    case 'I':
      if (e.ph == 'I') e.ph = 'i';
      events.push_back(std::move(e));
      return;
    case 'C':
      counters.push_back(std::move(e));
      return;
    case 's':
    case 'f':
    case 't':
      f.ph = e.ph;
      f.pid = e.pid;
      f.tid = e.tid;
      f.ts = e.ts;
      f.cat = e.cat;
      f.id_text = id_text;
      flows.push_back(std::move(f));
      return;
    default:
      ++left_out[std::string("phase ") + e.ph];
  }
}

// process_name, process_labels, process_sort_index, thread_name, thread_sort_index: what
// Process and ThreadDescriptor hold (the first of each; a repeat is left out).
void JsonEvents::meta(const Event& e) {
  auto text = [&](const char* key, std::string& out) {
    for (const Arg& a : e.args) {
      if (a.key == key && a.kind == Arg::Kind::kString) {
        if (!out.empty()) return repeated();
        out = a.s;
        return true;
      }
    }
    return false;
  };
  auto number = [&](int64_t& out) {
    for (const Arg& a : e.args) {
      if (a.key == "sort_index" && a.kind == Arg::Kind::kInt && a.i >= 0) {
        if (out >= 0) return repeated();
        out = a.i;
        return true;
      }
    }
    return false;
  };
  bool kept = true;
  if (e.name == "process_name") {
    kept = text("name", processes[e.pid].name);
  } else if (e.name == "process_labels") {
    kept = text("labels", processes[e.pid].labels) || text("name", processes[e.pid].labels);
  } else if (e.name == "process_sort_index") {
    kept = number(processes[e.pid].sort_index);
  } else if (e.name == "thread_name") {
    kept = text("name", threads[{e.pid, e.tid}].name);
  } else if (e.name == "thread_sort_index") {
    kept = number(threads[{e.pid, e.tid}].sort_index);
  } else {
    kept = false;
  }
  if (!kept) ++left_out["metadata event " + e.name];
}

void JsonEvents::read(std::string_view json) {
  const simdjson::padded_string padded(json);
  od::parser parser;
  od::document doc = parser.iterate(padded);
  od::json_type top = od::json_type::null;
  if (doc.type().get(top) || (top != od::json_type::array && top != od::json_type::object)) {
    throw FormatError(ErrorCode::kNotJson, 0,
                      "not a Chrome-trace JSON to write as Perfetto protobuf: the input does "
                      "not start a JSON object or array");
  }
  od::array list;
  if (top == od::json_type::array) {
    list = doc.get_array();
  } else {
    list = doc["traceEvents"].get_array();
  }
  for (od::value item : list) {
    if (item.type() != od::json_type::object) {
      ++left_out["an item of traceEvents that is not an object"];
      continue;
    }
    in_event = true;
    event(item.get_object());
    in_event = false;
  }
}

// ---------------------------------------------------------------------------------------
class Writer {
 public:
  explicit Writer(JsonEvents& in) : in_(in), trace_(out_.bytes) {}
  PftraceWritten run();

 private:
  // One timed packet: its place in the file is (ts, lane, seq), which keeps each lane's
  // own order at equal timestamps.
  struct Timed {
    int64_t ts;
    uint64_t lane;
    uint64_t seq;
    int32_t type;
    size_t event;  // into in_.events, or in_.counters for counters
    uint64_t track;
    double value = 0;
  };
  struct Lane {
    uint64_t uuid;
    std::vector<size_t> stack;  // open slices, outermost first
    uint64_t seq = 0;
  };

  uint64_t process_track(int64_t pid);
  uint64_t thread_track(int64_t pid, int64_t tid);
  uint64_t child_track(uint64_t parent, const std::string* name, bool counter);
  void lay_slices();
  void bind_flows();
  void lay_others();
  void write_descriptor(uint64_t uuid, uint64_t parent, const std::string* name, bool counter,
                        const int64_t* pid, const ThreadKey* thread);
  void write_event(const Timed& t);
  void add(int64_t ts, Lane& lane, int32_t type, size_t event) {
    timed_.push_back({ts, lane.uuid, lane.seq++, type, event, lane.uuid});
  }

  JsonEvents& in_;
  PftraceWritten out_;
  protozero::pbf_writer trace_;
  uint64_t next_uuid_ = 1;
  std::map<int64_t, uint64_t> process_uuid_;
  std::map<ThreadKey, uint64_t> thread_uuid_;
  std::map<ThreadKey, std::deque<Lane>> lanes_;  // lane 0 is the thread's own track
  std::vector<Timed> timed_;
  // Names, categories and argument names, each written once (InternedData) and then
  // named by iid: a slice's text is mostly these.
  std::unordered_map<std::string, uint64_t> names_, cats_, arg_names_;
};

uint64_t Writer::process_track(int64_t pid) {
  const auto found = process_uuid_.find(pid);
  if (found != process_uuid_.end()) return found->second;
  const uint64_t uuid = next_uuid_++;
  process_uuid_[pid] = uuid;
  write_descriptor(uuid, 0, nullptr, false, &pid, nullptr);
  return uuid;
}

uint64_t Writer::thread_track(int64_t pid, int64_t tid) {
  const ThreadKey key{pid, tid};
  const auto found = thread_uuid_.find(key);
  if (found != thread_uuid_.end()) return found->second;
  const uint64_t parent = process_track(pid);
  const uint64_t uuid = next_uuid_++;
  thread_uuid_[key] = uuid;
  write_descriptor(uuid, parent, nullptr, false, nullptr, &key);
  return uuid;
}

uint64_t Writer::child_track(uint64_t parent, const std::string* name, bool counter) {
  const uint64_t uuid = next_uuid_++;
  write_descriptor(uuid, parent, name, counter, nullptr, nullptr);
  return uuid;
}

// TrackDescriptor: uuid 1, name 2, process 3 (pid 1, legacy_sort_index 3, process_name 6,
// process_labels 8), thread 4 (pid 1, tid 2, legacy_sort_index 3, thread_name 5),
// parent_uuid 5, counter 8.
void Writer::write_descriptor(uint64_t uuid, uint64_t parent, const std::string* name, bool counter,
                              const int64_t* pid, const ThreadKey* thread) {
  protozero::pbf_writer packet(trace_, 1);
  packet.add_uint32(10, kSequence);
  protozero::pbf_writer d(packet, 60);
  d.add_uint64(1, uuid);
  if (parent != 0) d.add_uint64(5, parent);
  if (name != nullptr) d.add_string(2, *name);
  if (counter) d.add_message(8, std::string());  // an empty CounterDescriptor
  if (pid != nullptr) {
    protozero::pbf_writer p(d, 3);
    p.add_int32(1, static_cast<int32_t>(*pid));
    const auto meta = in_.processes.find(*pid);
    if (meta != in_.processes.end()) {
      if (meta->second.sort_index >= 0) {
        p.add_int32(3, static_cast<int32_t>(meta->second.sort_index));
      }
      if (!meta->second.name.empty()) p.add_string(6, meta->second.name);
      if (!meta->second.labels.empty()) p.add_string(8, meta->second.labels);
    }
  }
  if (thread != nullptr) {
    protozero::pbf_writer t(d, 4);
    t.add_int32(1, static_cast<int32_t>(thread->first));
    t.add_int32(2, static_cast<int32_t>(thread->second));
    const auto meta = in_.threads.find(*thread);
    if (meta != in_.threads.end()) {
      if (meta->second.sort_index >= 0) {
        t.add_int32(3, static_cast<int32_t>(meta->second.sort_index));
      }
      if (!meta->second.name.empty()) t.add_string(5, meta->second.name);
    }
  }
}

// Slices of one thread nest on its track; one that overlaps a slice open there without
// lying inside it goes to the first lane (a child track of the thread) where it nests. The
// reader stores a slice when it ends, so slices with one interval begin in file order and
// end in reverse: it stores them back in file order. Slices without a duration go to a
// lane of their own, begun and never ended, as the reader keeps them.
void Writer::lay_slices() {
  std::map<ThreadKey, std::vector<size_t>> by_thread;
  for (size_t k = 0; k < in_.events.size(); ++k) {
    const Event& e = in_.events[k];
    if (e.ph == 'X') by_thread[{e.pid, e.tid}].push_back(k);
  }
  for (auto& [key, rows] : by_thread) {
    const uint64_t thread = thread_track(key.first, key.second);
    std::deque<Lane>& lanes = lanes_[key];
    lanes.push_back({thread, {}});
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
      const Event &x = in_.events[a], &y = in_.events[b];
      return std::make_tuple(x.ts, -x.end(), a) < std::make_tuple(y.ts, -y.end(), b);
    });
    Lane* open = nullptr;
    auto end_until = [&](Lane& lane, int64_t ts) {
      while (!lane.stack.empty() && in_.events[lane.stack.back()].end() <= ts) {
        const size_t top = lane.stack.back();
        lane.stack.pop_back();
        add(in_.events[top].end(), lane, kSliceEnd, top);
      }
    };
    for (const size_t k : rows) {
      const Event& e = in_.events[k];
      if (!e.has_dur) {
        if (open == nullptr) {
          lanes.push_back({child_track(thread, nullptr, false), {}});
          open = &lanes.back();
        }
        add(e.ts, *open, kSliceBegin, k);
        continue;
      }
      Lane* fit = nullptr;
      for (Lane& lane : lanes) {
        if (&lane == open) continue;
        end_until(lane, e.ts);
        if (lane.stack.empty() || e.end() <= in_.events[lane.stack.back()].end()) {
          fit = &lane;
          break;
        }
      }
      if (fit == nullptr) {  // a deque: `open` stays where it is
        lanes.push_back({child_track(thread, nullptr, false), {}});
        fit = &lanes.back();
      }
      add(e.ts, *fit, kSliceBegin, k);
      fit->stack.push_back(k);
    }
    for (Lane& lane : lanes) {
      if (&lane != open) end_until(lane, std::numeric_limits<int64_t>::max());
    }
  }
}

// A flow end is carried as flow_ids (s, t) or terminating_flow_ids (f) of a slice of its
// thread that begins at its ts, which the reader gives the flow. Perfetto's flow ids are
// not per category: an id that two categories use gets a new number for the second.
void Writer::bind_flows() {
  std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> begins;  // innermost at a ts
  for (size_t k = 0; k < in_.events.size(); ++k) {
    const Event& e = in_.events[k];
    if (e.ph != 'X') continue;
    const auto at = std::make_tuple(e.pid, e.tid, e.ts);
    const auto found = begins.find(at);
    if (found == begins.end() || e.end() <= in_.events[found->second].end()) begins[at] = k;
  }
  uint64_t fresh = 0;
  std::unordered_map<uint64_t, std::string> cat_of_id;
  for (const Flow& f : in_.flows) {
    if (f.numeric_id) fresh = std::max(fresh, f.id);
  }
  std::map<std::pair<std::string, std::string>, uint64_t> ids;  // (cat, id text) -> id
  for (const Flow& f : in_.flows) {
    const auto slice = begins.find(std::make_tuple(f.pid, f.tid, f.ts));
    if (slice == begins.end()) {
      ++in_.left_out["a flow end at a time where no slice of its thread begins"];
      continue;
    }
    const auto key = std::make_pair(f.cat, f.id_text);
    auto known = ids.find(key);
    if (known == ids.end()) {
      uint64_t id = 0;
      if (f.numeric_id && cat_of_id.emplace(f.id, f.cat).second) {
        id = f.id;
      } else {
        id = ++fresh;
        ++in_.left_out["a flow id not a number, or one of two categories (renumbered)"];
      }
      known = ids.emplace(key, id).first;
    }
    Event& e = in_.events[slice->second];
    (f.ph == 'f' ? e.terminating : e.flows).push_back(known->second);
    // The reader binds every end after the first to its enclosing slice (bp "e").
    if (f.ph != 's' && !f.bind_enclosing) {
      ++in_.left_out["a flow end without bp \"e\" (written as binding its slice)"];
    }
  }
}

// Instants on the track whose scope they have (thread, process, or a global track);
// counters on a track per series under a track per (thread, counter name).
void Writer::lay_others() {
  Lane others{0, {}};
  others.uuid = std::numeric_limits<uint64_t>::max();  // after the slices at a timestamp
  uint64_t global = 0;
  for (size_t k = 0; k < in_.events.size(); ++k) {
    const Event& e = in_.events[k];
    if (e.ph != 'i') continue;
    uint64_t track = 0;
    if (e.scope == 'g') {
      if (global == 0) global = child_track(0, nullptr, false);
      track = global;
    } else if (e.scope == 'p') {
      track = process_track(e.pid);
    } else {
      track = thread_track(e.pid, e.tid);
    }
    add(e.ts, others, kInstant, k);
    timed_.back().track = track;
  }
  std::map<std::tuple<int64_t, int64_t, std::string>, uint64_t> named;
  std::map<std::pair<uint64_t, std::string>, uint64_t> series;
  for (size_t k = 0; k < in_.counters.size(); ++k) {
    const Event& e = in_.counters[k];
    const auto key = std::make_tuple(e.pid, e.tid, e.name);
    auto parent = named.find(key);
    if (parent == named.end()) {
      const uint64_t thread = thread_track(e.pid, e.tid);
      parent = named.emplace(key, child_track(thread, &e.name, false)).first;
    }
    for (const Arg& a : e.args) {
      double value = 0;
      switch (a.kind) {
        case Arg::Kind::kInt:
          value = static_cast<double>(a.i);
          break;
        case Arg::Kind::kUint:
          value = static_cast<double>(a.u);
          break;
        case Arg::Kind::kDouble:
          value = a.d;
          break;
        default:
          ++in_.left_out["a counter value that is not a number"];
          continue;
      }
      const auto skey = std::make_pair(parent->second, a.key);
      auto track = series.find(skey);
      if (track == series.end()) {
        track = series.emplace(skey, child_track(parent->second, &a.key, true)).first;
      }
      add(e.ts, others, kCounter, k);
      timed_.back().track = track->second;
      timed_.back().value = value;
    }
  }
}

// TracePacket: timestamp 8 (ns, on the trace's one clock), trusted_packet_sequence_id 10,
// track_event 11, interned_data 12 (event_categories 1, event_names 2,
// debug_annotation_names 3: iid 1, name 2), sequence_flags 13 (SEQ_NEEDS_INCREMENTAL_STATE
// 2). TrackEvent: category_iids 3, debug_annotations 4, type 9, name_iid 10, track_uuid 11,
// double_counter_value 44, flow_ids 47, terminating_flow_ids 48 (fixed64, one field each,
// as Perfetto's proto declares them). DebugAnnotation: name_iid 1, bool_value 2,
// uint_value 3, int_value 4, double_value 5, string_value 6, legacy_json_value 9.
void Writer::write_event(const Timed& t) {
  protozero::pbf_writer packet(trace_, 1);
  packet.add_uint64(8, static_cast<uint64_t>(t.ts));
  packet.add_uint32(10, kSequence);
  if (t.type == kSliceEnd || t.type == kCounter) {
    protozero::pbf_writer te(packet, 11);
    te.add_enum(9, t.type);
    te.add_uint64(11, t.track);
    if (t.type == kCounter) te.add_double(44, t.value);
    return;
  }
  const Event& e = in_.events[t.event];
  struct Fresh {
    uint32_t list;
    uint64_t iid;
    const std::string* text;
  };
  std::vector<Fresh> fresh;
  auto iid = [&](std::unordered_map<std::string, uint64_t>& table, uint32_t list,
                 const std::string& text) {
    const auto [it, added] = table.emplace(text, table.size() + 1);
    if (added) fresh.push_back({list, it->second, &it->first});
    return it->second;
  };
  const uint64_t cat = e.has_cat ? iid(cats_, 1, e.cat) : 0;
  const uint64_t name = e.has_name ? iid(names_, 2, e.name) : 0;
  std::vector<uint64_t> arg_names;
  for (const Arg& a : e.args) arg_names.push_back(iid(arg_names_, 3, a.key));
  packet.add_uint32(13, 2);
  if (!fresh.empty()) {
    protozero::pbf_writer interned(packet, 12);
    for (const Fresh& f : fresh) {
      protozero::pbf_writer entry(interned, f.list);
      entry.add_uint64(1, f.iid);
      entry.add_string(2, *f.text);
    }
  }
  protozero::pbf_writer te(packet, 11);
  te.add_enum(9, t.type);
  te.add_uint64(11, t.track);
  if (e.has_cat) te.add_uint64(3, cat);
  if (e.has_name) te.add_uint64(10, name);
  size_t k = 0;
  for (const Arg& a : e.args) {
    protozero::pbf_writer d(te, 4);
    d.add_uint64(1, arg_names[k++]);
    switch (a.kind) {
      case Arg::Kind::kNone:
        break;
      case Arg::Kind::kBool:
        d.add_bool(2, a.b);
        break;
      case Arg::Kind::kUint:
        d.add_uint64(3, a.u);
        break;
      case Arg::Kind::kInt:
        d.add_int64(4, a.i);
        break;
      case Arg::Kind::kDouble:
        d.add_double(5, a.d);
        break;
      case Arg::Kind::kString:
        d.add_string(6, a.s);
        break;
      case Arg::Kind::kJson:
        d.add_string(9, a.s);
        break;
    }
  }
  for (const uint64_t id : e.flows) te.add_fixed64(47, id);
  for (const uint64_t id : e.terminating) te.add_fixed64(48, id);
}

PftraceWritten Writer::run() {
  {
    // The sequence's first packet says its incremental state starts here
    // (sequence_flags 13: SEQ_INCREMENTAL_STATE_CLEARED).
    protozero::pbf_writer packet(trace_, 1);
    packet.add_uint32(10, kSequence);
    packet.add_uint32(13, 1);
  }
  // Every named process and thread has its track, with or without events.
  for (const auto& [pid, meta] : in_.processes) process_track(pid);
  for (const auto& [key, meta] : in_.threads) thread_track(key.first, key.second);
  lay_slices();
  bind_flows();
  lay_others();
  std::stable_sort(timed_.begin(), timed_.end(), [](const Timed& a, const Timed& b) {
    return std::tie(a.ts, a.lane, a.seq) < std::tie(b.ts, b.lane, b.seq);
  });
  for (const Timed& t : timed_) write_event(t);
  out_.left_out = std::move(in_.left_out);
  return std::move(out_);
}

}  // namespace

PftraceWritten json_to_pftrace(std::string_view json) {
  JsonEvents in;
  try {
    in.read(json);
  } catch (const simdjson::simdjson_error& e) {
    ErrorCode code = ErrorCode::kBadJson;
    if (e.error() == simdjson::EMPTY) {
      code = ErrorCode::kEmpty;
    } else if (e.error() == simdjson::INCORRECT_TYPE) {
      code = in.in_event ? ErrorCode::kBadField : ErrorCode::kNotATrace;
    } else if (e.error() == simdjson::NO_SUCH_FIELD) {
      code = ErrorCode::kNotATrace;
    }
    throw FormatError(
        code, std::nullopt,
        std::string("not a Chrome-trace JSON to write as Perfetto protobuf: ") + e.what());
  }
  return Writer(in).run();
}

}  // namespace hta
