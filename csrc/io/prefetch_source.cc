#include "io/prefetch_source.h"

#include <algorithm>
#include <cstring>

namespace hta {

PrefetchSource::PrefetchSource(std::unique_ptr<ByteSource> inner, size_t block_size, size_t blocks)
    : inner_(std::move(inner)), blocks_(blocks) {
  for (auto& b : blocks_) b.data.resize(block_size);
  start();
}

PrefetchSource::~PrefetchSource() { stop(); }

void PrefetchSource::start() {
  filled_ = consumed_ = read_pos_ = 0;
  done_ = stopping_ = false;
  error_ = nullptr;
  thread_ = std::thread([this] { produce(); });
}

void PrefetchSource::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PrefetchSource::produce() {
  try {
    for (;;) {
      Block* block;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || filled_ - consumed_ < blocks_.size(); });
        if (stopping_) return;
        block = &blocks_[filled_ % blocks_.size()];
      }
      block->size = inner_->read(block->data.data(), block->data.size());
      std::lock_guard<std::mutex> lock(mu_);
      if (block->size == 0) {
        done_ = true;
        cv_.notify_all();
        return;
      }
      ++filled_;
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
    done_ = true;
    cv_.notify_all();
  }
}

size_t PrefetchSource::read(char* dst, size_t n) {
  size_t copied = 0;
  while (copied < n) {
    Block* block;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return consumed_ < filled_ || done_; });
      if (consumed_ == filled_) {
        if (error_ && copied == 0) std::rethrow_exception(error_);
        break;
      }
      block = &blocks_[consumed_ % blocks_.size()];
    }
    const size_t take = std::min(n - copied, block->size - read_pos_);
    std::memcpy(dst + copied, block->data.data() + read_pos_, take);
    copied += take;
    read_pos_ += take;
    if (read_pos_ == block->size) {
      std::lock_guard<std::mutex> lock(mu_);
      ++consumed_;
      read_pos_ = 0;
      cv_.notify_all();
    }
  }
  return copied;
}

void PrefetchSource::rewind() {
  stop();
  inner_->rewind();
  start();
}

}  // namespace hta
