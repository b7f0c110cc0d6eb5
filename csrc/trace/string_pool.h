// StringPool: interned strings stored back to back, addressed by dense int32 ids.
//
// The layout (one data buffer + int64 offsets) is Arrow's large_string layout, so the pool
// becomes the dictionary of every string column without a copy.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hta {

class StringPool {
 public:
  StringPool();

  // Returns the id of `s`, adding it if new.
  int32_t intern(std::string_view s);
  std::string_view at(int32_t id) const {
    return {data_.data() + offsets_[id], static_cast<size_t>(offsets_[id + 1] - offsets_[id])};
  }
  // Forgets every string, keeping the memory for reuse.
  void clear();
  int32_t size() const { return static_cast<int32_t>(offsets_.size() - 1); }

  std::vector<char>& data() { return data_; }
  std::vector<int64_t>& offsets() { return offsets_; }

 private:
  void grow();
  static uint64_t hash(std::string_view s);

  std::vector<char> data_;
  std::vector<int64_t> offsets_;
  // Open addressing; each slot holds id + 1 (0 = empty) so probing never compares strings
  // whose hashes differ.
  std::vector<int32_t> slots_;
  std::vector<uint32_t> slot_hash_;
};

}  // namespace hta
