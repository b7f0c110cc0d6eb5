// Runs another ByteSource on its own thread, a few blocks ahead of the reader, so that
// decompression overlaps parsing. Buffers are reused; memory stays at a few blocks.
#pragma once
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "io/byte_source.h"

namespace hta {

class PrefetchSource : public ByteSource {
 public:
  explicit PrefetchSource(std::unique_ptr<ByteSource> inner, size_t block_size = 1 << 20,
                          size_t blocks = 3);
  ~PrefetchSource() override;
  size_t read(char* dst, size_t n) override;
  void rewind() override;
  uint64_t size_hint() const override { return inner_->size_hint(); }
  const char* encoding() const override { return inner_->encoding(); }

 private:
  struct Block {
    std::vector<char> data;
    size_t size = 0;
  };
  void start();
  void stop();
  void produce();

  std::unique_ptr<ByteSource> inner_;
  std::vector<Block> blocks_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t filled_ = 0;    // blocks produced so far
  size_t consumed_ = 0;  // blocks fully read so far
  size_t read_pos_ = 0;  // position inside the current block
  bool done_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace hta
