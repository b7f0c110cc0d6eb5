// Streaming decompressors over another ByteSource: gzip (ISA-L's igzip when built with it,
// else zlib; concatenated members are read through) and zstd (when built with libzstd).
#pragma once
#include <memory>
#include <vector>

#include "io/byte_source.h"

namespace hta {

std::unique_ptr<ByteSource> make_gzip_source(std::unique_ptr<ByteSource> compressed);
std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> compressed);

// Shared input handling: refills a buffer from the compressed source and tracks the
// compressed offset for error messages.
class CompressedInput {
 public:
  // 256 KiB of compressed input at a time: the buffer is resident for the whole load and
  // counts at its peak (with 1 MiB, flux_aiter's peak was 0.8 MB higher), while four times
  // the reads cost nothing measurable.
  explicit CompressedInput(std::unique_ptr<ByteSource> raw)
      : raw_(std::move(raw)), buf_(256 << 10) {}
  // Makes input available; false at the end of the compressed stream.
  bool fill();
  const unsigned char* data() const {
    return reinterpret_cast<const unsigned char*>(buf_.data()) + pos_;
  }
  size_t available() const { return end_ - pos_; }
  void consume(size_t n) {
    pos_ += n;
    consumed_ += n;
  }
  uint64_t offset() const { return consumed_; }
  void rewind();
  uint64_t compressed_size() const { return raw_->size_hint(); }
  // The size a gzip stream inflates to, from its trailer (ISIZE: the last member's size
  // modulo 2^32), for sizing the output ahead; 0 when the source cannot say. A hint only:
  // concatenated members and files past 4 GiB make it approximate, and a forged trailer
  // can claim at most deflate's largest ratio.
  uint64_t gzip_size_hint();

 private:
  std::unique_ptr<ByteSource> raw_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace hta
