#include "parse/pftrace_reader.h"

#include <chrono>
#include <cstring>
#include <iterator>
#include <protozero/pbf_reader.hpp>
#include <protozero/varint.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "io/format_error.h"
#include "parse/arg_fields.h"
#include "parse/event_store.h"
#include "parse/pftrace_annotation.h"
#include "parse/pftrace_clocks.h"
#include "parse/pftrace_tracks.h"

namespace hta {
namespace {

using protozero::pbf_wire_type;
using protozero::tag_and_type;

// A packet longer than this is taken for a broken length rather than allocated.
constexpr uint64_t kMaxPacket = uint64_t{256} << 20;
constexpr size_t kBlock = size_t{1} << 20;  // bytes read from the source at a time

// TrackEvent.Type (track_event.proto).
enum TrackEventType : int32_t {
  kUnspecified = 0,
  kSliceBegin = 1,
  kSliceEnd = 2,
  kInstant = 3,
  kCounter = 4,
};

// What a packet sequence carries from packet to packet (trace_packet.proto's incremental
// state, reset by SEQ_INCREMENTAL_STATE_CLEARED): interned strings by iid, the default
// track, and a legacy ThreadDescriptor's thread and reference time.
struct Sequence {
  std::unordered_map<uint64_t, int32_t> names, categories;  // iid -> pool id
  std::unordered_map<uint64_t, std::string> annotation_names;
  InternedText strings;  // debug_annotation_string_values
  uint64_t default_track = 0;
  bool has_default_track = false;
  int64_t reference_us = 0;
  int64_t pid = -1, tid = -1;
  bool has_thread = false;
  uint32_t clock = 0;  // TracePacketDefaults.timestamp_clock_id: the packets' clock
  SequenceClocks clocks;
};

// A stat's example for an event of a protobuf trace: its kind, since its bytes are not text.
class EventLabel final : public EventEnd {
 public:
  const char* at(const char* start) override { return start + std::strlen(start); }
};

// Reads repeated uint64/fixed64 ids written packed or one by one.
template <class Fn>
void read_ids(protozero::pbf_reader& m, Fn&& fn) {
  switch (m.wire_type()) {
    case pbf_wire_type::varint:
      fn(m.get_uint64());
      return;
    case pbf_wire_type::fixed64:
      fn(m.get_fixed64());
      return;
    case pbf_wire_type::length_delimited:
      // flow_ids and terminating_flow_ids are fixed64; category_iids and the old flow
      // fields are uint64.
      if (m.tag() == 47 || m.tag() == 48) {
        for (const uint64_t id : m.get_packed_fixed64()) fn(id);
      } else {
        for (const uint64_t id : m.get_packed_uint64()) fn(id);
      }
      return;
    default:
      m.skip();
  }
}

class PacketReader {
 public:
  PacketReader(const ReadOptions& options, TraceColumns& out)
      : options_(options), out_(out), store_(out) {}
  void packet(protozero::data_view data, uint64_t offset);
  // Slices begun and never ended are kept, without a duration (missing_duration).
  void finish();

 private:
  struct Slice {
    RawEvent ev;
    uint64_t offset;
  };
  // A slice begun and not yet ended, with the ended slices inside it that began at the same
  // instant (in the order they began). The JSON reader stores events in the file's order,
  // where an enclosing event comes first, and the link pass takes the later of two events
  // with one interval for the inner one; slices end inner first, so these are held back
  // and stored after the slice that encloses them.
  struct OpenSlice {
    Slice slice;
    std::vector<Slice> held;
  };
  void close(OpenSlice&& s, std::vector<OpenSlice>& stack);
  // The parts of one TrackEvent the reader keeps, gathered before any is used, since
  // protobuf fields come in any order.
  struct EventFields {
    int32_t type = kUnspecified;
    uint64_t track = 0;
    bool has_track = false;
    int32_t name = -1;
    std::string cats;
    bool has_cats = false;
    double counter = 0;
    bool has_counter = false;
    int64_t ts = 0;
    bool has_ts = false;
    std::vector<protozero::data_view> annotations;
    std::vector<uint64_t> flows, terminating;
  };

