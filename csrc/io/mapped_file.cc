#include "io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "io/file_error.h"

namespace hta {
namespace {

// HTA_FAST_<name>=0 turns off a system feature that not every system has, so that the path a
// system without it takes runs (and is tested) on any system.
bool feature_enabled(const char* name) {
  const char* setting = std::getenv(name);
  return !(setting && std::strcmp(setting, "0") == 0);
}

}  // namespace

bool mapping_enabled() { return feature_enabled("HTA_FAST_MMAP"); }

MappedFile::MappedFile(int fd, uint64_t size)
    : size_(size), advise_(feature_enabled("HTA_FAST_MADVISE")) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) throw FileError(errno, "");
  data_ = static_cast<char*>(p);
  // A hint only: read ahead in bigger steps, where the system takes it.
#ifdef MADV_SEQUENTIAL
  if (advise_) ::madvise(data_, size_, MADV_SEQUENTIAL);
#endif
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::release(uint64_t from, uint64_t to) {
  if (!advise_) return;  // as on a system with no way to drop pages: they stay until unmapped
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  if (to <= from) return;
  // Private pages (the brackets written) are discarded too; nothing reads them again.
#if defined(__linux__)
  ::madvise(data_ + from, to - from, MADV_DONTNEED);
#elif defined(MADV_FREE)
  // macOS and the BSDs take MADV_DONTNEED as a hint that keeps private copies resident;
  // MADV_FREE lets them go.
  ::madvise(data_ + from, to - from, MADV_FREE);
#else
  (void)from, (void)to;  // no way to drop them here
#endif
}

}  // namespace hta
