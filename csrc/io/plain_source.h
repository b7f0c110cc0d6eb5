// Uncompressed sources: a file read with read(2) into the caller's buffer, or mapped for
// parsing in place; and a caller-owned buffer.
#pragma once
#include <string>

#include "io/byte_source.h"

namespace hta {

class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path);
  ~FileSource() override;
  size_t read(char* dst, size_t n) override;
  void rewind() override;
  uint64_t size_hint() const override { return size_; }
  std::unique_ptr<MappedFile> map() override;
  void seek(uint64_t offset) override;
  bool read_at(uint64_t offset, char* dst, size_t n) override;

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  std::string path_;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const char* data, size_t size) : data_(data), size_(size) {}
  size_t read(char* dst, size_t n) override;
  void rewind() override { pos_ = 0; }
  uint64_t size_hint() const override { return size_; }
  bool read_at(uint64_t offset, char* dst, size_t n) override;

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace hta
