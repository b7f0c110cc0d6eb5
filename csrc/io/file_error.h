// A file that cannot be opened, read or mapped: errno and the path, so that the binding raises
// the OSError Python itself would (FileNotFoundError, PermissionError, ...) naming the file.
#pragma once
#include <string>
#include <system_error>

namespace hta {

class FileError : public std::system_error {
 public:
  // `path` may be empty (a mapping knows only its descriptor).
  FileError(int err, const std::string& path)
      : std::system_error(err, std::generic_category(), path), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace hta
