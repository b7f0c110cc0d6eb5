// Parses chunks of events on worker threads and appends their columns to one TraceColumns
// in file order. At most `threads + 1` chunks exist at once, and their buffers and column
// vectors are reused, so memory stays at a few chunks whatever the file size.
//
// Workers also place chunks in the trace: in turns, in file order, a chunk is rebased
// (strings into the trace's pool, argument rows shifted to the trace's numbering) and claims
// its rows at the end of every column; then its columns are copied there while the next
// chunk takes its turn. String ids and rows so do not depend on thread timing, and the
// caller's thread only reads the file. With one thread, chunks are parsed on the caller's
// thread straight into the trace's columns.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "parse/event_parser.h"
#include "parse/sequential_parser.h"

namespace hta {

class ChunkPipeline {
 public:
  // `expected_bytes`: the size of the JSON when known (0 if not), used to size the output.
  ChunkPipeline(int threads, const ParseOptions& options, TraceColumns& out,
                uint64_t expected_bytes);
  ~ChunkPipeline();

  // A buffer for the next chunk, with room for `capacity` bytes plus simdjson's padding.
  std::vector<char> take_buffer(size_t capacity);
  // Queues buf[0..len) ("[" + events + "]") for parsing; text[1] is at `file_offset`.
  void submit(std::vector<char> buf, size_t len, uint64_t file_offset);
  // The first failed chunk so far, in file order (merging stops there).
  const ChunkError& error() const { return error_; }
  // Waits for every chunk and merges it; returns the first error in file order.
  const ChunkError& finish();
  // Seconds spent parsing (summed over threads) and merging chunk columns.
  double parse_seconds() const;
  double merge_seconds() const { return static_cast<double>(merge_ns_) * 1e-9; }
  // Chunks the On-Demand reader read (partly): where the walker stopped, or all when it is off.
  uint64_t on_demand_chunks() const;

 private:
  struct Job {
    uint64_t seq = 0;  // position in the file, counting chunks
    std::vector<char> buf;
    size_t len = 0;
    uint64_t offset = 0;
    TraceColumns columns;
    ChunkError error;
    bool parsed = false;  // parsed, waiting for its turn to be placed
    bool done = false;    // placed in the trace (or failed): ready to merge
  };
  std::unique_ptr<Job> next_job();
  void enqueue(std::unique_ptr<Job> job, size_t len, uint64_t file_offset);
  void work();
  Job* job_at(uint64_t seq);
  void place_ready();
  void merge_ready(bool wait_all);
  void merge(Job& job);

  ParseOptions options_;
  TraceColumns& out_;
  uint64_t expected_bytes_;
  bool reserved_ = false;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> jobs_;  // in file order; front is the next to merge
  size_t next_to_parse_ = 0;               // index into jobs_ of the next unclaimed job
  std::vector<std::unique_ptr<Job>> free_jobs_;
  std::unique_ptr<Job> pending_;  // handed out by take_buffer, back in submit
  size_t max_in_flight_;
  bool stopping_ = false;
  ChunkError error_;
  std::atomic<int64_t> parse_ns_{0};
  std::atomic<uint64_t> on_demand_chunks_{0};
  std::atomic<int64_t> merge_ns_{0};  // rebasing (workers) and appending
  // threads == 1: chunks are parsed on the caller's thread.
  std::unique_ptr<EventParser> inline_event_parser_;
  std::unique_ptr<SequentialParser> inline_parser_;
  uint64_t submitted_ = 0;        // chunks submitted so far (the next chunk's seq)
  uint64_t rebase_turn_ = 0;      // seq of the chunk whose turn it is to rebase
  int64_t rows_before_ = 0;       // events in the chunks placed so far
  bool placing_stopped_ = false;  // a chunk failed: later chunks are not placed
  bool placing_ = false;          // a thread is placing the chunk whose turn it is
  std::shared_mutex copying_;     // shared while chunks copy into out_; unique to grow out_
};

}  // namespace hta
