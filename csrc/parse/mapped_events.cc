#include "parse/mapped_events.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "parse/json_scanner.h"
#include "parse/sequential_parser.h"
#include "parse/stage_clock.h"

namespace hta {
namespace {

constexpr uint64_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr uint64_t kPartsPerThread = 4;
constexpr uint64_t kTailBytes = 16 << 10;

// A `}` ws* `,` ws* `{` between two events, by file offset: `end` just past the `}`, `next`
// at the `{`.
struct Boundary {
  uint64_t end = 0, next = 0;
  // No byte between the ',' and the '{': the ',' must serve as the next chunk's '['.
  bool shared() const { return next < end + 2; }
};

// The last boundary in [from, from + window).
bool last_boundary(const char* data, uint64_t from, uint64_t window, Boundary& b) {
  size_t end = 0, next = 0;
  if (!find_last_boundary(data + from, window, end, next)) return false;
  b = {from + end, from + next};
  return true;
}

// The last boundary in [lowest, target), searched in windows from a chunk before `target`
// doubling down to `lowest` (events can be larger than a chunk).
bool boundary_before(const char* data, uint64_t target, uint64_t lowest, uint64_t chunk,
                     Boundary& b) {
  for (uint64_t window = chunk; target > lowest; window *= 2) {
    const uint64_t from = target - std::min(window, target - lowest);
    if (last_boundary(data, from, target - from, b)) return true;
    if (from == lowest) return false;
  }
  return false;
}

// Writes the brackets that make [.., b.end) and [b.next, ..) two documents, except the ']'
// of a shared boundary (the chunk before it is copied).
void write_brackets(char* data, const Boundary& b) {
  if (!b.shared()) data[b.end] = ']';
  data[b.next - 1] = '[';
}

struct Part {
  uint64_t begin = 0;  // data[begin - 1] is '['
  Boundary end;        // the boundary the part ends at, its brackets written
  TraceColumns* out = nullptr;
  TraceColumns own;  // the columns of parts after the first
  ChunkError error;
  int64_t parse_ns = 0;
  uint64_t on_demand_chunks = 0;
  std::exception_ptr failure;
  bool done = false;  // read, waiting to be joined
  bool failed() const { return failure || error.failed; }
};

class PartReader {
 public:
  PartReader(MappedFile& map, Part& part, size_t chunk, EventParser& parser, uint64_t origin,
             uint64_t expected)
      : map_(map),
        part_(part),
        chunk_(chunk),
        parser_(parser, *part.out, origin, expected),
        released_(part.begin) {}

  void run() {
    char* data = map_.data();
    uint64_t pos = part_.begin;
    const uint64_t stop = part_.end.end;
    while (!parser_.error().failed && stop - pos > chunk_ + chunk_ / 2) {
      Boundary b;
      if (!next_boundary(pos, b)) break;  // the rest of the part is one event
      write_brackets(data, b);
      parse(pos, b);
      pos = b.next;
    }
    if (!parser_.error().failed) parse(pos, part_.end);
    part_.error = parser_.error();
    part_.parse_ns = parser_.parse_ns();
    part_.on_demand_chunks = parser_.on_demand_chunks();
  }

 private:
  // The last boundary among the next chunk's bytes (more bytes for an event larger than a
  // chunk), not among the part's first bytes: the part before reads those as its padding.
  bool next_boundary(uint64_t pos, Boundary& b) const {
    const uint64_t left = part_.end.end - pos;
    for (uint64_t window = chunk_;; window = std::min(2 * window, left)) {
      if (last_boundary(map_.data(), pos, window, b) && b.end >= part_.begin + kPadding) {
        return true;
      }
      if (window == left) return false;
    }
  }

  // Parses [pos, b.end): in place, or copied out when its ']' would overwrite the next '['.
  void parse(uint64_t pos, const Boundary& b) {
    const char* data = map_.data();
    const size_t n = b.end - pos;
    if (b.shared()) {
      copy_.resize(n + 2 + kPadding);
      copy_[0] = '[';
      std::memcpy(copy_.data() + 1, data + pos, n);
      copy_[n + 1] = ']';
      std::fill_n(copy_.begin() + static_cast<long>(n + 2), kPadding, ' ');
      parser_.parse(copy_.data(), n + 2, pos);
    } else {
      parser_.parse(data + pos - 1, n + 2, pos);
    }
    map_.release(released_, b.end);
    released_ = std::max(released_, b.end);
  }

  MappedFile& map_;
  Part& part_;
  size_t chunk_;
  SequentialParser parser_;
  std::vector<char> copy_;
  uint64_t released_;
};

// Runs the parts on `threads` threads and joins them in file order as they finish: the
// thread that finishes part k while parts 0..k-1 are joined joins it (and the ones after it
// that are read), while the others read on, so the copies overlap the reading and a joined
// part's freed memory serves the parts still to be read.
class PartScheduler {
 public:
  PartScheduler(MappedFile& map, std::vector<Part>& parts, size_t chunk,
                const ParseOptions& options, TraceColumns& out)
      : map_(map), parts_(parts), chunk_(chunk), options_(options), out_(out) {
    // Part 0 goes straight into the trace and sizes it for the whole file; the others size
    // their own columns for their bytes.
    parts_[0].out = &out_;
    for (size_t i = 1; i < parts_.size(); ++i) parts_[i].out = &parts_[i].own;
  }

