// Sequential byte sources: a plain file, a buffer in memory, and decompressors over either.
// The loader reads through this interface only, so it never holds a whole file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/mapped_file.h"

namespace hta {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into dst; returns 0 only at the end. Throws FormatError when the
  // input is corrupt.
  virtual size_t read(char* dst, size_t n) = 0;
  // Starts again from the first byte.
  virtual void rewind() = 0;
  // The number of bytes read() will produce, when known (0 = unknown).
  virtual uint64_t size_hint() const { return 0; }
  // Name of the encoding, for messages ("json", "gzip", "zstd").
  virtual const char* encoding() const { return "json"; }
  // A plain file offers its bytes mapped (see MappedFile); other sources give nullptr.
  virtual std::unique_ptr<MappedFile> map() { return nullptr; }
  // Continues reading at byte `offset` (sources that offer map() support this).
  virtual void seek(uint64_t offset) { (void)offset; }
  // Reads exactly n bytes at `offset` without moving the read position; false where the
  // source cannot (a stream) or the bytes are not there.
  virtual bool read_at(uint64_t offset, char* dst, size_t n) {
    (void)offset, (void)dst, (void)n;
    return false;
  }
};

// Opens a file; gzip and zstd are recognised by their magic bytes, not by the name.
// `prefetch`: decompress on a thread of its own, a few blocks ahead of the reader; else on
// the reader's thread, straight into the reader's buffer (one thread in all, no copy).
std::unique_ptr<ByteSource> open_file(const std::string& path, bool prefetch = true);
// Wraps bytes owned by the caller (which must outlive the source).
std::unique_ptr<ByteSource> open_memory(const char* data, size_t size, bool prefetch = true);

}  // namespace hta