  void interned(protozero::data_view data, Sequence& seq);
  void defaults(protozero::data_view data, Sequence& seq);
  void legacy_thread(protozero::data_view data, Sequence& seq);
  void track_event(protozero::data_view data, bool has_ts, int64_t ts, Sequence& seq,
                   uint64_t offset);
  void read_fields(protozero::data_view data, Sequence& seq, EventFields& f);
  void read_args(const EventFields& f, Sequence& seq, RawEvent& ev, uint64_t offset);
  void store_flows(const EventFields& f, const RawEvent& ev, uint64_t offset);
  void store(RawEvent& ev, uint64_t offset, const char* label) {
    store_.store(ev, offset, label, label_);
  }

  const ReadOptions& options_;
  TraceColumns& out_;
  EventStore store_;
  EventLabel label_;
  TrackTable tracks_;
  std::unordered_map<uint32_t, Sequence> sequences_;
  std::unordered_map<uint64_t, std::vector<OpenSlice>> open_;  // by track
  // The last sequence and track asked for: packets come in runs of one sequence and of
  // one track, and a map's values stay where they are as it grows.
  uint32_t last_sequence_id_ = 0;
  Sequence* last_sequence_ = nullptr;
  uint64_t last_track_ = 0;
  std::vector<OpenSlice>* last_stack_ = nullptr;
  std::vector<OpenSlice>& stack_of(uint64_t track) {
    if (last_stack_ == nullptr || track != last_track_) {
      last_stack_ = &open_[track];
      last_track_ = track;
    }
    return *last_stack_;
  }
  std::unordered_set<uint64_t> flows_begun_;
  EventFields fields_;
  Annotation annotation_;
};

// InternedData (interned_data.proto): event_categories 1 and event_names 2 (EventCategory,
// EventName: iid 1, name 2), debug_annotation_names 3 (DebugAnnotationName: iid 1, name 2),
// debug_annotation_string_values 29 (InternedString: iid 1, str 2).
void PacketReader::interned(protozero::data_view data, Sequence& seq) {
  protozero::pbf_reader m(data);
  while (m.next()) {
    const uint32_t list = m.tag();
    if (m.wire_type() != pbf_wire_type::length_delimited ||
        (list != 1 && list != 2 && list != 3 && list != 29)) {
      m.skip();
      continue;
    }
    uint64_t iid = 0;
    std::string_view text;
    protozero::pbf_reader entry(m.get_view());
    while (entry.next()) {
      switch (entry.tag_and_type()) {
        case tag_and_type(1, pbf_wire_type::varint):
          iid = entry.get_uint64();
          break;
        case tag_and_type(2, pbf_wire_type::length_delimited):
          text = text_of(entry.get_view());
          break;
        default:
          entry.skip();
      }
    }
    switch (list) {
      case 1:
        seq.categories[iid] = out_.strings.intern(text);
        break;
      case 2:
        seq.names[iid] = out_.strings.intern(text);
        break;
      case 3:
        seq.annotation_names[iid] = std::string(text);
        break;
      default:
        seq.strings[iid] = std::string(text);
    }
  }
}

// TracePacketDefaults (trace_packet_defaults.proto): timestamp_clock_id 58, the clock of the
// sequence's packets; track_event_defaults 11, whose track_uuid 11 is the track of events
// that name none.
void PacketReader::defaults(protozero::data_view data, Sequence& seq) {
  protozero::pbf_reader m(data);
  while (m.next()) {
    if (m.tag_and_type() == tag_and_type(58, pbf_wire_type::varint)) {
      seq.clock = m.get_uint32();
      continue;
    }
    if (m.tag_and_type() != tag_and_type(11, pbf_wire_type::length_delimited)) {
      m.skip();
      continue;
    }
    protozero::pbf_reader d(m.get_view());
    while (d.next()) {
      if (d.tag_and_type() == tag_and_type(11, pbf_wire_type::varint)) {
        seq.default_track = d.get_uint64();
        seq.has_default_track = true;
      } else {
        d.skip();
      }
    }
  }
}

// A ThreadDescriptor as a packet of its own (TracePacket.thread_descriptor 44, the SDK's
// older form): the thread of the sequence's events without a track (pid 1, tid 2), and the
// time their timestamp_delta_us counts from (reference_timestamp_us 6).
void PacketReader::legacy_thread(protozero::data_view data, Sequence& seq) {
  protozero::pbf_reader m(data);
  while (m.next()) {
    switch (m.tag_and_type()) {
      case tag_and_type(1, pbf_wire_type::varint):
        seq.pid = m.get_int32();
        seq.has_thread = true;
        break;
      case tag_and_type(2, pbf_wire_type::varint):
        seq.tid = m.get_int32();
        break;
      case tag_and_type(6, pbf_wire_type::varint):
        seq.reference_us = m.get_int64();
        break;
      default:
        m.skip();
    }
  }
}

// TrackEvent (track_event.proto): timestamp_delta_us 1, category_iids 3, debug_annotations 4,
// type 9, name_iid 10, track_uuid 11, timestamp_absolute_us 16, categories 22, name 23,
// counter_value 30, flow_ids_old 36, terminating_flow_ids_old 42, double_counter_value 44,
// flow_ids 47, terminating_flow_ids 48. The rest (thread time, callstacks, Chrome's typed
// fields, extra counter values, legacy_event) is skipped.
void PacketReader::read_fields(protozero::data_view data, Sequence& seq, EventFields& f) {
  protozero::pbf_reader m(data);
  auto add_cat = [&](std::string_view cat) {
    if (!f.cats.empty()) f.cats += ',';
    f.cats.append(cat);
    f.has_cats = true;
  };
  while (m.next()) {
    switch (m.tag()) {
      case 1:
        if (m.wire_type() != pbf_wire_type::varint) break;
        seq.reference_us += m.get_int64();
        f.ts = seq.reference_us * 1000;
        f.has_ts = true;
        continue;
      case 16:
        if (m.wire_type() != pbf_wire_type::varint) break;
        f.ts = m.get_int64() * 1000;
        f.has_ts = true;
        continue;
      case 3:
        read_ids(m, [&](uint64_t iid) {
          const auto it = seq.categories.find(iid);
          if (it != seq.categories.end()) add_cat(out_.strings.at(it->second));
        });
        continue;
      case 22:
        if (m.wire_type() != pbf_wire_type::length_delimited) break;
        add_cat(text_of(m.get_view()));
        continue;
      case 4:
        if (m.wire_type() != pbf_wire_type::length_delimited) break;
        f.annotations.push_back(m.get_view());
        continue;
      case 9:
        if (m.wire_type() != pbf_wire_type::varint) break;
        f.type = m.get_enum();
        continue;
      case 10: {
        if (m.wire_type() != pbf_wire_type::varint) break;
        const auto it = seq.names.find(m.get_uint64());
        f.name = it != seq.names.end() ? it->second : -1;
        continue;
      }
      case 23:
        if (m.wire_type() != pbf_wire_type::length_delimited) break;
        f.name = out_.strings.intern(text_of(m.get_view()));
        continue;
      case 11:
        if (m.wire_type() != pbf_wire_type::varint) break;
        f.track = m.get_uint64();
        f.has_track = true;
        continue;
      case 30:
        if (m.wire_type() != pbf_wire_type::varint) break;
        f.counter = static_cast<double>(m.get_int64());
        f.has_counter = true;
        continue;
      case 44:
        if (m.wire_type() != pbf_wire_type::fixed64) break;
        f.counter = m.get_double();
        f.has_counter = true;
        continue;
      case 36:
      case 47:
        read_ids(m, [&](uint64_t id) { f.flows.push_back(id); });
        continue;
      case 42:
      case 48:
        read_ids(m, [&](uint64_t id) { f.terminating.push_back(id); });
        continue;
      default:
        break;
    }
    m.skip();
  }
}

// Debug annotations whose names are arguments the JSON reader keeps (arg_keys.h) fill the
// same columns, through arg_fields.h; the others are skipped, as unknown JSON args are.
void PacketReader::read_args(const EventFields& f, Sequence& seq, RawEvent& ev, uint64_t offset) {
  for (const protozero::data_view view : f.annotations) {
    annotation_.read(view, seq.strings);
    std::string_view key = annotation_.name;
    if (annotation_.has_name_iid) {
      const auto it = seq.annotation_names.find(annotation_.name_iid);
      if (it == seq.annotation_names.end()) continue;
      key = it->second;
    }
    const ArgKey k = arg_key(key);
    if (k == ArgKey::kUnknown) continue;
    try {
      AnnotationArg value(annotation_, out_.strings, seq.strings);
      read_arg(k, value, ev.args);
    } catch (const FieldError& e) {
      if (!options_.parse.recover) {
        const std::string field = "args." + std::string(key);
        throw FormatError(ErrorCode::kBadField, offset,
                          "bad event: key \"" + field + "\": " + e.what +
                              " (a debug annotation of the TrackEvent in the packet at byte " +
                              std::to_string(offset) + ")",
                          field, /*recoverable=*/true);
      }
      ev.bad_arg = true;
    }
  }
}

// flow_ids: the first event naming an id starts the flow (JSON's ph s), a later one is a
// step bound to its slice (ph f, bp e); terminating_flow_ids end it (ph f). Perfetto flows
// have no name or category: those columns stay missing.
void PacketReader::store_flows(const EventFields& f, const RawEvent& ev, uint64_t offset) {
  auto flow = [&](uint64_t id, bool terminating) {
    RawEvent fl;
    fl.start();
    const bool first = !terminating && flows_begun_.insert(id).second;
    if (terminating) flows_begun_.erase(id);
    fl.ph = first ? 's' : 'f';
    fl.binds_enclosing = !first;
    // A uint64 id read as int64; one at or below kStringIdBase is held as its text until
    // the trace is one, as the JSON reader holds it (trace/string_ids.h).
    const auto signed_id = static_cast<int64_t>(id);
    fl.id = signed_id > kStringIdBase
                ? signed_id
                : kStringIdBase - out_.strings.intern(std::to_string(signed_id));
    fl.ts = ev.ts;
    fl.has_ts = ev.has_ts;
    fl.pid = ev.pid;
    fl.tid = ev.tid;
    store(fl, offset, "TrackEvent flow");
  };
  for (const uint64_t id : f.flows) flow(id, false);
  for (const uint64_t id : f.terminating) flow(id, true);
}

void PacketReader::track_event(protozero::data_view data, bool has_ts, int64_t ts, Sequence& seq,
                               uint64_t offset) {
  EventFields& f = fields_;
  f.type = kUnspecified;
  f.has_track = f.has_cats = f.has_counter = f.has_ts = false;
  f.name = -1;
  f.cats.clear();
  f.annotations.clear();
  f.flows.clear();
  f.terminating.clear();
  read_fields(data, seq, f);

  RawEvent ev;
  ev.start();
  ev.name = f.name;
  if (f.has_cats) ev.cat = out_.strings.intern(f.cats);
  ev.has_ts = f.has_ts || has_ts;
  ev.ts = f.has_ts ? f.ts : ts;
  // The event's track: its own, the sequence's default, else a legacy thread's.
  uint64_t track = f.track;
  bool on_track = f.has_track;
  if (!on_track && seq.has_default_track) {
    track = seq.default_track;
    on_track = true;
  }
  char scope = 'g';
  if (on_track) {
    const TrackTable::Place p = tracks_.place(track);
    ev.pid = p.pid;
    ev.tid = p.tid;
    scope = p.scope;
  } else if (seq.has_thread) {
    ev.pid = seq.pid;
    ev.tid = seq.tid;
    scope = 't';
    // A key of its own for the thread's open slices, apart from every track uuid in use.
    track = (uint64_t{1} << 63) ^ (static_cast<uint64_t>(seq.pid) << 32) ^
            static_cast<uint32_t>(seq.tid);
  }

  switch (f.type) {
    case kSliceBegin: {
      ev.ph = 'X';
      read_args(f, seq, ev, offset);
      store_flows(f, ev, offset);
      if (!ev.has_ts) return store(ev, offset, "TrackEvent TYPE_SLICE_BEGIN");
      stack_of(track).push_back({{ev, offset}, {}});
      return;
    }
    case kSliceEnd: {
      std::vector<OpenSlice>& stack = stack_of(track);
      if (stack.empty()) {
        out_.stats.add(Stat::bad_field, offset, "TrackEvent TYPE_SLICE_END with no slice open");
        return;
      }
      OpenSlice slice = std::move(stack.back());
      stack.pop_back();
      RawEvent& begun = slice.slice.ev;
      // Annotations given at the end belong to the slice too.
      read_args(f, seq, begun, offset);
      store_flows(f, ev, offset);
      if (ev.has_ts) {
        begun.dur = ev.ts - begun.ts;
        begun.has_dur = true;
      }
      return close(std::move(slice), stack);
    }
    case kInstant:
      ev.ph = 'i';
      ev.scope = scope;
      read_args(f, seq, ev, offset);
      store_flows(f, ev, offset);
      return store(ev, offset, "TrackEvent TYPE_INSTANT");
    case kCounter: {
      if (!f.has_counter) return;
      ev.ph = 'C';
      const auto [name, series] = tracks_.counter_names(track);
      ev.name = name;
      store_.add_counter(series, f.counter);
      return store(ev, offset, "TrackEvent TYPE_COUNTER");
    }
    default:
      out_.stats.add(Stat::unsupported_phase, offset,
                     "TrackEvent of a type other than slice, instant or counter");
  }
}

// TracePacket (trace_packet.proto): clock_snapshot 6, timestamp 8,
// trusted_packet_sequence_id 10, track_event 11, interned_data 12, sequence_flags 13,
// incremental_state_cleared 41, thread_descriptor 44, timestamp_clock_id 58,
// trace_packet_defaults 59, track_descriptor 60. Other packets (trace config, system
// data, ...) are skipped.
void PacketReader::packet(protozero::data_view data, uint64_t offset) {
  uint64_t ts = 0;
  bool has_ts = false, cleared = false;
  uint32_t sequence = 0;
  protozero::data_view event, interned_data, packet_defaults, descriptor, thread;
  protozero::data_view snapshot;
  uint32_t clock = 0;
  bool has_snapshot = false, has_clock = false;
  bool has_event = false, has_interned = false, has_defaults = false, has_descriptor = false,
       has_thread = false;
  protozero::pbf_reader m(data);
  while (m.next()) {
    switch (m.tag_and_type()) {
      case tag_and_type(8, pbf_wire_type::varint):
        ts = m.get_uint64();
        has_ts = true;
        break;
      case tag_and_type(10, pbf_wire_type::varint):
        sequence = m.get_uint32();
        break;
      case tag_and_type(11, pbf_wire_type::length_delimited):
        event = m.get_view();
        has_event = true;
        break;
      case tag_and_type(12, pbf_wire_type::length_delimited):
        interned_data = m.get_view();
        has_interned = true;
        break;
      case tag_and_type(13, pbf_wire_type::varint):
        cleared |= (m.get_uint32() & 1) != 0;  // SEQ_INCREMENTAL_STATE_CLEARED
        break;
      case tag_and_type(41, pbf_wire_type::varint):
        cleared |= m.get_bool();
        break;
      case tag_and_type(44, pbf_wire_type::length_delimited):
        thread = m.get_view();
        has_thread = true;
        break;
      case tag_and_type(59, pbf_wire_type::length_delimited):
        packet_defaults = m.get_view();
        has_defaults = true;
        break;
      case tag_and_type(6, pbf_wire_type::length_delimited):
        snapshot = m.get_view();
        has_snapshot = true;
        break;
      case tag_and_type(58, pbf_wire_type::varint):
        clock = m.get_uint32();
        has_clock = true;
        break;
      case tag_and_type(60, pbf_wire_type::length_delimited):
        descriptor = m.get_view();
        has_descriptor = true;
        break;
      default:
        m.skip();
    }
  }
  if (last_sequence_ == nullptr || sequence != last_sequence_id_) {
    last_sequence_ = &sequences_[sequence];
    last_sequence_id_ = sequence;
  }
  Sequence& seq = *last_sequence_;
  if (cleared) seq = Sequence{};
  if (has_thread) legacy_thread(thread, seq);
  if (has_defaults) defaults(packet_defaults, seq);
  if (has_interned) interned(interned_data, seq);
  if (has_descriptor) tracks_.describe(descriptor, out_);
  if (has_snapshot) {
    seq.clocks.snapshot(snapshot);
    return;  // its timestamp is on the global clock, and it carries no event
  }
  // On the sequence's own clock, an incremental one advances with every timestamp.
  const int64_t time = has_ts ? seq.clocks.to_trace_time(has_clock ? clock : seq.clock, ts) : 0;
  if (has_event) track_event(event, has_ts, time, seq, offset);
}

// Stores an ended slice and those it held, or hands them all to the slice around it when
// that began at the same instant.
void PacketReader::close(OpenSlice&& s, std::vector<OpenSlice>& stack) {
  if (!stack.empty() && stack.back().slice.ev.ts == s.slice.ev.ts) {
    auto& held = stack.back().held;
    held.push_back(std::move(s.slice));
    held.insert(held.end(), std::make_move_iterator(s.held.begin()),
                std::make_move_iterator(s.held.end()));
    return;
  }
  store(s.slice.ev, s.slice.offset, "TrackEvent TYPE_SLICE_BEGIN");
  for (Slice& h : s.held) store(h.ev, h.offset, "TrackEvent TYPE_SLICE_BEGIN");
}

void PacketReader::finish() {
  for (auto& [track, stack] : open_) {
    // Never ended: stored without a duration, outermost first.
    std::vector<OpenSlice> none;
    for (OpenSlice& s : stack) close(std::move(s), none);
    stack.clear();
  }
}

[[noreturn]] void broken(uint64_t offset, const std::string& what) {
  throw FormatError(
      ErrorCode::kBadJson, offset,
      "broken protobuf in the Perfetto trace at byte " + std::to_string(offset) + ": " + what);
}

// Splits the Trace message into its packets as the bytes arrive: each top-level field is
// a tag and, for packets (field 1, length-delimited), a length and the packet's bytes.
class PacketStream {
 public:
  PacketStream(ByteSource& source, const ReadOptions& options, ReadResult& result)
      : source_(source), options_(options), result_(result), buf_(kBlock) {}
  void run();

