#include "io/compressed_source.h"

#include <algorithm>
#include <string>

#include "io/format_error.h"

#ifdef HTA_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif
#ifdef HTA_HAVE_ZSTD
#include <zstd.h>
#endif

namespace hta {

bool CompressedInput::fill() {
  if (pos_ < end_) return true;
  pos_ = 0;
  end_ = raw_->read(buf_.data(), buf_.size());
  return end_ > 0;
}

uint64_t CompressedInput::gzip_size_hint() {
  const uint64_t compressed = raw_->size_hint();
  unsigned char tail[4];
  if (compressed < 18 || !raw_->read_at(compressed - 4, reinterpret_cast<char*>(tail), 4)) {
    return 0;
  }
  uint64_t size = uint64_t(tail[0]) | uint64_t(tail[1]) << 8 | uint64_t(tail[2]) << 16 |
                  uint64_t(tail[3]) << 24;
  // Text does not inflate to less than its compressed size: the wrapped-around part of
  // ISIZE is the smallest multiple of 2^32 that makes it so.
  while (size < compressed) size += uint64_t(1) << 32;
  constexpr uint64_t kMaxDeflateRatio = 1032;
  return std::min(size, compressed * kMaxDeflateRatio);
}

void CompressedInput::rewind() {
  raw_->rewind();
  pos_ = end_ = 0;
  consumed_ = 0;
}

namespace {

[[noreturn]] void cut_short(uint64_t offset, const char* format) {
  throw TruncatedInput(offset, std::string("the ") + format + " stream ends at compressed byte " +
                                   std::to_string(offset) +
                                   " before its end (the file was cut short)");
}

[[noreturn]] void corrupt(uint64_t offset, const std::string& what) {
  throw FormatError(
      ErrorCode::kCorruptStream, offset,
      "corrupt compressed stream at compressed byte " + std::to_string(offset) + ": " + what);
}

#ifdef HTA_HAVE_ISAL
class GzipSource : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<ByteSource> raw) : in_(std::move(raw)) {
    size_hint_ = in_.gzip_size_hint();
    reset();
  }
  const char* encoding() const override { return "gzip"; }
  uint64_t size_hint() const override { return size_hint_; }
  void rewind() override {
    in_.rewind();
    reset();
  }

