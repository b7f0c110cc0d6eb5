// A plain file mapped privately and writable, so the parser can work on its bytes in place:
// the loader writes the '[' and ']' that make a run of events one JSON document into bytes
// between events (copy-on-write: the file itself never changes). Parsed pages are dropped as
// the loader moves on, so the mapping does not grow the process by the file's size.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hta {

// Whether plain files are mapped at all. HTA_FAST_MMAP=0 reads them with read(2) instead,
// the way a file system that cannot map them (some network and FUSE mounts) is read: for
// comparing the two, and as a way out should mapping misbehave somewhere.
bool mapping_enabled();

class MappedFile {
 public:
  // Maps `size` bytes of an open file descriptor; throws FileError on failure.
  MappedFile(int fd, uint64_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Drops the whole pages inside [from, to): they have been parsed. Threads may release
  // disjoint ranges at once. Where the system cannot drop pages (or HTA_FAST_MADVISE=0, which
  // also leaves out the read-ahead hint), they stay resident until the mapping is closed.
  void release(uint64_t from, uint64_t to);

 private:
  char* data_ = nullptr;
  uint64_t size_ = 0;
  bool advise_ = true;
};

}  // namespace hta
