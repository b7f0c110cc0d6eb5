// Everything the loader counts and skips, declared once. Tests and users query these
// counts (Trace.stats) instead of log text.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hta {

//      name                    severity   description
#define HTA_STATS(X)                                                                       \
  X(unsupported_phase, "info",                                                             \
    "events with a phase the loader does not read (B/E/b/e/n/O/...); skipped")             \
  X(missing_phase, "warning", "events without a ph field; skipped")                        \
  X(missing_timestamp, "warning", "events without a ts field; skipped")                    \
  X(missing_duration, "info", "complete events without dur; read as 0")                    \
  X(negative_duration, "warning", "complete events with dur < 0; read as 0")               \
  X(non_object_event, "warning", "traceEvents entries that are not objects; skipped")      \
  X(bad_field, "warning",                                                                  \
    "events with a known field of the wrong type or out of range (ph, ts, dur, pid, tid, " \
    "id, name, cat, s, bp, args itself); event skipped (recover=True)")                    \
  X(bad_arg, "warning",                                                                    \
    "events with an argument (args.*) of the wrong type or out of range; the argument "    \
    "read as missing, the event kept (recover=True)")                                      \
  X(invalid_utf8, "warning",                                                               \
    "invalid UTF-8 sequences in the text; each read as U+FFFD (recover=True)")             \
  X(truncated_file, "error",                                                               \
    "the file ends inside the traceEvents array; complete events kept (recover=True)")     \
  X(truncated_tail_bytes, "error",                                                         \
    "bytes after the last complete event of a truncated file (recover=True)")              \
  X(counter_non_numeric, "info", "counter (ph C) arguments that are not numbers; skipped") \
  X(flow_unbound, "info", "flow endpoints whose event was not found")                      \
  X(gpu_event_unlinked, "info", "GPU events with no launch found by correlation or flow")  \
  X(gpu_stream_from_tid, "info",                                                           \
    "GPU events without a stream argument: their tid taken as the stream (Kineto writes "  \
    "GPU events with tid = stream; the reference tool leaves them on no stream)")          \
  X(duplicate_correlation, "warning",                                                      \
    "launches sharing a correlation id with an earlier launch; the first wins")            \
  X(speculative_split_retry, "info",                                                       \
    "files re-read with the exact event splitter after a fast split failed")               \
  X(name_from_cbid, "info",                                                                \
    "CUDA runtime/driver calls written as INVALID or unknown (Kineto before 2026 had no "  \
    "name for their cbid) named from their cbid argument, as newer Kineto names them")

enum class Stat : uint8_t {
#define HTA_STAT_ENUM(name, sev, desc) name,
  HTA_STATS(HTA_STAT_ENUM)
#undef HTA_STAT_ENUM
      kCount
};
constexpr size_t kNumStats = static_cast<size_t>(Stat::kCount);

struct StatInfo {
  const char* name;
  const char* severity;
  const char* description;
};
const StatInfo& stat_info(Stat s);

struct StatExample {
  uint64_t offset;   // byte offset in the (decompressed) JSON text
  std::string text;  // a short snippet of the event
};

class LoadStats {
 public:
  static constexpr size_t kMaxExamples = 3;

  void add(Stat s, uint64_t n = 1) { counts_[static_cast<size_t>(s)] += n; }
  void add(Stat s, uint64_t offset, std::string_view snippet);
  void merge(const LoadStats& other);

  uint64_t count(Stat s) const { return counts_[static_cast<size_t>(s)]; }
  const std::vector<StatExample>& examples(Stat s) const {
    return examples_[static_cast<size_t>(s)];
  }

 private:
  std::array<uint64_t, kNumStats> counts_{};
  std::array<std::vector<StatExample>, kNumStats> examples_{};
};

}  // namespace hta