  size_t read(char* dst, size_t n) override {
    size_t produced = 0;
    while (produced < n) {
      if (member_done_) {
        // Another gzip member may follow (concatenated files); anything else ends the stream.
        if (!in_.fill()) break;
        isal_inflate_reset(&state_);
        state_.crc_flag = ISAL_GZIP;
        member_done_ = false;
      }
      if (!in_.fill()) {
        if (produced == 0 && started_) cut_short(in_.offset(), "gzip");
        break;
      }
      started_ = true;
      state_.next_in = const_cast<uint8_t*>(in_.data());
      state_.avail_in = static_cast<uint32_t>(std::min<size_t>(in_.available(), UINT32_MAX));
      state_.next_out = reinterpret_cast<uint8_t*>(dst + produced);
      state_.avail_out = static_cast<uint32_t>(std::min<size_t>(n - produced, UINT32_MAX));
      const uint32_t before_in = state_.avail_in, before_out = state_.avail_out;
      const int ret = isal_inflate(&state_);
      in_.consume(before_in - state_.avail_in);
      produced += before_out - state_.avail_out;
      if (ret != ISAL_DECOMP_OK && ret != ISAL_END_INPUT) corrupt(in_.offset(), describe(ret));
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        member_done_ = true;
        started_ = false;
      } else if (before_in == state_.avail_in && before_out == state_.avail_out && !in_.fill()) {
        cut_short(in_.offset(), "gzip");
      }
    }
    return produced;
  }

 private:
  void reset() {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
    member_done_ = false;
    started_ = false;
  }
  static std::string describe(int ret) {
    switch (ret) {
      case ISAL_INVALID_BLOCK:
        return "invalid deflate block";
      case ISAL_INVALID_SYMBOL:
        return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK:
        return "invalid deflate distance";
      case ISAL_INVALID_WRAPPER:
        return "not a gzip header";
      case ISAL_UNSUPPORTED_METHOD:
        return "unsupported compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "checksum mismatch";
      default:
        return "inflate error " + std::to_string(ret);
    }
  }

  CompressedInput in_;
  uint64_t size_hint_ = 0;
  inflate_state state_;
  bool member_done_ = false;
  bool started_ = false;
};
#else
class GzipSource : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<ByteSource> raw) : in_(std::move(raw)) {
    size_hint_ = in_.gzip_size_hint();
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib init failed");
  }
  ~GzipSource() override { inflateEnd(&z_); }
  const char* encoding() const override { return "gzip"; }
  uint64_t size_hint() const override { return size_hint_; }
  void rewind() override {
    in_.rewind();
    inflateReset(&z_);
    member_done_ = false;
    started_ = false;
  }

  size_t read(char* dst, size_t n) override {
    size_t produced = 0;
    while (produced < n) {
      if (member_done_) {
        if (!in_.fill()) break;
        inflateReset(&z_);
        member_done_ = false;
      }
      if (!in_.fill()) {
        if (produced == 0 && started_) cut_short(in_.offset(), "gzip");
        break;
      }
      started_ = true;
      z_.next_in = const_cast<Bytef*>(in_.data());
      z_.avail_in = static_cast<uInt>(std::min<size_t>(in_.available(), UINT32_MAX));
      z_.next_out = reinterpret_cast<Bytef*>(dst + produced);
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - produced, UINT32_MAX));
      const uInt before_in = z_.avail_in, before_out = z_.avail_out;
      const int ret = inflate(&z_, Z_NO_FLUSH);
      in_.consume(before_in - z_.avail_in);
      produced += before_out - z_.avail_out;
      if (ret == Z_STREAM_END) {
        member_done_ = true;
        started_ = false;
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        corrupt(in_.offset(), z_.msg ? z_.msg : "inflate error");
      }
    }
    return produced;
  }

 private:
  CompressedInput in_;
  uint64_t size_hint_ = 0;
  z_stream z_{};
  bool member_done_ = false;
  bool started_ = false;
};
#endif

#ifdef HTA_HAVE_ZSTD
class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(std::unique_ptr<ByteSource> raw)
      : in_(std::move(raw)), z_(ZSTD_createDStream()) {}
  ~ZstdSource() override { ZSTD_freeDStream(z_); }
  const char* encoding() const override { return "zstd"; }
  void rewind() override {
    in_.rewind();
    ZSTD_DCtx_reset(z_, ZSTD_reset_session_only);
    frame_open_ = false;
  }
  size_t read(char* dst, size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos < n) {
      if (!in_.fill()) {
        if (frame_open_ && out.pos == 0) cut_short(in_.offset(), "zstd");
        break;
      }
      ZSTD_inBuffer in{in_.data(), in_.available(), 0};
      const size_t ret = ZSTD_decompressStream(z_, &out, &in);
      in_.consume(in.pos);
      if (ZSTD_isError(ret)) corrupt(in_.offset(), ZSTD_getErrorName(ret));
      frame_open_ = ret != 0;
    }
    return out.pos;
  }

 private:
  CompressedInput in_;
  ZSTD_DStream* z_;
  bool frame_open_ = false;
};
#endif

}  // namespace

std::unique_ptr<ByteSource> make_gzip_source(std::unique_ptr<ByteSource> compressed) {
  return std::make_unique<GzipSource>(std::move(compressed));
}

std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> compressed) {
#ifdef HTA_HAVE_ZSTD
  return std::make_unique<ZstdSource>(std::move(compressed));
#else
  (void)compressed;
  throw FormatError(ErrorCode::kUnsupported, std::nullopt,
                    "zstd-compressed input, but this build has no zstd support");
#endif
}

}  // namespace hta