  void run(int threads, MappedEvents& result) {
    // The caller's thread reads part 0 first, then every thread takes the next part left.
    const size_t helpers = std::min(parts_.size(), static_cast<size_t>(std::max(threads, 1))) - 1;
    EventParser parser(options_);
    std::vector<std::thread> workers;
    // A thread that cannot start, or start its parser, leaves its parts to the others.
    auto helper = [this] {
      try {
        EventParser own(options_);
        take_parts(own);
      } catch (...) {
      }
    };
    try {
      for (size_t t = 0; t < helpers; ++t) workers.emplace_back(helper);
    } catch (const std::system_error&) {
    }
    read(0, parser);
    take_parts(parser);
    for (auto& w : workers) w.join();
    for (const Part& p : parts_) {
      result.parse_seconds += static_cast<double>(p.parse_ns) * 1e-9;
      result.on_demand_chunks += p.on_demand_chunks;
      if (!p.failed()) continue;
      if (p.failure) std::rethrow_exception(p.failure);
      result.error = p.error;
      break;
    }
    result.merge_seconds = static_cast<double>(join_ns_) * 1e-9;
  }

 private:
  void take_parts(EventParser& parser) {
    for (size_t i; !stopped_ && (i = next_part_.fetch_add(1)) < parts_.size();) read(i, parser);
  }

  void read(size_t i, EventParser& parser) {
    Part& p = parts_[i];
    try {
      const uint64_t origin = i == 0 ? 0 : p.begin;
      const uint64_t expected = i == 0 ? map_.size() : p.end.end - p.begin;
      PartReader(map_, p, chunk_, parser, origin, expected).run();
    } catch (...) {
      p.failure = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      p.done = true;
      if (joining_) return;  // the joining thread comes back for it
      joining_ = true;
    }
    join_ready();
  }

  // Joins the parts read, in file order, until one is not: a failed part ends the joins.
  void join_ready() {
    for (;;) {
      Part* p;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopped_ || next_join_ == parts_.size() || !parts_[next_join_].done) {
          joining_ = false;
          return;
        }
        p = &parts_[next_join_++];
      }
      if (p->failed()) {
        stopped_ = true;
      } else if (p->out != &out_) {
        const int64_t t0 = now_ns();
        try {
          rebase_chunk(p->own, out_.strings, static_cast<int64_t>(out_.events.size()));
          append_columns(out_, p->own, 1.1);
        } catch (...) {  // out of memory: raised on the caller's thread, after the others
          p->failure = std::current_exception();
          stopped_ = true;
        }
        join_ns_ += now_ns() - t0;
      }
    }
  }

  MappedFile& map_;
  std::vector<Part>& parts_;
  size_t chunk_;
  const ParseOptions& options_;
  TraceColumns& out_;
  std::atomic<size_t> next_part_{1};
  std::mutex mu_;
  size_t next_join_ = 0;              // the next part to join (part 0: nothing to copy)
  bool joining_ = false;              // a thread is joining parts
  std::atomic<bool> stopped_{false};  // a part failed: the parts after it are not needed
  int64_t join_ns_ = 0;               // only the joining thread adds to it
};

}  // namespace

MappedEvents read_mapped_events(MappedFile& map, uint64_t begin, int threads, size_t chunk,
                                const ParseOptions& options, TraceColumns& out) {
  MappedEvents result;
  result.rest = begin;
  char* data = map.data();
  const uint64_t size = map.size();
  // The parts end at the last boundary 32 KiB or more before the end of the file: what
  // follows is read on one thread, after the parts, so it is kept short (two 512 KiB chunks
  // were 4-5 % of a two-thread load's wall time); a header after the events longer than
  // that, with a `},{` of its own, costs a second, exact read.
  if (size < begin + 4 * chunk + kPadding) return result;
  const uint64_t tail = std::min<uint64_t>(chunk, kTailBytes);
  Boundary last;
  if (!boundary_before(data, size - 2 * tail - kPadding, begin + 2 * chunk, chunk, last)) {
    return result;
  }

  // Part 0 is read straight into the trace; the others are copied there when joined. So
  // with several threads part 0 takes most of one thread's share, and the rest is cut in
  // smaller parts, taken in turn by whichever thread is free, which evens out the threads'
  // work (events differ in cost along a file: GPU kernels and their arguments come after
  // the CPU side). Parts are at least four chunks long.
  const uint64_t span = last.end - begin;
  const uint64_t min_part = 4 * chunk;
  const uint64_t n_threads = static_cast<uint64_t>(std::max(threads, 1));
  std::vector<uint64_t> cuts;  // where each part after the first should start
  if (n_threads > 1 && span >= 2 * min_part) {
    const uint64_t first = std::max(min_part, span * 4 / (5 * n_threads));
    const uint64_t small = std::max(min_part, span / (kPartsPerThread * n_threads));
    for (uint64_t at = begin + first; at + min_part <= last.end; at += small) cuts.push_back(at);
  }
  std::vector<Part> parts(1);
  parts[0].begin = begin;
  for (const uint64_t target : cuts) {
    const uint64_t lowest = parts.back().begin + 2 * chunk;
    Boundary b;
    if (!boundary_before(data, target, lowest, chunk, b)) continue;
    if (b.end < lowest || b.next + 2 * chunk > last.end) continue;
    parts.back().end = b;
    parts.emplace_back().begin = b.next;
  }
  // The last part's '[' after it is never read: the rest comes from the file.
  parts.back().end = last;
  for (Part& p : parts) write_brackets(data, p.end);

  PartScheduler(map, parts, chunk, options, out).run(threads, result);
  result.parts = parts.size();
  result.rest = last.next;
  result.events_end = last.end;
  return result;
}

}  // namespace hta