 private:
  // Reads more after the unparsed bytes, which move to the front; false at the end.
  bool fill(size_t want) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    base_ += begin_;
    end_ -= begin_;
    begin_ = 0;
    if (buf_.size() < want) buf_.resize(want);
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    size_t n = 0;
    try {
      n = source_.read(buf_.data() + end_, buf_.size() - end_);
    } catch (const TruncatedInput&) {
      // A compressed stream cut short: with recover, what was inflated is the file.
      if (!options_.parse.recover) throw;
    }
    end_ += n;
    return n > 0;
  }
  // The next top-level field's extent from begin_; false when the buffer holds only part.
  bool next_field(size_t& header, size_t& size, uint32_t& field, bool& is_packet);

  ByteSource& source_;
  const ReadOptions& options_;
  ReadResult& result_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  uint64_t base_ = 0;  // stream offset of buf_[0]
};

bool PacketStream::next_field(size_t& header, size_t& size, uint32_t& field, bool& is_packet) {
  const char* start = buf_.data() + begin_;
  const char* end = buf_.data() + end_;
  const char* p = start;
  const uint64_t at = base_ + begin_;
  try {
    const uint64_t key = protozero::decode_varint(&p, end);
    field = static_cast<uint32_t>(key >> 3);
    is_packet = false;
    switch (key & 7) {
      case 0:
        protozero::decode_varint(&p, end);
        size = 0;
        break;
      case 1:
        size = 8;
        break;
      case 5:
        size = 4;
        break;
      case 2: {
        const uint64_t len = protozero::decode_varint(&p, end);
        if (len > kMaxPacket) {
          broken(at, "a field of " + std::to_string(len) + " bytes, more than a packet can be");
        }
        size = static_cast<size_t>(len);
        is_packet = field == 1;
        break;
      }
      default:
        broken(at, "wire type " + std::to_string(key & 7) + " at the top level of the Trace");
    }
  } catch (const protozero::end_of_buffer_exception&) {
    return false;
  } catch (const protozero::exception& e) {
    broken(at, e.what());
  }
  if (field == 0) broken(at, "field number 0");
  header = static_cast<size_t>(p - start);
  return header + size <= end_ - begin_;
}

void PacketStream::run() {
  PacketReader reader(options_, result_.columns);
  size_t want = kBlock;
  for (;;) {
    if (!fill(want)) break;
    want = kBlock;
    while (begin_ < end_) {
      size_t header = 0, size = 0;
      uint32_t field = 0;
      bool is_packet = false;
      if (!next_field(header, size, field, is_packet)) {
        want = std::max(kBlock, header + size);
        break;
      }
      const uint64_t at = base_ + begin_;
      if (is_packet) {
        try {
          reader.packet({buf_.data() + begin_ + header, size}, at);
        } catch (const protozero::exception& e) {
          if (!options_.parse.recover) {
            throw FormatError(ErrorCode::kBadJson, at,
                              "broken protobuf in the TracePacket at byte " + std::to_string(at) +
                                  ": " + e.what(),
                              {}, /*recoverable=*/true);
          }
          result_.columns.stats.add(Stat::bad_field, at, "TracePacket that is not valid protobuf");
        }
      }
      begin_ += header + size;
    }
  }
  const uint64_t total = base_ + end_;
  if (begin_ < end_) {
    // The stream ended inside a packet: the file was cut short.
    const uint64_t cut = base_ + begin_;
    if (!options_.parse.recover) {
      throw FormatError(ErrorCode::kTruncated, cut,
                        "the file ends inside the TracePacket at byte " + std::to_string(cut) +
                            " (the profiler may have stopped while writing); pass "
                            "recover=True to keep the packets before the cut",
                        {}, /*recoverable=*/true);
    }
    result_.columns.stats.add(Stat::truncated_file, total, "end of file");
    result_.columns.stats.add(Stat::truncated_tail_bytes, total - cut);
  }
  reader.finish();
  result_.json_bytes = total;
}

}  // namespace

