#include "io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "io/file_error.h"

namespace hta {

MappedFile::MappedFile(int fd, uint64_t size) : size_(size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) throw FileError(errno, "");
  data_ = static_cast<char*>(p);
  ::madvise(data_, size_, MADV_SEQUENTIAL);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

namespace {
uint64_t page_size() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

void MappedFile::release_before(uint64_t end) {
  const uint64_t page = page_size();
  end = end / page * page;
  if (end < released_ + kWindow && end < size_ / page * page) return;
  if (end <= released_) return;
  // Private pages (the brackets written) are discarded too; nothing reads them again.
  ::madvise(data_ + released_, end - released_, MADV_DONTNEED);
  released_ = end;
}

}  // namespace hta

namespace hta {

void MappedFile::map_ahead(uint64_t end) {
  if (end <= mapped_ || mapped_ >= size_) return;
  const uint64_t page = page_size();
  const uint64_t from = mapped_ / page * page;
  const uint64_t to = std::min(size_, end + kWindow);
#ifdef MADV_POPULATE_READ
  // Linux 5.14 on; before it (EINVAL) the pages fault in as they are read, as they would.
  ::madvise(data_ + from, to - from, MADV_POPULATE_READ);
#endif
  mapped_ = to;
}

}  // namespace hta
