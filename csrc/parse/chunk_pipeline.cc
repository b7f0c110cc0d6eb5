#include "parse/chunk_pipeline.h"

#include <algorithm>

#include "parse/stage_clock.h"

namespace hta {

ChunkPipeline::ChunkPipeline(int threads, const ParseOptions& options, TraceColumns& out,
                             uint64_t expected_bytes)
    : options_(options),
      out_(out),
      expected_bytes_(expected_bytes),
      max_in_flight_(static_cast<size_t>(std::max(threads, 1)) + 1) {
  if (threads <= 1) {
    inline_event_parser_ = std::make_unique<EventParser>(options_);
    inline_parser_ =
        std::make_unique<SequentialParser>(*inline_event_parser_, out_, 0, expected_bytes_);
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

std::unique_ptr<ChunkPipeline::Job> ChunkPipeline::next_job() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Merge what is ready, then wait until a chunk may be reused.
    while (jobs_.size() >= max_in_flight_) {
      lock.unlock();
      merge_ready(false);
      lock.lock();
      if (jobs_.size() >= max_in_flight_) cv_.wait(lock, [&] { return jobs_.front()->done; });
    }
    if (!free_jobs_.empty()) {
      std::unique_ptr<Job> job = std::move(free_jobs_.back());
      free_jobs_.pop_back();
      return job;
    }
  }
  return std::make_unique<Job>();
}

std::vector<char> ChunkPipeline::take_buffer(size_t capacity) {
  pending_ = next_job();
  std::vector<char> buf = std::move(pending_->buf);
  buf.resize(capacity + simdjson::SIMDJSON_PADDING);
  return buf;
}

void ChunkPipeline::submit(std::vector<char> buf, size_t len, uint64_t file_offset) {
  std::unique_ptr<Job> job = std::move(pending_);
  if (!job) job = std::make_unique<Job>();
  job->buf = std::move(buf);
  std::fill_n(job->buf.begin() + static_cast<long>(len), simdjson::SIMDJSON_PADDING, ' ');
  enqueue(std::move(job), len, file_offset);
}

void ChunkPipeline::enqueue(std::unique_ptr<Job> job, size_t len, uint64_t file_offset) {
  job->len = len;
  job->offset = file_offset;
  job->done = false;
  job->parsed = false;
  job->error = ChunkError{};
  if (inline_parser_) {
    // Straight into the trace: no merge. After a failure nothing more is read.
    job->seq = submitted_++;
    error_ = inline_parser_->parse(job->buf.data(), len, file_offset);
    std::lock_guard<std::mutex> lock(mu_);
    job->columns.clear();
    free_jobs_.push_back(std::move(job));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job->seq = submitted_++;
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
    const int64_t t0 = now_ns();
    job->error = parser.parse(job->buf.data(), job->len, job->offset, job->columns);
    parse_ns_ += now_ns() - t0;
    if (job->error.on_demand) ++on_demand_chunks_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->parsed = true;
    }
    place_ready();
  }
}

ChunkPipeline::Job* ChunkPipeline::job_at(uint64_t seq) {
  if (jobs_.empty() || seq < jobs_.front()->seq) return nullptr;
  const uint64_t i = seq - jobs_.front()->seq;
  return i < jobs_.size() ? jobs_[i].get() : nullptr;
}

// Places parsed chunks whose turn has come, in file order. A worker that finds its chunk's
// turn not yet come goes back to parsing: whoever places the chunk before it places it too,
// so no thread waits for another to finish parsing.
void ChunkPipeline::place_ready() {
  for (;;) {
    Job* job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (placing_) return;  // the thread placing now comes back for the next turn
      job = job_at(rebase_turn_);
      if (!job || !job->parsed) return;
      placing_ = true;
    }
    const int64_t t0 = now_ns();
    // Only the placing thread touches the pool, the column sizes and rows_before_.
    std::shared_lock<std::shared_mutex> copying;
    std::vector<void*> places;
    if (job->error.failed) placing_stopped_ = true;
    if (!placing_stopped_) {
      rebase_chunk(job->columns, out_.strings, rows_before_);
      rows_before_ += static_cast<int64_t>(job->columns.events.size());
      if (!reserved_ || !fits(out_, job->columns)) {
        std::unique_lock<std::shared_mutex> growing(copying_);
        if (!reserved_) {
          reserved_ = true;
          reserve_for_input(out_, job->columns, job->len, expected_bytes_);
        }
        reserve_for(out_, job->columns, 1.5);
      }
      copying = std::shared_lock<std::shared_mutex>(copying_);
      places = extend_columns(out_, job->columns);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++rebase_turn_;
      placing_ = false;
    }
    // The next chunk may be placed while this one is copied.
    if (!places.empty()) copy_columns(places, job->columns);
    copying = {};
    merge_ns_ += now_ns() - t0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->done = true;
    }
    cv_.notify_all();
  }
}

void ChunkPipeline::merge(Job& job) {
  if (error_.failed) return;
  if (job.error.failed) {
    error_ = job.error;
    return;
  }
  // The worker has placed the columns already; what is left is the counts.
  out_.stats.merge(job.columns.stats);
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
    merge(*job);
    job->columns.clear();
    std::lock_guard<std::mutex> lock(mu_);
    free_jobs_.push_back(std::move(job));
    cv_.notify_all();
  }
}

double ChunkPipeline::parse_seconds() const {
  const int64_t ns = parse_ns_ + (inline_parser_ ? inline_parser_->parse_ns() : 0);
  return static_cast<double>(ns) * 1e-9;
}

uint64_t ChunkPipeline::on_demand_chunks() const {
  return on_demand_chunks_ + (inline_parser_ ? inline_parser_->on_demand_chunks() : 0);
}

const ChunkError& ChunkPipeline::finish() {
  merge_ready(true);
  return error_;
}

}  // namespace hta