bool is_pftrace(ByteSource& source) {
  char head[4096];
  size_t n = 0;
  try {
    while (n < sizeof head) {
      const size_t k = source.read(head + n, sizeof head - n);
      if (k == 0) break;
      n += k;
    }
  } catch (const FormatError&) {
    // A broken stream: the JSON reader reports it as it always has.
  }
  source.rewind();
  // A Trace begins with field 1 (TracePacket), length-delimited: the byte 0x0a, which is
  // also JSON's newline. After leading whitespace, text (printable bytes) is JSON, or
  // what the JSON reader reports as not JSON; a packet's bytes are rarely all printable,
  // since nested lengths and varints are small numbers or have their high bit set. Text
  // that opens an object or array is JSON unless the protobuf reading holds: "\n{" is
  // also a packet of 123 bytes ('{'), which must then decode whole and be followed by
  // another packet or the end.
  if (n == 0 || head[0] != 0x0a) return false;
  auto is_ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  size_t i = 0;
  while (i < n && is_ws(head[i])) ++i;
  if (i == n) return false;
  if (head[i] != '{' && head[i] != '[') {
    for (size_t k = i; k < n && k < i + 64; ++k) {
      const auto c = static_cast<unsigned char>(head[k]);
      if ((c < 0x20 && !is_ws(head[k])) || c == 0x7f) return true;
    }
    return false;
  }
  try {
    const char* p = head + 1;
    const uint64_t len = protozero::decode_varint(&p, head + n);
    if (len > static_cast<uint64_t>(head + n - p)) return false;
    protozero::pbf_reader m(p, static_cast<size_t>(len));
    while (m.next()) m.skip();
    const char* after = p + len;
    return after == head + n ? n < sizeof head : *after == 0x0a;
  } catch (const protozero::exception&) {
    return false;
  }
}

void read_pftrace(ByteSource& source, const ReadOptions& options, ReadResult& result) {
  const auto t0 = std::chrono::steady_clock::now();
  PacketStream(source, options, result).run();
  result.header_json = "{}";
  result.parse_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hta
