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

std::unique_ptr<ByteSource> decoded(std::unique_ptr<ByteSource> raw, Encoding enc, bool prefetch) {
  std::unique_ptr<ByteSource> out;
  switch (enc) {
    case Encoding::kGzip:
      out = make_gzip_source(std::move(raw));
      break;
    case Encoding::kZstd:
      out = make_zstd_source(std::move(raw));
      break;
    default:
      return raw;
  }
  if (!prefetch) return out;
  return std::make_unique<PrefetchSource>(std::move(out));
}

}  // namespace

std::unique_ptr<ByteSource> open_file(const std::string& path, bool prefetch) {
  auto raw = std::make_unique<FileSource>(path);
  unsigned char head[4] = {0, 0, 0, 0};
  const size_t n = raw->read(reinterpret_cast<char*>(head), sizeof head);
  raw->rewind();
  return decoded(std::move(raw), sniff(head, n), prefetch);
}

std::unique_ptr<ByteSource> open_memory(const char* data, size_t size, bool prefetch) {
  const Encoding enc = sniff(reinterpret_cast<const unsigned char*>(data), size);
  return decoded(std::make_unique<MemorySource>(data, size), enc, prefetch);
}

}  // namespace hta
