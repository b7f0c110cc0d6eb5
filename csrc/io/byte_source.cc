#include "io/byte_source.h"

#include <cstring>

#include "io/compressed_source.h"
#include "io/plain_source.h"
#include "io/prefetch_source.h"

namespace hta {
namespace {

enum class Encoding { kPlain, kGzip, kZstd };

Encoding sniff(const unsigned char* head, size_t n) {
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Encoding::kGzip;
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) {
    return Encoding::kZstd;
  }
  return Encoding::kPlain;
}

// Decompression runs on its own thread, ahead of the parser.
std::unique_ptr<ByteSource> decoded(std::unique_ptr<ByteSource> raw, Encoding enc) {
  switch (enc) {
    case Encoding::kGzip:
      return std::make_unique<PrefetchSource>(make_gzip_source(std::move(raw)));
    case Encoding::kZstd:
      return std::make_unique<PrefetchSource>(make_zstd_source(std::move(raw)));
    default:
      return raw;
  }
}

}  // namespace

std::unique_ptr<ByteSource> open_file(const std::string& path) {
  auto raw = std::make_unique<FileSource>(path);
  unsigned char head[4] = {0, 0, 0, 0};
  const size_t n = raw->read(reinterpret_cast<char*>(head), sizeof head);
  raw->rewind();
  return decoded(std::move(raw), sniff(head, n));
}

std::unique_ptr<ByteSource> open_memory(const char* data, size_t size) {
  const Encoding enc = sniff(reinterpret_cast<const unsigned char*>(data), size);
  return decoded(std::make_unique<MemorySource>(data, size), enc);
}

}  // namespace hta
