// Parses chunks of events on worker threads and appends their columns to one TraceColumns
// in file order. At most `threads + 1` chunk buffers exist at once, so memory stays at a
// few chunks whatever the file size.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "parse/event_parser.h"

namespace hta {

class ChunkPipeline {
 public:
  ChunkPipeline(int threads, const ParseOptions& options, TraceColumns& out);
  ~ChunkPipeline();

  // A buffer for the next chunk, with room for `capacity` bytes plus simdjson's padding.
  std::vector<char> take_buffer(size_t capacity);
  // Queues buf[0..len) ("[" + events + "]") for parsing; text[1] is at `file_offset`.
  void submit(std::vector<char> buf, size_t len, uint64_t file_offset);
  // The first failed chunk so far, in file order (merging stops there).
  const ChunkError& error() const { return error_; }
  // Waits for every chunk and merges it; returns the first error in file order.
  const ChunkError& finish();

 private:
  struct Job {
    std::vector<char> buf;
    size_t len = 0;
    uint64_t offset = 0;
    TraceColumns columns;
    ChunkError error;
    bool done = false;
  };
  void work();
  void merge_ready(bool wait_all);

  ParseOptions options_;
  TraceColumns& out_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> jobs_;  // in file order; front is the next to merge
  size_t next_to_parse_ = 0;               // index into jobs_ of the next unclaimed job
  std::vector<std::vector<char>> free_buffers_;
  size_t max_in_flight_;
  bool stopping_ = false;
  ChunkError error_;
  std::unique_ptr<EventParser> inline_parser_;  // threads == 1: parse on the caller's thread
};

}  // namespace hta
