// The tracks of a Perfetto trace (protos/perfetto/trace/track_event/track_descriptor.proto):
// which pid and tid an event on a track has, what a counter track is called, and the
// process and thread names, written as the JSON trace's metadata (M) rows.
#pragma once
#include <cstdint>
#include <protozero/pbf_reader.hpp>
#include <unordered_map>
#include <utility>

#include "parse/pftrace_annotation.h"
#include "trace/trace_columns.h"

namespace hta {

class TrackTable {
 public:
  // Where an event on a track belongs: the pid of the nearest process or thread track at or
  // above it, the tid of the nearest thread track (-1 when none, as a JSON event without
  // them), and the instant scope JSON would give it ('t' thread, 'p' process, 'g' global).
  struct Place {
    int64_t pid = -1, tid = -1;
    char scope = 'g';
  };

  // Registers a TrackDescriptor; the first descriptor of a process or thread track also
  // writes its names and sort order as metadata rows. Throws protozero::exception on
  // broken protobuf.
  void describe(protozero::data_view message, TraceColumns& out);
  Place place(uint64_t uuid);
  // A counter event's (name, series) as pool ids: a counter track under a plain named
  // track is the series of the counter the parent names; any other is a counter of one
  // series, both named by the track.
  std::pair<int32_t, int32_t> counter_names(uint64_t uuid) const;

 private:
  struct Track {
    uint64_t parent = 0;
    int32_t name = -1;
    int64_t pid = -1, tid = -1;
    bool process = false, thread = false, counter = false;
  };
  void write_meta(const Track& t, int32_t process_name, int32_t thread_name, int64_t sort_index,
                  int32_t labels, TraceColumns& out);

  std::unordered_map<uint64_t, Track> tracks_;
  std::unordered_map<uint64_t, Place> places_;  // place() of each uuid asked, until a new track
  // The last place() asked: events come in runs on one track.
  uint64_t last_uuid_ = 0;
  Place last_place_;
  bool has_last_ = false;
};

}  // namespace hta
