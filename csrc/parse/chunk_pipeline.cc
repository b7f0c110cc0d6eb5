#include "parse/chunk_pipeline.h"

#include <algorithm>

namespace hta {

ChunkPipeline::ChunkPipeline(int threads, const ParseOptions& options, TraceColumns& out)
    : options_(options), out_(out), max_in_flight_(static_cast<size_t>(std::max(threads, 1)) + 1) {
  if (threads <= 1) {
    inline_parser_ = std::make_unique<EventParser>(options_);
    return;
  }
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ChunkPipeline::~ChunkPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

std::vector<char> ChunkPipeline::take_buffer(size_t capacity) {
  std::vector<char> buf;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Merge what is ready, then wait until a buffer may be reused.
    while (jobs_.size() >= max_in_flight_) {
      lock.unlock();
      merge_ready(false);
      lock.lock();
      if (jobs_.size() >= max_in_flight_) cv_.wait(lock, [&] { return jobs_.front()->done; });
    }
    if (!free_buffers_.empty()) {
      buf = std::move(free_buffers_.back());
      free_buffers_.pop_back();
    }
  }
  buf.resize(capacity + simdjson::SIMDJSON_PADDING);
  return buf;
}

void ChunkPipeline::submit(std::vector<char> buf, size_t len, uint64_t file_offset) {
  auto job = std::make_unique<Job>();
  job->buf = std::move(buf);
  job->len = len;
  job->offset = file_offset;
  std::fill(job->buf.begin() + static_cast<long>(len), job->buf.begin() + static_cast<long>(len) + simdjson::SIMDJSON_PADDING, ' ');
  if (inline_parser_) {
    job->error = inline_parser_->parse(job->buf.data(), len, file_offset, job->columns);
    job->done = true;
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    cv_.notify_all();
  }
  merge_ready(false);
}

void ChunkPipeline::work() {
  EventParser parser(options_);
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || next_to_parse_ < jobs_.size(); });
      if (stopping_) return;
      job = jobs_[next_to_parse_++].get();
    }
    ChunkError err = parser.parse(job->buf.data(), job->len, job->offset, job->columns);
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->error = std::move(err);
      job->done = true;
    }
    cv_.notify_all();
  }
}

void ChunkPipeline::merge_ready(bool wait_all) {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (jobs_.empty()) return;
      if (!jobs_.front()->done) {
        if (!wait_all) return;
        cv_.wait(lock, [&] { return jobs_.front()->done; });
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (next_to_parse_ > 0) --next_to_parse_;
    }
    if (!error_.failed) {
      if (job->error.failed) {
        error_ = job->error;
      } else {
        append_chunk(out_, job->columns);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    free_buffers_.push_back(std::move(job->buf));
    cv_.notify_all();
  }
}

const ChunkError& ChunkPipeline::finish() {
  merge_ready(true);
  return error_;
}

}  // namespace hta
