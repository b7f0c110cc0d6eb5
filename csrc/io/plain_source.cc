#include "io/plain_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/file_error.h"

namespace hta {

FileSource::FileSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw FileError(errno, path);
  struct stat st;
  if (::fstat(fd_, &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

size_t FileSource::read(char* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd_, dst + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw FileError(errno, path_);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  pos_ += done;
  return done;
}

void FileSource::rewind() {
  if (::lseek(fd_, 0, SEEK_SET) < 0) throw FileError(errno, path_);
  pos_ = 0;
}

std::unique_ptr<MappedFile> FileSource::map() {
  if (size_ == 0 || !mapping_enabled()) return nullptr;
  try {
    return std::make_unique<MappedFile>(fd_, size_);
  } catch (const FileError&) {
    // A file system that cannot map files, or no address space left for this one: the
    // caller reads the file instead, which any readable file allows.
    return nullptr;
  }
}

void FileSource::seek(uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    throw FileError(errno, path_);
  }
  pos_ = offset;
}

bool FileSource::read_at(uint64_t offset, char* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool MemorySource::read_at(uint64_t offset, char* dst, size_t n) {
  if (offset > size_ || n > size_ - offset) return false;
  std::memcpy(dst, data_ + offset, n);
  return true;
}

size_t MemorySource::read(char* dst, size_t n) {
  n = std::min(n, size_ - pos_);
  std::memcpy(dst, data_ + pos_, n);
  pos_ += n;
  return n;
}

}  // namespace hta
