#include "parse/pftrace_tracks.h"

#include <string>
#include <string_view>

namespace hta {
namespace {

using protozero::pbf_wire_type;
using protozero::tag_and_type;

constexpr int kMaxDepth = 64;  // parent links followed; a cycle ends there

// ProcessDescriptor (process_descriptor.proto): pid 1, legacy_sort_index 3, process_name 6,
// process_labels 8. ThreadDescriptor (thread_descriptor.proto): pid 1, tid 2,
// legacy_sort_index 3, thread_name 5.
struct Descriptor {
  int64_t pid = -1, tid = -1, sort_index = -1;
  std::string_view name;
  std::string labels;  // process_labels joined by ',' (as JSON's process_labels writes them)
  bool has_pid = false, has_tid = false;

  void read(protozero::data_view message, bool thread) {
    protozero::pbf_reader m(message);
    while (m.next()) {
      switch (m.tag_and_type()) {
        case tag_and_type(1, pbf_wire_type::varint):
          pid = m.get_int32();
          has_pid = true;
          break;
        case tag_and_type(2, pbf_wire_type::varint):
          if (!thread) {
            m.skip();
            break;
          }
          tid = m.get_int32();
          has_tid = true;
          break;
        case tag_and_type(3, pbf_wire_type::varint):
          sort_index = m.get_int32();
          break;
        case tag_and_type(5, pbf_wire_type::length_delimited):
        case tag_and_type(6, pbf_wire_type::length_delimited):
          // thread_name is 5 of a thread, process_name 6 of a process
          if ((m.tag() == 5) != thread) {
            m.skip();
            break;
          }
          name = text_of(m.get_view());
          break;
        case tag_and_type(8, pbf_wire_type::length_delimited):
          if (thread) {
            m.skip();
            break;
          }
          if (!labels.empty()) labels += ',';
          labels.append(text_of(m.get_view()));
          break;
        default:
          m.skip();
      }
    }
  }
};

}  // namespace

// TrackDescriptor (track_descriptor.proto): uuid 1, name 2, process 3, thread 4,
// parent_uuid 5, counter 8, static_name 10. The rest (chrome_*, ordering, merging) is
// presentation and is skipped.
void TrackTable::describe(protozero::data_view message, TraceColumns& out) {
  uint64_t uuid = 0;
  Track t;
  std::string_view name;
  Descriptor process, thread;
  bool has_process = false, has_thread = false;
  protozero::pbf_reader m(message);
  while (m.next()) {
    switch (m.tag_and_type()) {
      case tag_and_type(1, pbf_wire_type::varint):
        uuid = m.get_uint64();
        break;
      case tag_and_type(5, pbf_wire_type::varint):
        t.parent = m.get_uint64();
        break;
      case tag_and_type(2, pbf_wire_type::length_delimited):
      case tag_and_type(10, pbf_wire_type::length_delimited):
        name = text_of(m.get_view());
        break;
      case tag_and_type(3, pbf_wire_type::length_delimited):
        process.read(m.get_view(), false);
        has_process = process.has_pid;
        break;
      case tag_and_type(4, pbf_wire_type::length_delimited):
        thread.read(m.get_view(), true);
        has_thread = thread.has_pid && thread.has_tid;
        break;
      case tag_and_type(8, pbf_wire_type::length_delimited):
        m.skip();  // CounterDescriptor: units and categories, not kept
        t.counter = true;
        break;
      default:
        m.skip();
    }
  }
  if (has_thread) {
    t.thread = true;
    t.pid = thread.pid;
    t.tid = thread.tid;
  } else if (has_process) {
    t.process = true;
    t.pid = process.pid;
  }
  if (!name.empty()) t.name = out.strings.intern(name);
  const bool seen = tracks_.count(uuid) != 0;
  tracks_[uuid] = t;
  places_.clear();
  has_last_ = false;
  // The SDK writes a track's descriptor again after each incremental-state reset: its
  // metadata is written once.
  if (seen) return;
  if (t.thread) {
    const std::string_view thread_name = !thread.name.empty() ? thread.name : name;
    write_meta(t, -1, thread_name.empty() ? -1 : out.strings.intern(thread_name), thread.sort_index,
               -1, out);
  } else if (t.process) {
    const std::string_view process_name = !process.name.empty() ? process.name : name;
    write_meta(t, process_name.empty() ? -1 : out.strings.intern(process_name), -1,
               process.sort_index, process.labels.empty() ? -1 : out.strings.intern(process.labels),
               out);
  }
}

// The rows a JSON trace's M events give: process_name, process_labels, process_sort_index
// (tid 0, as Kineto writes them), thread_name, thread_sort_index.
void TrackTable::write_meta(const Track& t, int32_t process_name, int32_t thread_name,
                            int64_t sort_index, int32_t labels, TraceColumns& out) {
  auto& m = out.meta;
  const int64_t tid = t.thread ? t.tid : 0;
  auto row = [&](std::string_view what, int32_t value, int64_t sort) {
    m.name.push_back(out.strings.intern(what));
    m.pid.push_back(t.pid);
    m.tid.push_back(tid);
    m.value.push_back(value);
    m.sort_index.push_back(sort);
  };
  if (process_name >= 0) row("process_name", process_name, -1);
  if (labels >= 0) row("process_labels", labels, -1);
  if (thread_name >= 0) row("thread_name", thread_name, -1);
  if (sort_index >= 0) row(t.thread ? "thread_sort_index" : "process_sort_index", -1, sort_index);
}

TrackTable::Place TrackTable::place(uint64_t uuid) {
  if (has_last_ && uuid == last_uuid_) return last_place_;
  const auto known = places_.find(uuid);
  if (known != places_.end()) {
    has_last_ = true;
    last_uuid_ = uuid;
    return last_place_ = known->second;
  }
  Place p;
  uint64_t at = uuid;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const auto it = tracks_.find(at);
    if (it == tracks_.end()) break;
    const Track& t = it->second;
    if (t.thread) {
      p.pid = t.pid;
      p.tid = t.tid;
      p.scope = 't';
      break;
    }
    if (t.process) {
      p.pid = t.pid;
      p.scope = 'p';
      break;
    }
    if (t.parent == 0) break;
    at = t.parent;
  }
  places_.emplace(uuid, p);
  return p;
}

std::pair<int32_t, int32_t> TrackTable::counter_names(uint64_t uuid) const {
  const auto it = tracks_.find(uuid);
  if (it == tracks_.end()) return {-1, -1};
  const Track& t = it->second;
  const auto parent = t.parent != 0 ? tracks_.find(t.parent) : tracks_.end();
  if (parent != tracks_.end() && !parent->second.process && !parent->second.thread &&
      parent->second.name >= 0) {
    return {parent->second.name, t.name};
  }
  return {t.name, t.name};
}

}  // namespace hta
