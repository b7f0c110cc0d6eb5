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

void MappedFile::release(uint64_t from, uint64_t to) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  if (to <= from) return;
  // Private pages (the brackets written) are discarded too; nothing reads them again.
  ::madvise(data_ + from, to - from, MADV_DONTNEED);
}

}  // namespace hta
